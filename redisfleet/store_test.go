package redisfleet_test

import (
	"bufio"
	"bytes"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// requireRedis is the environment variable that turns a missing
// redis-server from a skip into a failure, as CI sets it.
const requireRedis = "RETRYHTTP_REQUIRE_REDIS"

// redisServer is a real redis-server on a loopback port, started by a
// test and stopped at its end. It can be stopped and started again on
// the same port, with no data kept (no RDB, no AOF).
type redisServer struct {
	path string
	dir  string
	port int
	addr string
	conf string   // a configuration file, the first argument; "" for none
	args []string // more arguments, after the defaults
	bus  int      // a second free port, for a cluster's bus

	cmd  *exec.Cmd
	out  *bytes.Buffer
	done chan struct{} // closed when cmd has exited
}

// startRedis starts a redis-server for the test, or skips the test when
// there is none in PATH (fails it when RETRYHTTP_REQUIRE_REDIS=1).
func startRedis(t testing.TB) *redisServer {
	t.Helper()
	return startRedisWith(t, "")
}

// redisPath returns the path of redis-server, or skips the test when there
// is none in PATH (fails it when RETRYHTTP_REQUIRE_REDIS=1).
func redisPath(t testing.TB) string {
	t.Helper()
	path, err := exec.LookPath("redis-server")
	if err != nil {
		msg := "redis-server is not in PATH; install it (apt-get install -y redis-server) to run the tests against a real store"
		if os.Getenv(requireRedis) == "1" {
			t.Fatalf("%s (%s=1 requires it)", msg, requireRedis)
		}
		t.Skip(msg)
	}
	return path
}

// startRedisWith starts a redis-server as startRedis does, from the
// configuration conf, written to its directory, when conf is not "", and
// with args after the default arguments. "PORT" in conf and args stands
// for the server's port, "BUSPORT" for another free port.
func startRedisWith(t testing.TB, conf string, args ...string) *redisServer {
	t.Helper()
	s := &redisServer{path: redisPath(t), dir: t.TempDir()}
	var last error
	for range 3 { // a free port may be taken between the look and the start
		s.port = freePort(t)
		s.addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(s.port))
		s.bus = freePort(t)
		ports := strings.NewReplacer("BUSPORT", strconv.Itoa(s.bus), "PORT", strconv.Itoa(s.port))
		s.args = make([]string, len(args))
		for i, a := range args {
			s.args[i] = ports.Replace(a)
		}
		if conf != "" {
			s.conf = filepath.Join(s.dir, "redis.conf")
			if err := os.WriteFile(s.conf, []byte(ports.Replace(conf)), 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if last = s.Start(); last == nil {
			t.Cleanup(s.Stop)
			return s
		}
	}
	t.Fatalf("starting redis-server: %v", last)
	return nil
}

// freePort returns a loopback port that was free a moment ago.
func freePort(t testing.TB) int {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}

// Start starts the server on its port and waits until it answers PING.
func (s *redisServer) Start() error {
	s.out = new(bytes.Buffer)
	var args []string
	if s.conf != "" {
		args = append(args, s.conf)
	}
	args = append(args, "--port", strconv.Itoa(s.port), "--bind", "127.0.0.1",
		"--save", "", "--appendonly", "no", "--dir", s.dir)
	s.cmd = exec.Command(s.path, append(args, s.args...)...)
	s.cmd.Stdout, s.cmd.Stderr = s.out, s.out
	if err := s.cmd.Start(); err != nil {
		return err
	}
	s.done = make(chan struct{})
	go func() { _ = s.cmd.Wait(); close(s.done) }()
	deadline := time.Now().Add(10 * time.Second)
	for !ping(s.addr) {
		select {
		case <-s.done:
			s.cmd = nil
			return fmt.Errorf("redis-server exited: %s", s.out)
		default:
		}
		if time.Now().After(deadline) {
			s.Stop()
			return fmt.Errorf("redis-server did not answer PING within 10 s: %s", s.out)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// Stop stops the server, with SIGTERM and, past 10 s, SIGKILL, and waits
// for it to exit. A paused server is resumed first, to hear the SIGTERM.
func (s *redisServer) Stop() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Signal(syscall.SIGCONT)
	_ = s.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-s.done:
	case <-time.After(10 * time.Second):
		_ = s.cmd.Process.Kill()
		<-s.done
	}
	s.cmd = nil
}

// Kill kills the server with SIGKILL, as a crash does, and waits for it
// to exit.
func (s *redisServer) Kill() {
	if s.cmd == nil {
		return
	}
	_ = s.cmd.Process.Kill()
	<-s.done
	s.cmd = nil
}

// Pause stops the server with SIGSTOP: the kernel still accepts
// connections for it, and nothing answers them, as with a frozen store.
func (s *redisServer) Pause() { _ = s.cmd.Process.Signal(syscall.SIGSTOP) }

// Resume lets a paused server run again.
func (s *redisServer) Resume() { _ = s.cmd.Process.Signal(syscall.SIGCONT) }

// ping reports whether a store answers PING at addr, if only to ask for
// a password.
func ping(addr string) bool {
	c, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return false
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(time.Second))
	if _, err := io.WriteString(c, "PING\r\n"); err != nil {
		return false
	}
	line, err := bufio.NewReader(c).ReadString('\n')
	// A store that requires a password answers, refusing.
	return err == nil && (line == "+PONG\r\n" || strings.HasPrefix(line, "-NOAUTH"))
}

// slowProxy forwards loopback connections to a store, holding each
// chunk of the store's replies back for delay (a pipeline's replies
// arrive together, so each round trip takes delay longer), or, while
// frozen, holding them back until it thaws.
type slowProxy struct {
	ln     net.Listener
	target string
	delay  time.Duration

	mu       sync.Mutex // guards conns, accepted and thaw: the accept loop, the relays and the test share them
	conns    []net.Conn
	accepted int           // connections accepted so far
	thaw     chan struct{} // non-nil while frozen; closed to thaw
	closed   chan struct{}
	wg       sync.WaitGroup
}

// startProxy starts a slowProxy to target, closed at the end of the test.
func startProxy(t testing.TB, target string, delay time.Duration) *slowProxy {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &slowProxy{ln: ln, target: target, delay: delay, closed: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.Close)
	return p
}

// Addr is where clients connect.
func (p *slowProxy) Addr() string { return p.ln.Addr().String() }

func (p *slowProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, c, s)
		p.accepted++
		p.mu.Unlock()
		p.wg.Add(2)
		go func() { defer p.wg.Done(); _, _ = io.Copy(s, c); s.Close() }()
		go func() { defer p.wg.Done(); p.relay(c, s); c.Close() }()
	}
}

// relay copies the store's replies from s to the client c, late.
func (p *slowProxy) relay(c, s net.Conn) {
	buf := make([]byte, 64<<10)
	for {
		n, err := s.Read(buf)
		if n > 0 {
			if !p.wait() {
				return
			}
			if _, werr := c.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// wait holds a reply back for the delay and while frozen; it reports
// false once the proxy is closed.
func (p *slowProxy) wait() bool {
	t := time.NewTimer(p.delay)
	defer t.Stop()
	select {
	case <-t.C:
	case <-p.closed:
		return false
	}
	p.mu.Lock()
	thaw := p.thaw
	p.mu.Unlock()
	if thaw == nil {
		return true
	}
	select {
	case <-thaw:
		return true
	case <-p.closed:
		return false
	}
}

// Accepted returns the number of connections clients have opened.
func (p *slowProxy) Accepted() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.accepted
}

// Freeze stops the store's replies until Thaw.
func (p *slowProxy) Freeze() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw == nil {
		p.thaw = make(chan struct{})
	}
}

// Thaw lets the replies through again.
func (p *slowProxy) Thaw() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.thaw != nil {
		close(p.thaw)
		p.thaw = nil
	}
}

// Close closes the proxy and every connection through it, and waits
// for its goroutines.
func (p *slowProxy) Close() {
	select {
	case <-p.closed:
		return
	default:
	}
	close(p.closed)
	_ = p.ln.Close()
	p.mu.Lock()
	for _, c := range p.conns {
		_ = c.Close()
	}
	p.mu.Unlock()
	p.wg.Wait()
}

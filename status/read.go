package retryhttp

import (
	"cmp"
	"net"
	"slices"
	"strings"
	"time"
)

// Bounds of the status page, so that each answer stays small whatever
// the Transport holds.
const (
	maxStatusHosts = 100 // hosts listed; the rest are counted
	maxStatusHolds = 8   // holds listed per host
	maxStatusDials = 8   // addresses listed per host, and apart from hosts
	// maxStatusBody is what an answer stays under: past it, fewer hosts
	// are listed (see fit).
	maxStatusBody = 1 << 20
)

// statusPage is what the status page shows: the JSON answer as it is,
// and the data of the HTML one. Its shape is documented on StatusHandler.
type statusPage struct {
	Version     int             `json:"version"`
	Time        time.Time       `json:"time"`
	Used        bool            `json:"used"`
	PolicyError string          `json:"policyError,omitempty"`
	Dialer      bool            `json:"dialer"`
	Totals      statusCounters  `json:"totals"`
	Hosts       []statusHost    `json:"hosts"`
	MoreHosts   int             `json:"moreHosts"`
	OtherDials  []statusDial    `json:"otherDialBackoff"`
	MoreDials   int             `json:"moreOtherDialBackoff"`
	Failures    []statusFailure `json:"failures"`
	Failed      uint64          `json:"failuresTotal"`
}

type statusHost struct {
	Host        string          `json:"host"`
	Budget      *statusBudget   `json:"budget"`
	HedgeBudget float64         `json:"hedgeBudget"`
	Holds       []statusHold    `json:"holds"`
	MoreHolds   int             `json:"moreHolds"`
	Dials       []statusDial    `json:"dialBackoff"`
	MoreDials   int             `json:"moreDialBackoff"`
	Latency     *statusLatency  `json:"latency"`
	Counters    *statusCounters `json:"counters"`
	Failures    int             `json:"recentFailures"`
}

type statusBudget struct {
	Tokens   float64 `json:"tokens"`
	Capacity float64 `json:"capacity"`
	Allows   bool    `json:"allowsRetries"`
}

type statusHold struct {
	Rule   string    `json:"rule"`
	Status int       `json:"status"`
	Since  time.Time `json:"since"`
	Until  time.Time `json:"until"`
	Left   float64   `json:"remainingMs"`
}

type statusDial struct {
	Network  string    `json:"network"`
	Address  string    `json:"address"`
	Failures int       `json:"failures"`
	Until    time.Time `json:"until"`
	Left     float64   `json:"remainingMs"`
	Error    string    `json:"error"`
}

type statusLatency struct {
	Samples int     `json:"samples"`
	P50     float64 `json:"p50Ms"`
	P90     float64 `json:"p90Ms"`
	P99     float64 `json:"p99Ms"`
}

type statusCounters struct {
	Requests      uint64         `json:"requests"`
	Retries       uint64         `json:"retries"`
	RetriesFailed uint64         `json:"retriesFailed"`
	Transparent   uint64         `json:"transparentRetries"`
	Hedges        uint64         `json:"hedges"`
	HedgesWon     uint64         `json:"hedgesWon"`
	Refusals      statusRefusals `json:"refusals"`
	HoldsSet      uint64         `json:"holdsSet"`
	HoldWaits     uint64         `json:"holdWaits"`
	HoldWait      float64        `json:"holdWaitMs"`
}

type statusRefusals struct {
	Budget      uint64 `json:"budget"`
	Fleet       uint64 `json:"fleet"`
	HedgeBudget uint64 `json:"hedgeBudget"`
	Hold        uint64 `json:"hold"`
}

type statusFailure struct {
	Time     time.Time `json:"time"`
	Host     string    `json:"host"`
	Method   string    `json:"method"`
	Path     string    `json:"path"`
	Status   int       `json:"status"`
	Error    string    `json:"error"`
	Attempts int       `json:"attempts"`
}

// status reads t's state at now into a page. It reads and never writes:
// no host record is made, no latency ring, no first use.
func (t *Transport) status(now time.Time) *statusPage {
	p := &statusPage{Version: 1, Time: now.UTC(), Hosts: []statusHost{}, OtherDials: []statusDial{}, Failures: []statusFailure{}}
	st := t.st.Load()
	if st == nil {
		return p // never used: nothing to show, and nothing to build
	}
	p.Used, p.Dialer = true, st.dialer != nil
	if err := st.pol.Load().err; err != nil {
		p.PolicyError = clip(err.Error())
	}
	stats := t.Stats()
	p.Totals = countersOf(stats.Total)
	failures, n := st.failures.recent()
	p.Failed = n
	for _, f := range failures {
		p.Failures = append(p.Failures, statusFailure{Time: f.at.UTC(), Host: f.host, Method: f.method,
			Path: f.path, Status: f.status, Error: f.err, Attempts: f.attempts})
	}
	dials := st.dialIndex()
	ranked := st.rankHosts(now, stats.Hosts, failures, dials)
	for _, r := range ranked[:min(len(ranked), maxStatusHosts)] {
		p.Hosts = append(p.Hosts, st.hostStatus(r, now, stats.Hosts))
	}
	p.MoreHosts = max(len(ranked)-maxStatusHosts, 0)
	p.OtherDials, p.MoreDials = dialsOf(dials.unclaimed(), now)
	return p
}

// hostRank is what orders a host on the page: the most troubled first.
type hostRank struct {
	h        *host
	held     bool
	spent    bool // its retry budget refuses retries
	windows  int  // dial backoff windows open
	failures int  // among the recent failures
	failed   uint64
	used     int64 // milli-tokens of its retry budget used
	requests uint64
	dials    []dialState
}

// compare orders r before o when r is the more troubled: held, then
// with its retry budget spent, most dial windows open, most recent
// failures, most failed retries, most of its budget used, most
// requests; by name when all are equal, so that the page is stable.
func (r hostRank) compare(o hostRank) int {
	return cmp.Or(first(r.held, o.held), first(r.spent, o.spent), cmp.Compare(o.windows, r.windows),
		cmp.Compare(o.failures, r.failures), cmp.Compare(o.failed, r.failed), cmp.Compare(o.used, r.used),
		cmp.Compare(o.requests, r.requests), strings.Compare(r.h.name, o.h.name))
}

// first orders what has a flag before what has not.
func first(a, b bool) int {
	switch {
	case a == b:
		return 0
	case a:
		return -1
	}
	return 1
}

// rankHosts returns every host the table holds, ranked. Each costs a few
// atomic loads and map lookups; only the hosts listed are read further.
func (st *state) rankHosts(now time.Time, counts map[string]Counters, failures []failure, dials *dialIndex) []hostRank {
	recent := make(map[string]int, len(failures))
	for _, f := range failures {
		recent[f.host]++
	}
	capacity := int64(0)
	if l := st.hosts.limits.Load(); l != nil {
		capacity = l.maxMilli
	}
	var ranked []hostRank
	st.hosts.each(func(h *host) {
		c := counts[h.name]
		r := hostRank{h: h, held: h.holds.any(now), spent: !h.bucket.Allow(), failures: recent[h.name],
			failed: c.RetryAttemptsFailed, requests: c.Requests, dials: dials.claim(h.name)}
		r.used = max(capacity-h.bucket.tokens.Load(), 0)
		for _, d := range r.dials {
			if d.until.After(now) {
				r.windows++
			}
		}
		ranked = append(ranked, r)
	})
	slices.SortFunc(ranked, hostRank.compare)
	return ranked
}

// hostStatus reads what the page shows of one ranked host.
func (st *state) hostStatus(r hostRank, now time.Time, counts map[string]Counters) statusHost {
	h := r.h
	s := statusHost{Host: clip(h.name), HedgeBudget: h.hedges.hedges(), Holds: []statusHold{}, Dials: []statusDial{},
		Failures: r.failures}
	if l := st.hosts.limits.Load(); l != nil {
		s.Budget = &statusBudget{Tokens: h.bucket.Tokens(), Capacity: float64(l.maxMilli) / milliPerToken, Allows: h.bucket.Allow()}
	}
	holds := h.holds.inForce(now)
	slices.SortFunc(holds, func(a, b hold) int { return cmp.Or(b.until.Compare(a.until), strings.Compare(a.rule, b.rule)) })
	for _, hd := range holds[:min(len(holds), maxStatusHolds)] {
		s.Holds = append(s.Holds, statusHold{Rule: clip(hd.rule), Status: hd.status, Since: hd.since.UTC(),
			Until: hd.until.UTC(), Left: ms(hd.until.Sub(now))})
	}
	s.MoreHolds = max(len(holds)-maxStatusHolds, 0)
	if st.dialer != nil {
		s.Dials, s.MoreDials = dialsOf(r.dials, now)
	}
	s.Latency = latencyOf(h.latencies.Load()) // Load, not latency(): that would make one
	if c, ok := counts[h.name]; ok {          // else counted under "(other)", with others
		sc := countersOf(c)
		s.Counters = &sc
	}
	return s
}

// latencyOf reads the quantiles of l, nil when it is nil or empty.
func latencyOf(l *latencyRing) *statusLatency {
	if l == nil {
		return nil
	}
	var buf [latencySamples]int64
	s := l.sorted(buf[:0])
	if len(s) == 0 {
		return nil
	}
	q := func(q float64) float64 { return ms(time.Duration(s[quantileIndex(q, len(s))])) }
	return &statusLatency{Samples: len(s), P50: q(0.5), P90: q(0.9), P99: q(0.99)}
}

func countersOf(c Counters) statusCounters {
	return statusCounters{Requests: c.Requests, Retries: c.RetryAttempts, RetriesFailed: c.RetryAttemptsFailed,
		Transparent: c.TransparentRetries, Hedges: c.HedgesSent, HedgesWon: c.HedgesWon,
		Refusals: statusRefusals{Budget: c.BudgetRefusals, Fleet: c.FleetRefusals,
			HedgeBudget: c.HedgeBudgetRefusals, Hold: c.HoldRefusals},
		HoldsSet: c.HoldsSet, HoldWaits: c.HoldWaits, HoldWait: ms(c.HoldWaitTime)}
}

// ms is d in milliseconds, to the microsecond.
func ms(d time.Duration) float64 {
	return float64(d.Round(time.Microsecond)) / float64(time.Millisecond)
}

// dialIndex files the Dialer's addresses that have failed by what may
// name them, so that each host claims its own: "name:port" as net/http
// dials a URL's host, and the addresses its attempts were spread over.
type dialIndex struct {
	byAddr  map[string][]dialState // by address, lowercased
	spread  map[string][]string    // a host's addresses, as spread knows them
	claimed map[string]bool
}

func (st *state) dialIndex() *dialIndex {
	ix := &dialIndex{byAddr: map[string][]dialState{}, claimed: map[string]bool{}}
	if st.dialer == nil {
		return ix
	}
	for _, d := range st.dialer.backoffs() {
		a := strings.ToLower(d.addr)
		ix.byAddr[a] = append(ix.byAddr[a], d)
	}
	if st.spread != nil && len(ix.byAddr) > 0 {
		ix.spread = st.spread.addrsByHost()
	}
	return ix
}

// claim returns the addresses of host: host itself when it has a port,
// else host with the ports of http and https, and its spread addresses.
func (ix *dialIndex) claim(host string) []dialState {
	if len(ix.byAddr) == 0 {
		return nil
	}
	var out []dialState
	take := func(addr string) {
		if ds, ok := ix.byAddr[addr]; ok && !ix.claimed[addr] {
			ix.claimed[addr] = true
			out = append(out, ds...)
		}
	}
	if _, port, err := net.SplitHostPort(host); err == nil && port != "" {
		take(host)
	} else {
		take(host + ":80")
		take(host + ":443")
	}
	for _, a := range ix.spread[host] {
		take(strings.ToLower(a))
	}
	return out
}

// unclaimed returns the addresses no host claimed: those of hosts the
// table no longer holds, or of a proxy.
func (ix *dialIndex) unclaimed() []dialState {
	var out []dialState
	for a, ds := range ix.byAddr {
		if !ix.claimed[a] {
			out = append(out, ds...)
		}
	}
	return out
}

// dialsOf lists ds for the page, open windows first, the longest first,
// at most maxStatusDials of them, and counts the rest.
func dialsOf(ds []dialState, now time.Time) ([]statusDial, int) {
	slices.SortFunc(ds, func(a, b dialState) int {
		return cmp.Or(b.until.Compare(a.until), strings.Compare(a.addr, b.addr), strings.Compare(a.network, b.network))
	})
	out := []statusDial{}
	for _, d := range ds[:min(len(ds), maxStatusDials)] {
		s := statusDial{Network: d.network, Address: clip(d.addr), Failures: d.failures, Until: d.until.UTC(),
			Left: ms(max(d.until.Sub(now), 0))}
		if d.err != nil {
			s.Error = clip(RedactURLs(d.err.Error()))
		}
		out = append(out, s)
	}
	return out, max(len(ds)-maxStatusDials, 0)
}

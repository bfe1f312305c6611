package retryhttp_test

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/retryhttp/retryhttp/internal/snippets"
)

// known are the packages the snippets of the README and of docs/ name,
// by the name they use.
var known = map[string]string{
	"bytes": "bytes", "context": "context", "errors": "errors", "expvar": "expvar", "fmt": "fmt",
	"io": "io", "json": "encoding/json", "log": "log", "slog": "log/slog", "http": "net/http",
	"httptest": "net/http/httptest", "url": "net/url", "os": "os", "strings": "strings",
	"sync": "sync", "testing": "testing", "synctest": "testing/synctest", "time": "time",
	"retryhttp": "github.com/retryhttp/retryhttp", "policy": "github.com/retryhttp/retryhttp/policy",
	"retrytrace": "github.com/retryhttp/retryhttp/retrytrace", "status": "github.com/retryhttp/retryhttp/status",
	"dial": "github.com/retryhttp/retryhttp/dial", "rt": "github.com/retryhttp/retryhttp/retryhttptest",
	"retryhttptest": "github.com/retryhttp/retryhttp/retryhttptest",
	"retryotel":     "github.com/retryhttp/retryhttp/otel", "redisfleet": "github.com/retryhttp/retryhttp/redisfleet",
	"redis": "github.com/redis/go-redis/v9",
}

// Every Go snippet of the README and of the guides in docs/ compiles
// against the packages as they are.
func TestDocSnippetsCompile(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every snippet: not in -short")
	}
	files, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	var all []snippets.Snippet
	for _, f := range append([]string{"README.md"}, files...) {
		md, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		all = append(all, snippets.Extract(f, md)...)
	}
	if len(all) == 0 {
		t.Fatal("no snippet found: the test would prove nothing")
	}
	root, err := filepath.Abs(".")
	if err != nil {
		t.Fatal(err)
	}
	err = snippets.Build(t.TempDir(), "github.com/retryhttp/retryhttp", root,
		[]string{"github.com/retryhttp/retryhttp/otel => " + filepath.Join(root, "otel"),
			"github.com/retryhttp/retryhttp/redisfleet => " + filepath.Join(root, "redisfleet")},
		all, known)
	if err != nil {
		t.Fatal(err)
	}
}

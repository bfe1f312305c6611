package snippets

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestExtract(t *testing.T) {
	md := "# T\n\n```go\nx := 1\n```\n\ntext\n\n```sh\nls\n```\n\n```go\nfunc F() {}\n```\n"
	got := Extract("r.md", []byte(md))
	require.Len(t, got, 2)
	assert.Equal(t, Snippet{File: "r.md", Line: 3, Code: "x := 1\n"}, got[0])
	assert.Equal(t, 13, got[1].Line)
}

// A snippet becomes a program: statements in main, with a use of what
// they declare; declarations as they are; a file as it is; and imports
// for the packages named, unless it has its own.
func TestProgram(t *testing.T) {
	known := map[string]string{"http": "net/http", "rt": "github.com/x/retryhttptest", "time": "time"}
	for _, tc := range []struct {
		name, code string
		want       []string
	}{
		{"statements", "resp, err := http.Get(\"u\")\n",
			[]string{"import (\n\t\"net/http\"\n)", "func main() {", "_, _ = resp, err"}},
		{"declarations", "func F() time.Duration { return time.Second }\n",
			[]string{"\"time\"", "func F()", "func main() {}"}},
		{"a renamed import", "var s rt.Server\n", []string{"rt \"github.com/x/retryhttptest\""}},
		{"its own imports", "import \"fmt\"\n\nfmt.Println(1)\n", []string{"import \"fmt\"", "fmt.Println(1)"}},
		{"a file", "package main\n\nfunc main() {}\n", []string{"package main\n\nfunc main() {}"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Program(Snippet{File: "r.md", Line: 1, Code: tc.code}, known)
			require.NoError(t, err)
			for _, w := range tc.want {
				assert.True(t, strings.Contains(got, w), "got\n%s\nwant it to hold %q", got, w)
			}
		})
	}
	_, err := Program(Snippet{File: "r.md", Line: 7, Code: "func {"}, known)
	assert.ErrorContains(t, err, "r.md:7")
}

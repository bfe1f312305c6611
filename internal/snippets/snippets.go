// Package snippets checks that the Go snippets of a project's Markdown
// compile: each ```go block is made into a program, its imports found from
// the packages it names, and the programs are built together, in a
// scratch module that requires the project as it stands.
package snippets

import (
	"bufio"
	"bytes"
	"fmt"
	"go/ast"
	"go/format"
	"go/parser"
	"go/token"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Snippet is one ```go block of a Markdown file.
type Snippet struct {
	File string // the Markdown file
	Line int    // the line of its opening fence
	Code string
}

// Extract returns the ```go blocks of the Markdown in md, read from file.
func Extract(file string, md []byte) []Snippet {
	var out []Snippet
	var cur *Snippet
	var code strings.Builder
	sc := bufio.NewScanner(bytes.NewReader(md))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		trimmed := strings.TrimSpace(line)
		switch {
		case cur == nil && trimmed == "```go":
			cur = &Snippet{File: file, Line: n}
			code.Reset()
		case cur != nil && trimmed == "```":
			cur.Code = code.String()
			out = append(out, *cur)
			cur = nil
		case cur != nil:
			code.WriteString(line)
			code.WriteByte('\n')
		}
	}
	return out
}

// Program makes s a file of package main: as it is, when it is one; its
// declarations with an empty main, when it is a list of them; else its
// statements as main's body. Imports are added for the packages it names
// from known, a map of package name to import path, unless it imports
// its own.
func Program(s Snippet, known map[string]string) (string, error) {
	code := s.Code
	if strings.HasPrefix(strings.TrimSpace(code), "package ") {
		return code, nil
	}
	imports, code := leadingImports(code)
	var src string
	if _, err := parser.ParseFile(token.NewFileSet(), "", "package main\n"+imports+code, 0); err == nil {
		src = "package main\n\n" + imports + code
		if !strings.Contains(code, "func main()") {
			src += "\nfunc main() {}\n"
		}
	} else {
		src = "package main\n\n" + imports + "func main() {\n" + code + used(code) + "\n}\n"
	}
	f, err := parser.ParseFile(token.NewFileSet(), "", src, parser.ImportsOnly)
	if err != nil {
		return "", fmt.Errorf("%s:%d: %w", s.File, s.Line, err)
	}
	if len(f.Imports) == 0 {
		src, err = withImports(src, known)
		if err != nil {
			return "", fmt.Errorf("%s:%d: %w", s.File, s.Line, err)
		}
	}
	out, err := format.Source([]byte(src))
	if err != nil {
		return "", fmt.Errorf("%s:%d: %w", s.File, s.Line, err)
	}
	return string(out), nil
}

// used returns a statement that uses each variable the statements of code
// declare at their top level, so that a fragment that shows how a value
// is made compiles without showing its use: "_, _ = resp, err".
func used(code string) string {
	f, err := parser.ParseFile(token.NewFileSet(), "", "package main\nfunc main() {\n"+code+"\n}\n", 0)
	if err != nil {
		return ""
	}
	var names []string
	for _, st := range f.Decls[0].(*ast.FuncDecl).Body.List {
		switch st := st.(type) {
		case *ast.AssignStmt:
			if st.Tok == token.DEFINE {
				for _, e := range st.Lhs {
					if id, ok := e.(*ast.Ident); ok && id.Name != "_" {
						names = append(names, id.Name)
					}
				}
			}
		case *ast.DeclStmt:
			if g, ok := st.Decl.(*ast.GenDecl); ok && g.Tok == token.VAR {
				for _, spec := range g.Specs {
					for _, id := range spec.(*ast.ValueSpec).Names {
						if id.Name != "_" {
							names = append(names, id.Name)
						}
					}
				}
			}
		}
	}
	if len(names) == 0 {
		return ""
	}
	blanks := strings.TrimSuffix(strings.Repeat("_, ", len(names)), ", ")
	return "\n" + blanks + " = " + strings.Join(names, ", ")
}

// leadingImports splits the import declarations that code starts with,
// if any, from the rest.
func leadingImports(code string) (imports, rest string) {
	lines := strings.SplitAfter(code, "\n")
	i, open := 0, false
	for ; i < len(lines); i++ {
		t := strings.TrimSpace(lines[i])
		switch {
		case open:
			open = t != ")"
		case t == "":
		case strings.HasPrefix(t, "import ("):
			open = true
		case strings.HasPrefix(t, "import "):
		default:
			return strings.Join(lines[:i], ""), strings.Join(lines[i:], "")
		}
	}
	return code, ""
}

// withImports adds to src, a file without imports, an import of each
// package of known it names and does not declare.
func withImports(src string, known map[string]string) (string, error) {
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, 0)
	if err != nil {
		return "", err
	}
	declared := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.Ident:
			if n.Obj != nil {
				declared[n.Name] = true
			}
		}
		return true
	})
	used := map[string]bool{}
	ast.Inspect(f, func(n ast.Node) bool {
		if sel, ok := n.(*ast.SelectorExpr); ok {
			if id, ok := sel.X.(*ast.Ident); ok && id.Obj == nil && !declared[id.Name] {
				if _, ok := known[id.Name]; ok {
					used[id.Name] = true
				}
			}
		}
		return true
	})
	var names []string
	for name := range used {
		names = append(names, name)
	}
	slices.Sort(names)
	var b strings.Builder
	b.WriteString("package main\n\nimport (\n")
	for _, name := range names {
		path := known[name]
		if filepath.Base(path) != name && !strings.HasSuffix(path, "/"+name) {
			fmt.Fprintf(&b, "\t%s %s\n", name, strconv.Quote(path))
			continue
		}
		fmt.Fprintf(&b, "\t%s\n", strconv.Quote(path))
	}
	b.WriteString(")\n")
	return b.String() + strings.TrimPrefix(src, "package main\n"), nil
}

// Build builds every snippet as a program of its own, in a scratch module
// at dir that requires module at root (its path on disk) and whatever
// else require lists ("path version" or "path => dir" for a replace). It
// returns the compiler's complaints, each naming the snippet.
func Build(dir, module, root string, require []string, snippets []Snippet, known map[string]string) error {
	var mod strings.Builder
	fmt.Fprintf(&mod, "module snippets\n\ngo 1.25\n\nrequire %s v0.0.0\n\nreplace %s => %s\n", module, module, root)
	for _, r := range require {
		if p, d, ok := strings.Cut(r, " => "); ok {
			fmt.Fprintf(&mod, "require %s v0.0.0\nreplace %s => %s\n", p, p, d)
		} else {
			fmt.Fprintf(&mod, "require %s\n", r)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(mod.String()), 0o644); err != nil {
		return err
	}
	where := map[string]Snippet{}
	for i, s := range snippets {
		src, err := Program(s, known)
		if err != nil {
			return err
		}
		pkg := fmt.Sprintf("s%03d", i)
		where[pkg] = s
		if err := os.MkdirAll(filepath.Join(dir, pkg), 0o755); err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, pkg, "main.go"), []byte(src), 0o644); err != nil {
			return err
		}
	}
	tidy := exec.Command("go", "mod", "tidy")
	tidy.Dir = dir
	if out, err := tidy.CombinedOutput(); err != nil {
		return fmt.Errorf("go mod tidy: %v\n%s", err, out)
	}
	build := exec.Command("go", "vet", "./...")
	build.Dir = dir
	out, err := build.CombinedOutput()
	if err == nil {
		return nil
	}
	var b strings.Builder
	for _, line := range strings.Split(string(out), "\n") {
		for pkg, s := range where {
			if strings.Contains(line, pkg+"/") || strings.Contains(line, "/"+pkg) {
				line += fmt.Sprintf("   (snippet of %s:%d)", s.File, s.Line)
				break
			}
		}
		b.WriteString(line + "\n")
	}
	return fmt.Errorf("snippets do not build:\n%s", b.String())
}

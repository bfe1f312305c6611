package retryhttp_test

import (
	"go/ast"
	"go/parser"
	"go/scanner"
	"go/token"
	"os"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/retryhttp/retryhttp/internal/snippets"
)

// The AWS and Stripe rules the README shows are the rules Example_aws,
// Example_stripe, TestAWSRule and TestStripeRule run, token for token:
// a rule edited on one side only fails here.
func TestREADMERulesAreTheTestedOnes(t *testing.T) {
	md, err := os.ReadFile("README.md")
	require.NoError(t, err)
	var readme string
	for _, s := range snippets.Extract("README.md", md) {
		if strings.Contains(s.Code, "aws := policy.Rule{") {
			readme = s.Code
		}
	}
	require.NotEmpty(t, readme, "the README shows the AWS rule as aws := policy.Rule{...}")
	shown := literals(t, "package p\nfunc f() {\n"+readme+"\n}\n", func(n ast.Node) (string, ast.Expr) {
		if a, ok := n.(*ast.AssignStmt); ok && len(a.Lhs) == 1 && len(a.Rhs) == 1 {
			if id, ok := a.Lhs[0].(*ast.Ident); ok {
				return id.Name, a.Rhs[0]
			}
		}
		return "", nil
	})
	src, err := os.ReadFile("sdk_example_test.go")
	require.NoError(t, err)
	tested := literals(t, string(src), func(n ast.Node) (string, ast.Expr) {
		if f, ok := n.(*ast.FuncDecl); ok && len(f.Body.List) == 1 {
			if r, ok := f.Body.List[0].(*ast.ReturnStmt); ok && len(r.Results) == 1 {
				return strings.TrimSuffix(f.Name.Name, "Rule"), r.Results[0]
			}
		}
		return "", nil
	})
	for _, name := range []string{"aws", "stripe"} {
		require.NotEmpty(t, shown[name], "the README shows %s", name)
		require.NotEmpty(t, tested[name], "sdk_example_test.go has %sRule", name)
		require.Equal(t, tested[name], shown[name], "the README's %s rule differs from %sRule's", name, name)
	}
}

// literals returns the tokens of the expressions that pick finds in the
// Go source src, by the name pick gives them, comments left out.
func literals(t *testing.T, src string, pick func(ast.Node) (string, ast.Expr)) map[string][]string {
	t.Helper()
	fset := token.NewFileSet()
	f, err := parser.ParseFile(fset, "", src, 0)
	require.NoError(t, err)
	out := map[string][]string{}
	ast.Inspect(f, func(n ast.Node) bool {
		name, e := pick(n)
		if e == nil {
			return true
		}
		var s scanner.Scanner
		code := []byte(src[fset.Position(e.Pos()).Offset:fset.Position(e.End()).Offset])
		s.Init(fset.AddFile("", -1, len(code)), code, nil, 0)
		for {
			_, tok, lit := s.Scan()
			if tok == token.EOF {
				break
			}
			if tok != token.SEMICOLON || lit != "\n" {
				out[name] = append(out[name], tok.String()+lit)
			}
		}
		return false
	})
	return out
}

package api

import (
	"encoding/json"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// emittedCodes collects, from the api package's source, every error code
// it can send: the code* constants (which statusOf and every errf use) and
// any string literal given as an errf code or as the Code of a composite
// literal (errorDetail, termControl). It also reports, as bad, a code
// argument or Code field that is neither a literal nor a code* constant
// nor a variable (a code computed some other way, which this test could
// not see).
func emittedCodes(t *testing.T) (codes []string) {
	t.Helper()
	fset := token.NewFileSet()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	add := func(lit *ast.BasicLit) {
		if lit == nil || lit.Kind != token.STRING {
			return
		}
		if v, err := strconv.Unquote(lit.Value); err == nil && !seen[v] {
			seen[v] = true
			codes = append(codes, v)
		}
	}
	consts := map[string]bool{}
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(f, func(n ast.Node) bool {
			switch n := n.(type) {
			case *ast.ValueSpec:
				for i, id := range n.Names {
					if strings.HasPrefix(id.Name, "code") && i < len(n.Values) {
						if lit, ok := n.Values[i].(*ast.BasicLit); ok {
							consts[id.Name] = true
							add(lit)
						}
					}
				}
			case *ast.CallExpr:
				if fn, ok := n.Fun.(*ast.Ident); ok && fn.Name == "errf" && len(n.Args) > 1 {
					codeArg(t, fset, n.Args[1], add)
				}
			case *ast.KeyValueExpr:
				if k, ok := n.Key.(*ast.Ident); ok && k.Name == "Code" {
					codeArg(t, fset, n.Value, add)
				}
			}
			return true
		})
	}
	return codes
}

// codeArg adds a literal code; a constant or variable is fine (constants
// are collected where declared, variables come from statusOf).
func codeArg(t *testing.T, fset *token.FileSet, e ast.Expr, add func(*ast.BasicLit)) {
	switch e := e.(type) {
	case *ast.BasicLit:
		add(e)
	case *ast.Ident:
		if e.Name != "code" && !strings.HasPrefix(e.Name, "code") {
			t.Errorf("%s: error code from %s, which this test cannot follow: use a code* constant", fset.Position(e.Pos()), e.Name)
		}
	default:
		t.Errorf("%s: an error code computed in a way this test cannot follow", fset.Position(e.Pos()))
	}
}

// TestEveryErrorCodeIsDocumented: each code the api package can emit is in
// the enum of openapi.json's Error schema and in docs/API.md's table of
// codes, and the enum lists nothing the package never emits. A new code
// without documentation fails here.
func TestEveryErrorCodeIsDocumented(t *testing.T) {
	emitted := emittedCodes(t)
	for _, known := range []string{codeInvalid, codeMethodNotAllowed, "slow_consumer"} {
		if !slices.Contains(emitted, known) {
			t.Fatalf("the source scan missed %q: it finds %q", known, emitted)
		}
	}
	var doc struct {
		Components struct {
			Schemas struct {
				Error struct {
					Properties struct {
						Error struct {
							Properties struct {
								Code struct {
									Enum []string `json:"enum"`
								} `json:"code"`
							} `json:"properties"`
						} `json:"error"`
					} `json:"properties"`
				} `json:"Error"`
			} `json:"schemas"`
		} `json:"components"`
	}
	if err := json.Unmarshal(openAPIDoc, &doc); err != nil {
		t.Fatal(err)
	}
	enum := doc.Components.Schemas.Error.Properties.Error.Properties.Code.Enum
	slices.Sort(emitted)
	slices.Sort(enum)
	if d := cmp.Diff(emitted, enum); d != "" {
		t.Errorf("error codes (-emitted by the api package +Error.code enum of openapi.json):\n%s", d)
	}
	md, err := os.ReadFile("../../docs/API.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range emitted {
		if !strings.Contains(string(md), "\n| "+c+" |") {
			t.Errorf("docs/API.md's table of error codes has no row for %q", c)
		}
	}
}

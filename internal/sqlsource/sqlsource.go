// Package sqlsource reads a store package's Go source for the SQL it
// runs on the ledger's tables, so that the stores' plan tests take their
// list of statements from the code: a new query cannot skip the check.
// Only tests import it.
package sqlsource

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// OfTables matches SQL that reads or writes records or events.
var OfTables = regexp.MustCompile(`(?i)\b(FROM|UPDATE|INTO)\s+(records|events)\b`)

// Source is what Read found in a package's source.
type Source struct {
	// Holders are the constants, variables and functions that hold SQL
	// of records or events, each with the file it is in.
	Holders map[string]string
	// Literals are the SQL literals of records or events written inside
	// each function, unquoted.
	Literals map[string][]string
}

// Read parses the Go files of dir, tests left out, of every build (a
// statement of either driver's build counts).
func Read(dir string) (*Source, error) {
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		return nil, err
	}
	src := &Source{Holders: map[string]string{}, Literals: map[string][]string{}}
	fset := token.NewFileSet()
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			return nil, fmt.Errorf("sqlsource: %w", err)
		}
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if lits := literals(d); len(lits) > 0 {
					src.Holders[d.Name.Name] = name
					src.Literals[d.Name.Name] = lits
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						for i, v := range vs.Values {
							if len(literals(v)) > 0 {
								src.Holders[vs.Names[i].Name] = name
							}
						}
					}
				}
			}
		}
	}
	return src, nil
}

// literals are the SQL literals of records or events under n.
func literals(n ast.Node) []string {
	var out []string
	ast.Inspect(n, func(n ast.Node) bool {
		if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING && OfTables.MatchString(l.Value) {
			if v, err := strconv.Unquote(l.Value); err == nil {
				out = append(out, v)
			}
		}
		return true
	})
	return out
}

// CheckCovered fails t for every holder of SQL in dir that is not among
// the plan test's sources (checked) nor left out with its reason
// (notChecked), and for every source that holds no such SQL.
func CheckCovered(t testing.TB, dir string, checked map[string]bool, notChecked map[string]string) {
	t.Helper()
	src, err := Read(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(src.Holders) < len(checked) {
		t.Fatalf("the source holds SQL in %d places, fewer than the %d statements' sources: is the pattern still right?", len(src.Holders), len(checked))
	}
	for name, file := range src.Holders {
		if !checked[name] && notChecked[name] == "" {
			t.Errorf("%s (%s) holds SQL of records or events that the plan test does not check: add its statements to statements() in plans_internal_test.go", name, file)
		}
	}
	for name := range checked {
		if _, ok := src.Holders[name]; !ok {
			t.Errorf("statements() names %s as a source, which holds no SQL of records or events", name)
		}
	}
}

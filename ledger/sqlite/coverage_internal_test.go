package sqlite

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// sqlOfTables matches SQL that reads or writes records or events.
var sqlOfTables = regexp.MustCompile(`(?i)\b(FROM|UPDATE|INTO)\s+(records|events)\b`)

// notChecked are the holders of SQL of records or events that the plan
// test leaves out, and why.
var notChecked = map[string]string{
	"migrate": "schema changes, each run once",
}

// sqlHolders returns the constants and functions of the package's source
// in dir (tests left out) that hold SQL of records or events, each with
// the file it is in.
func sqlHolders(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	// Every build's files: a statement of either driver's build counts.
	names, err := filepath.Glob(filepath.Join(dir, "*.go"))
	if err != nil {
		t.Fatal(err)
	}
	files := map[string]*ast.File{}
	for _, name := range names {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, name, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		files[name] = f
	}
	holders := map[string]string{}
	holds := func(n ast.Node) bool {
		found := false
		ast.Inspect(n, func(n ast.Node) bool {
			if l, ok := n.(*ast.BasicLit); ok && l.Kind == token.STRING && sqlOfTables.MatchString(l.Value) {
				found = true
			}
			return !found
		})
		return found
	}
	for file, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if holds(d) {
					holders[d.Name.Name] = file
				}
			case *ast.GenDecl:
				for _, sp := range d.Specs {
					if vs, ok := sp.(*ast.ValueSpec); ok {
						for i, v := range vs.Values {
							if holds(v) {
								holders[vs.Names[i].Name] = file
							}
						}
					}
				}
			}
		}
	}
	return holders
}

// The plan test's list of statements comes from the code: every constant
// or function of this package that holds SQL of records or events is the
// source of a statement the plan test checks, so a new query cannot skip
// the check.
func TestPlanChecksEveryStatement(t *testing.T) {
	stmts, err := statements()
	if err != nil {
		t.Fatal(err)
	}
	checked := map[string]bool{}
	for _, s := range stmts {
		checked[s.from] = true
	}
	holders := sqlHolders(t, ".")
	if len(holders) < len(checked) {
		t.Fatalf("the source holds SQL in %d places, fewer than the %d statements' sources: is the pattern still right?", len(holders), len(checked))
	}
	for name, file := range holders {
		if !checked[name] && notChecked[name] == "" {
			t.Errorf("%s (%s) holds SQL of records or events that the plan test does not check: add its statements to statements() in plans_internal_test.go", name, file)
		}
	}
	for name := range checked {
		if _, ok := holders[name]; !ok {
			t.Errorf("statements() names %s as a source, which holds no SQL of records or events", name)
		}
	}
}

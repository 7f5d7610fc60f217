// Package face checks the public face of the packages a user imports:
// what `go doc` shows of the types a user configures.
package face

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// A type a user configures is a struct in the package the user imports,
// so `go doc` lists its fields, and it has the fields of the core's type
// it converts to.
func TestConfiguredTypesShowTheirFields(t *testing.T) {
	tests := []struct {
		dir, name         string
		coreDir, coreName string
	}{
		{"client", "Options", "caller", "Options"},
		{"client", "Decision", "caller", "Decision"},
		{"client", "Reconciliation", "guard", "Reconciliation"},
		{"mcpgo", "ClientOptions", "caller", "Options"},
		{"server", "Reconciliation", "guard", "Reconciliation"},
		{"server", "Options", "", ""},
		{"mcpgo", "ServerOptions", "", ""},
	}
	for _, tc := range tests {
		t.Run(tc.dir+"."+tc.name, func(t *testing.T) {
			got := structFields(t, tc.dir, tc.name)
			if len(got) == 0 {
				t.Fatalf("go doc %s %s shows no fields", tc.dir, tc.name)
			}
			if tc.coreDir == "" {
				return
			}
			if want := structFields(t, tc.coreDir, tc.coreName); !slices.Equal(got, want) {
				t.Errorf("go doc %s %s fields = %v; want those of %s.%s, %v", tc.dir, tc.name, got, tc.coreDir, tc.coreName, want)
			}
		})
	}
}

// structFields are the field names `go doc` shows of type name in the
// package in dir (below the repository root); it fails the test when the
// type is an alias or not a struct.
func structFields(t *testing.T, dir, name string) []string {
	t.Helper()
	path := filepath.Join("..", "..", dir)
	entries, err := os.ReadDir(path)
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	var files []*ast.File
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".go") || strings.HasSuffix(e.Name(), "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, filepath.Join(path, e.Name()), nil, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		files = append(files, f)
	}
	p, err := doc.NewFromFiles(fset, files, "github.com/mcpledger/mcpledger/"+dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, ty := range p.Types {
		if ty.Name != name {
			continue
		}
		for _, spec := range ty.Decl.Specs {
			ts, ok := spec.(*ast.TypeSpec)
			if !ok || ts.Name.Name != name {
				continue
			}
			if ts.Assign.IsValid() {
				t.Fatalf("%s.%s is an alias: go doc shows none of its fields", dir, name)
			}
			st, ok := ts.Type.(*ast.StructType)
			if !ok {
				t.Fatalf("%s.%s is %T, not a struct", dir, name, ts.Type)
			}
			var names []string
			for _, f := range st.Fields.List {
				for _, n := range f.Names {
					names = append(names, n.Name)
				}
			}
			return names
		}
	}
	t.Fatalf("no type %s in %s", name, dir)
	return nil
}

package libweight

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// maxGraph bounds the modules a program that embeds the client and the
// SQLite ledger has in its module graph (go list -m all, less the user's
// own module). It was 54 while the pure-Go SQLite driver was in the
// library's module and the library's tests read metrics through the
// OpenTelemetry SDK; the largest part of what is left that such a program
// does not link is the PostgreSQL store's pgx (4 modules).
const maxGraph = 40

// TestModuleGraph builds a fresh user module on go 1.25.0 that imports
// client and ledger/sqlite, as `go mod tidy` leaves it, and checks its
// module graph: at most maxGraph modules, its go line left at 1.25.0, and
// none of the modules a cgo build of it does not need (the pure-Go SQLite
// driver lives in ledger/sqlite/purego, a module of its own).
func TestModuleGraph(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	files := map[string]string{
		"go.mod":  "module example.com/user\n\ngo 1.25.0\n\nrequire github.com/mcpledger/mcpledger v0.0.0-00010101000000-000000000000\n\nreplace github.com/mcpledger/mcpledger => " + root + "\n",
		"main.go": "package main\n\nimport (\n\t_ \"github.com/mcpledger/mcpledger/client\"\n\t_ \"github.com/mcpledger/mcpledger/ledger/sqlite\"\n)\n\nfunc main() {}\n",
	}
	for name, text := range files {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command(goTool, args...)
		cmd.Dir = dir
		cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod", "GOTOOLCHAIN=local")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		if err != nil {
			t.Fatalf("go %s in the user module: %v\n%s", strings.Join(args, " "), err, stderr.String())
		}
		return string(out)
	}
	run("mod", "tidy")
	graph := modules(run("list", "-m", "all"))
	delete(graph, "example.com/user")
	var names []string
	for mod := range graph {
		names = append(names, mod)
		if strings.HasPrefix(mod, "github.com/ncruces/") {
			t.Errorf("a program that imports client and ledger/sqlite has %s in its module graph", mod)
		}
	}
	t.Logf("client + ledger/sqlite: %d modules: %s", len(graph), strings.Join(names, " "))
	if len(graph) > maxGraph {
		t.Errorf("a program that imports client and ledger/sqlite has %d modules in its graph, more than %d", len(graph), maxGraph)
	}
	gomod, err := os.ReadFile(filepath.Join(dir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(gomod, []byte("\ngo 1.25.0\n")) {
		t.Errorf("go mod tidy raised the user's go line:\n%s", gomod)
	}
}

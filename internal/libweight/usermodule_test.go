package libweight

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// The user module a Go developer already has: it pins grpc and the
// Prometheus client at versions older than the CLI's, so a library that
// drags the CLI's requirements along raises them.
const (
	grpcModule = "google.golang.org/grpc"
	grpcPinned = "v1.81.1"
	promModule = "github.com/prometheus/client_golang"
	promPinned = "v1.22.0"
)

// neverInUserModule are modules only the CLI, the console, the terminal
// prompt, the metrics SDK or an example need: none may appear in the module
// graph or go.sum of a program that imports a library package.
var neverInUserModule = []string{
	"github.com/charmbracelet/",
	"charm.land/",
	"github.com/chromedp/",
	"github.com/creack/pty",
	"github.com/spf13/cobra",
	"github.com/spf13/pflag",
	"github.com/muesli/",
	"github.com/anthropics/",
	"go.opentelemetry.io/contrib/",
	"go.opentelemetry.io/otel/exporters/",
	"github.com/mcpledger/mcpledger/cmd/agentctl",
	"github.com/mcpledger/mcpledger/confirm/terminal",
	"github.com/mcpledger/mcpledger/telemetry/prometheus",
	"github.com/mcpledger/mcpledger/e2e",
}

// TestUserModule adds one library package to a user module of its own, as
// `go get` and `go mod tidy` would, and checks what the user gets: no
// module of the CLI's, the pinned grpc and client_golang left where they
// were, at most a bounded number of new modules in the graph, and only the
// listed modules linked into the user's program.
func TestUserModule(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	root, err := filepath.Abs(filepath.Join("..", ".."))
	if err != nil {
		t.Fatal(err)
	}
	// The library's own linked modules: the go-sdk adapter's and the caller's.
	library := []string{
		"github.com/mcpledger/mcpledger",
		"github.com/cenkalti/backoff/v4",
		"github.com/gowebpki/jcs",
		"github.com/google/jsonschema-go",
		"go.opentelemetry.io/otel", "go.opentelemetry.io/otel/metric", "go.opentelemetry.io/otel/trace",
		"go.opentelemetry.io/auto/sdk", "github.com/go-logr/logr", "github.com/go-logr/stdr",
		// A policy's probe conditions ("found"), which the caller reads
		// with the policy; a module with no dependencies of its own.
		"github.com/expr-lang/expr",
	}
	goSDK := []string{
		"github.com/modelcontextprotocol/go-sdk", "github.com/segmentio/asm", "github.com/segmentio/encoding",
		"github.com/yosida95/uritemplate/v3", "golang.org/x/oauth2", "golang.org/x/sync", "golang.org/x/time",
	}
	mcpGo := []string{
		"github.com/mcpledger/mcpledger/mcpgo", "github.com/mark3labs/mcp-go", "github.com/google/uuid",
		"github.com/santhosh-tekuri/jsonschema/v6", "github.com/spf13/cast", "github.com/yosida95/uritemplate/v3",
	}
	for _, tc := range []struct {
		pkg      string
		replace  map[string]string
		linked   []string // modules the package may link, beyond the user's own
		maxAdded int      // new modules in go list -m all
		forbid   []string
	}{
		{pkg: "github.com/mcpledger/mcpledger/client", linked: slices.Concat(library, goSDK), maxAdded: 24, forbid: []string{"github.com/mark3labs/"}},
		{pkg: "github.com/mcpledger/mcpledger/server", linked: slices.Concat(library, goSDK), maxAdded: 24, forbid: []string{"github.com/mark3labs/"}},
		{
			pkg:      "github.com/mcpledger/mcpledger/mcpgo",
			replace:  map[string]string{"github.com/mcpledger/mcpledger/mcpgo": filepath.Join(root, "mcpgo")},
			linked:   slices.Concat(library, mcpGo),
			maxAdded: 30,
		},
	} {
		t.Run(filepath.Base(tc.pkg), func(t *testing.T) {
			dir := t.TempDir()
			run := func(args ...string) string {
				t.Helper()
				cmd := exec.Command(goTool, args...)
				cmd.Dir = dir
				cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-mod=mod")
				var stderr bytes.Buffer
				cmd.Stderr = &stderr
				out, err := cmd.Output()
				if err != nil {
					t.Fatalf("go %s in the user module: %v\n%s", strings.Join(args, " "), err, stderr.String())
				}
				return string(out)
			}
			write := func(imports ...string) {
				t.Helper()
				var b strings.Builder
				b.WriteString("package main\n\nimport (\n")
				for _, imp := range imports {
					b.WriteString("\t_ \"" + imp + "\"\n")
				}
				b.WriteString(")\n\nfunc main() {}\n")
				if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte(b.String()), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			gomod := "module example.com/user\n\ngo 1.25.0\n\nrequire (\n\t" + grpcModule + " " + grpcPinned + "\n\t" + promModule + " " + promPinned + "\n)\n"
			if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte(gomod), 0o644); err != nil {
				t.Fatal(err)
			}
			userImports := []string{"google.golang.org/grpc", "github.com/prometheus/client_golang/prometheus"}
			write(userImports...)
			run("mod", "tidy")
			before := modules(run("list", "-m", "all"))
			beforeSum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			beforeLinked := strings.Fields(run("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", "."))

			edits := []string{"mod", "edit",
				"-require=github.com/mcpledger/mcpledger@v0.0.0-00010101000000-000000000000",
				"-replace=github.com/mcpledger/mcpledger=" + root}
			for mod, path := range tc.replace {
				edits = append(edits, "-require="+mod+"@v0.0.0-00010101000000-000000000000", "-replace="+mod+"="+path)
			}
			run(edits...)
			write(append(userImports, tc.pkg)...)
			run("mod", "tidy")
			after := modules(run("list", "-m", "all"))
			sum, err := os.ReadFile(filepath.Join(dir, "go.sum"))
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%s: go list -m all %d -> %d modules, go.sum %d -> %d lines", tc.pkg, len(before), len(after), bytes.Count(beforeSum, []byte("\n")), bytes.Count(sum, []byte("\n")))
			var newSum []string
			for _, line := range strings.Split(string(sum), "\n") {
				if !bytes.Contains(beforeSum, []byte(line+"\n")) {
					newSum = append(newSum, line)
				}
			}

			for _, pinned := range [][2]string{{grpcModule, grpcPinned}, {promModule, promPinned}} {
				if got := after[pinned[0]]; got != pinned[1] {
					t.Errorf("importing %s raised the user's %s from %s to %s", tc.pkg, pinned[0], pinned[1], got)
				}
			}
			for _, bad := range slices.Concat(neverInUserModule, tc.forbid) {
				for mod := range after {
					if _, had := before[mod]; !had && strings.HasPrefix(mod, bad) {
						t.Errorf("importing %s puts %s in the user's module graph", tc.pkg, mod)
					}
				}
				for _, line := range newSum {
					if strings.HasPrefix(line, bad) {
						t.Errorf("importing %s puts %s in the user's go.sum", tc.pkg, line)
					}
				}
			}
			if added := len(after) - len(before); added > tc.maxAdded {
				var names []string
				for mod := range after {
					if _, ok := before[mod]; !ok {
						names = append(names, mod)
					}
				}
				slices.Sort(names)
				t.Errorf("importing %s adds %d modules to the user's graph, more than %d: %s", tc.pkg, added, tc.maxAdded, strings.Join(names, " "))
			}
			for _, mod := range strings.Fields(run("list", "-deps", "-f", "{{with .Module}}{{.Path}}{{end}}", ".")) {
				if mod == "example.com/user" || slices.Contains(beforeLinked, mod) || slices.Contains(tc.linked, mod) {
					continue
				}
				t.Errorf("importing %s links %s into the user's program; add it to the test's list only if the library must", tc.pkg, mod)
			}
		})
	}
}

// modules reads go list -m all: module path to version.
func modules(out string) map[string]string {
	m := map[string]string{}
	for _, line := range strings.Split(strings.TrimSpace(out), "\n") {
		f := strings.Fields(line)
		switch {
		case len(f) == 1:
			m[f[0]] = ""
		case len(f) >= 2:
			m[f[0]] = f[1]
		}
	}
	return m
}

package libweight

import (
	"bytes"
	"os/exec"
	"strings"
	"testing"
)

// libraryPackages are what a library user imports.
var libraryPackages = []string{
	"github.com/mcpledger/mcpledger/client",
	"github.com/mcpledger/mcpledger/server",
	"github.com/mcpledger/mcpledger/ledger/...",
}

// heavy are import path fragments no library package may depend on.
var heavy = []string{
	"github.com/charmbracelet/",
	"charm.land/",
	"bubbletea",
	"prometheus",
	"go.opentelemetry.io/otel/sdk",
}

// TestLibraryDependencies runs go list -deps on the library packages, as a
// user's build would see them, and names each heavy package found with the
// path of imports that brings it in.
func TestLibraryDependencies(t *testing.T) {
	all, imports := graph(t, libraryPackages...)
	for _, pkg := range all {
		for _, h := range heavy {
			if strings.Contains(pkg, h) {
				t.Errorf("library depends on %s (matches %q), through %s", pkg, h, strings.Join(importPath(imports, pkg), " -> "))
				break
			}
		}
	}
}

// TestSDKNeutral: the packages that decide (the caller, confirmation, the
// planner, retry, the ledger, telemetry, the wire names) speak no MCP SDK,
// and the mcp-go adapter brings in no go-sdk package: each SDK's adapter
// carries only its own SDK.
func TestSDKNeutral(t *testing.T) {
	const goSDK, mcpGo = "github.com/modelcontextprotocol/", "github.com/mark3labs/"
	for _, tc := range []struct {
		pkgs   []string
		forbid []string
	}{
		{[]string{
			"github.com/mcpledger/mcpledger/caller",
			"github.com/mcpledger/mcpledger/confirm",
			"github.com/mcpledger/mcpledger/confirm/terminal",
			"github.com/mcpledger/mcpledger/planner",
			"github.com/mcpledger/mcpledger/retry",
			"github.com/mcpledger/mcpledger/ledger/...",
			"github.com/mcpledger/mcpledger/telemetry",
			"github.com/mcpledger/mcpledger/wire",
		}, []string{goSDK, mcpGo}},
		{[]string{"github.com/mcpledger/mcpledger/mcpgo"}, []string{goSDK}},
	} {
		all, imports := graph(t, tc.pkgs...)
		for _, pkg := range all {
			for _, f := range tc.forbid {
				if strings.HasPrefix(pkg, f) {
					t.Errorf("%s depends on %s, through %s", tc.pkgs[0], pkg, strings.Join(importPath(imports, pkg), " -> "))
					break
				}
			}
		}
	}
}

// TestLeafPackages: the packages the ledger root was split into import no
// other mcpledger package (their own internal packages aside), so the root
// can import them and a user can take one alone.
func TestLeafPackages(t *testing.T) {
	const module = "github.com/mcpledger/mcpledger/"
	for _, leaf := range []string{"ledger/args", "ledger/compact", "ledger/process", "ledger/redact"} {
		all, imports := graph(t, module+leaf)
		for _, pkg := range all {
			if strings.HasPrefix(pkg, module) && pkg != module+leaf && !strings.HasPrefix(pkg, module+leaf+"/") {
				t.Errorf("%s depends on %s, through %s; a leaf package imports no other mcpledger package", leaf, pkg, strings.Join(importPath(imports, pkg), " -> "))
			}
		}
	}
}

// graph lists the non-standard packages pkgs build with, and what each
// imports.
func graph(t *testing.T, pkgs ...string) ([]string, map[string][]string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("no go command on PATH: %v", err)
	}
	args := append([]string{"list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}} {{join .Imports \",\"}}{{end}}"}, pkgs...)
	cmd := exec.Command(goTool, args...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, stderr.String())
	}
	imports := map[string][]string{}
	var all []string
	for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		pkg, list, _ := strings.Cut(line, " ")
		if pkg == "" {
			continue
		}
		all = append(all, pkg)
		if list != "" {
			imports[pkg] = strings.Split(list, ",")
		}
	}
	if len(all) < len(pkgs) {
		t.Fatalf("go list -deps listed %d packages for %d; want the whole graph:\n%s", len(all), len(pkgs), out)
	}
	t.Logf("%d non-standard packages in the graph of %s", len(all), strings.Join(pkgs, " "))
	return all, imports
}

// importPath finds a chain of imports from a library package to target.
func importPath(imports map[string][]string, target string) []string {
	prev := map[string]string{}
	var queue []string
	for pkg := range imports {
		if strings.HasPrefix(pkg, "github.com/mcpledger/mcpledger/") {
			prev[pkg] = ""
			queue = append(queue, pkg)
		}
	}
	for len(queue) > 0 {
		pkg := queue[0]
		queue = queue[1:]
		if pkg == target {
			var chain []string
			for p := pkg; p != ""; p = prev[p] {
				chain = append([]string{p}, chain...)
			}
			return chain
		}
		for _, next := range imports[pkg] {
			if _, seen := prev[next]; !seen {
				prev[next] = pkg
				queue = append(queue, next)
			}
		}
	}
	return []string{target}
}

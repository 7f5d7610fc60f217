// Package conformance runs the official MCP conformance suite
// (@modelcontextprotocol/conformance) against the proxy and the ledger
// client, each next to the go-sdk program it must match:
//
//   - server mode: go-sdk's conformance/everything-server alone, then behind
//     agentctl proxy --listen with the upstream over streamable HTTP, then
//     over stdio. The proxy must pass every scenario the server passes alone.
//   - client mode: go-sdk's conformance/everything-client, then ./client (the
//     same scenarios, tool calls through client.Client). Ours must pass every
//     scenario go-sdk's passes.
//
// The suite needs Node 22: .ci/conformance.sh installs both and exports
// MCPLEDGER_CONFORMANCE (the suite's script) and MCPLEDGER_CONFORMANCE_NODE.
// Without them the test skips, saying so, except under CI=true, where it
// fails. MCPLEDGER_CONFORMANCE_REPORT names a file the pass counts are
// appended to.
package conformance

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"io/fs"
	"maps"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

const (
	envSuite  = "MCPLEDGER_CONFORMANCE"
	envNode   = "MCPLEDGER_CONFORMANCE_NODE"
	envReport = "MCPLEDGER_CONFORMANCE_REPORT"
)

func TestConformance(t *testing.T) {
	s := findSuite(t)
	bin := buildPrograms(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()

	t.Run("server", func(t *testing.T) {
		direct := startServer(ctx, t, bin("everything-server"))
		overHTTP := startProxy(ctx, t, bin("agentctl"), "--url", direct)
		overStdio := startProxy(ctx, t, bin("agentctl"), "--", bin("everything-server"))

		alone := s.run(ctx, t, "server", "--url", direct)
		compare(t, "server mode: everything-server alone", alone, map[string]results{
			"through agentctl proxy --listen, upstream over streamable HTTP": s.run(ctx, t, "server", "--url", overHTTP),
			"through agentctl proxy --listen, upstream over stdio":           s.run(ctx, t, "server", "--url", overStdio),
		})
	})
	t.Run("client", func(t *testing.T) {
		theirs := s.run(ctx, t, "client", "--suite", "all", "--command", bin("everything-client"))
		compare(t, "client mode: go-sdk's everything-client", theirs, map[string]results{
			"mcpledger's conformance client (client.Client)": s.run(ctx, t, "client", "--suite", "all", "--command", bin("client")),
		})
	})
}

// suite is the conformance suite's script and the Node that runs it.
type suite struct{ node, script string }

// findSuite finds the suite and a Node 22 to run it, or skips (fails under
// CI=true) saying what is missing.
func findSuite(t *testing.T) suite {
	t.Helper()
	s, why := locate()
	if why == "" {
		return s
	}
	why += "; run .ci/conformance.sh and export what it prints (eval \"$(.ci/conformance.sh)\")"
	if os.Getenv("CI") == "true" {
		t.Fatalf("the MCP conformance suite cannot run: %s", why)
	}
	t.Skipf("skipping the MCP conformance suite: %s", why)
	return suite{}
}

func locate() (suite, string) {
	s := suite{script: os.Getenv(envSuite), node: os.Getenv(envNode)}
	if s.script == "" {
		p, err := exec.LookPath("conformance")
		if err != nil {
			return s, envSuite + " is not set and there is no conformance command on PATH"
		}
		s.script = p
	}
	if _, err := os.Stat(s.script); err != nil {
		return s, fmt.Sprintf("%s=%s: %v", envSuite, s.script, err)
	}
	if s.node == "" {
		p, err := exec.LookPath("node")
		if err != nil {
			return s, envNode + " is not set and there is no node on PATH"
		}
		s.node = p
	}
	out, err := exec.Command(s.node, "--version").Output()
	if err != nil {
		return s, fmt.Sprintf("%s --version: %v", s.node, err)
	}
	v := strings.TrimSpace(string(out))
	major, _, _ := strings.Cut(strings.TrimPrefix(v, "v"), ".")
	if n, err := strconv.Atoi(major); err != nil || n < 22 {
		return s, fmt.Sprintf("%s is Node %s; the suite needs Node 22 or later", s.node, v)
	}
	return s, ""
}

// buildPrograms builds agentctl, go-sdk's two conformance programs and our
// client into one directory, and returns the path of one by name.
func buildPrograms(t *testing.T) func(name string) string {
	t.Helper()
	dir := t.TempDir()
	gobin, err := exec.LookPath("go")
	if err != nil {
		gobin = "go"
	}
	cmd := exec.Command(gobin, "build", "-o", dir+string(filepath.Separator),
		"github.com/mcpledger/mcpledger/cmd/agentctl",
		"github.com/mcpledger/mcpledger/internal/conformance/client",
		"github.com/modelcontextprotocol/go-sdk/conformance/everything-server",
		"github.com/modelcontextprotocol/go-sdk/conformance/everything-client",
	)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	return func(name string) string { return filepath.Join(dir, name) }
}

// startServer runs everything-server over stateful streamable HTTP (its
// stateless default cannot send requests, so sampling and elicitation would
// fail alone) and returns its URL once it accepts connections.
func startServer(ctx context.Context, t *testing.T, bin string) string {
	t.Helper()
	addr := freeAddr(t)
	logs := &syncBuffer{}
	cmd := exec.CommandContext(ctx, bin, "-http", addr, "-stateless=false")
	cmd.Stdout, cmd.Stderr = logs, logs
	start(t, cmd, "everything-server", logs)
	deadline := time.Now().Add(30 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return "http://" + addr + "/"
		}
		if time.Now().After(deadline) {
			t.Fatalf("everything-server does not accept connections on %s: %v\n%s", addr, err, logs.String())
		}
		time.Sleep(20 * time.Millisecond) // a bounded poll for the port
	}
}

// startProxy runs agentctl proxy --listen 127.0.0.1:0 with upstream (flags
// and command) and returns its URL, from the line it prints once it listens.
func startProxy(ctx context.Context, t *testing.T, agentctl string, upstream ...string) string {
	t.Helper()
	args := append([]string{"--ledger", filepath.Join(t.TempDir(), "ledger.db"), "proxy", "--listen", "127.0.0.1:0"}, upstream...)
	cmd := exec.CommandContext(ctx, agentctl, args...)
	cmd.Env = append(os.Environ(), "MCPLEDGER_SESSION=", "MCPLEDGER_POLICY=")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	start(t, cmd, "agentctl proxy", logs)
	addr := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			line := sc.Text()
			logs.WriteString(line + "\n")
			if a, ok := strings.CutPrefix(line, "agentctl proxy: listening on "); ok {
				u, _, _ := strings.Cut(a, " ")
				select {
				case addr <- u:
				default:
				}
			}
		}
		close(addr)
	}()
	select {
	case u, ok := <-addr:
		if !ok {
			t.Fatalf("agentctl %s ended before it listened:\n%s", strings.Join(args, " "), logs.String())
		}
		return u
	case <-time.After(time.Minute):
		t.Fatalf("agentctl %s did not listen within a minute:\n%s", strings.Join(args, " "), logs.String())
	}
	return ""
}

// start starts cmd and stops it when the test ends, showing its output if
// the test failed.
func start(t *testing.T, cmd *exec.Cmd, name string, logs fmt.Stringer) {
	t.Helper()
	if err := cmd.Start(); err != nil {
		t.Fatalf("starting %s: %v", name, err)
	}
	t.Cleanup(func() {
		_ = cmd.Process.Kill() // it serves until stopped; how it ends does not matter
		_ = cmd.Wait()
		if t.Failed() {
			t.Logf("%s output:\n%s", name, logs.String())
		}
	})
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// results are the checks of each scenario of a run.
type results map[string]checks

type checks struct{ passed, failed int }

func (c checks) ok() bool { return c.failed == 0 }

// run runs the suite in mode ("server" or "client") and reads what it
// saved. The suite's exit status says whether everything passed, which is
// not the question here (go-sdk's own programs fail some scenarios), so it
// is not checked; a run that saved no scenario is a failure.
func (s suite) run(ctx context.Context, t *testing.T, mode string, args ...string) results {
	t.Helper()
	out := t.TempDir()
	cmd := exec.CommandContext(ctx, s.node, append([]string{s.script, mode, "-o", out}, args...)...)
	// The suite's own children (a client under test) must find this Node
	// first too.
	cmd.Env = append(os.Environ(), "PATH="+filepath.Dir(s.node)+string(os.PathListSeparator)+os.Getenv("PATH"))
	text, err := cmd.CombinedOutput()
	res, rerr := readResults(out, mode)
	if rerr != nil || len(res) == 0 {
		t.Fatalf("conformance %s %s saved no results (%v; exit: %v):\n%s", mode, strings.Join(args, " "), rerr, err, text)
	}
	if t.Failed() || testing.Verbose() {
		t.Logf("conformance %s %s:\n%s", mode, strings.Join(args, " "), tail(text, 60))
	}
	return res
}

// stamp is the time the suite appends to each scenario's directory.
var stamp = regexp.MustCompile(`-\d{4}-\d\d-\d\dT\d\d-\d\d-\d\d-\d{3}Z$`)

// readResults reads every checks.json under dir: one directory per
// scenario, named after it (with "server-" first in server mode) and the
// time it ran.
func readResults(dir, mode string) (results, error) {
	res := results{}
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() != "checks.json" {
			return err
		}
		rel, err := filepath.Rel(dir, filepath.Dir(path))
		if err != nil {
			return err
		}
		name := stamp.ReplaceAllString(filepath.ToSlash(rel), "")
		if mode == "server" {
			name = strings.TrimPrefix(name, "server-")
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		var list []struct {
			Status string `json:"status"`
		}
		if err := json.Unmarshal(b, &list); err != nil {
			return fmt.Errorf("%s: %w", path, err)
		}
		var c checks
		for _, x := range list {
			switch x.Status {
			case "SUCCESS":
				c.passed++
			case "FAILURE":
				c.failed++
			}
		}
		res[name] = c
		return nil
	})
	return res, err
}

// compare fails the test for each scenario the baseline passes and a
// candidate does not, and reports the pass counts of all.
func compare(t *testing.T, label string, base results, candidates map[string]results) {
	t.Helper()
	if n, _ := base.count(); n == 0 {
		t.Fatalf("%s passed no scenario: nothing to compare against", label)
	}
	lines := []string{base.summary(label)}
	for _, name := range slices.Sorted(maps.Keys(candidates)) {
		c := candidates[name]
		lines = append(lines, c.summary(name))
		for _, sc := range slices.Sorted(maps.Keys(base)) {
			if !base[sc].ok() {
				continue
			}
			got, ran := c[sc]
			switch {
			case !ran:
				t.Errorf("%s: scenario %s passes with %s but did not run", name, sc, label)
			case !got.ok():
				t.Errorf("%s: scenario %s fails (%d of %d checks); it passes with %s", name, sc, got.failed, got.passed+got.failed, label)
			}
		}
	}
	report(t, lines)
}

func (r results) count() (scenarios, checks int) {
	for _, c := range r {
		if c.ok() {
			scenarios++
		}
		checks += c.passed
	}
	return scenarios, checks
}

func (r results) summary(label string) string {
	s, c := r.count()
	total := 0
	for _, x := range r {
		total += x.passed + x.failed
	}
	return fmt.Sprintf("%s: %d of %d scenarios pass, %d of %d checks", label, s, len(r), c, total)
}

// report logs lines and appends them to $MCPLEDGER_CONFORMANCE_REPORT.
func report(t *testing.T, lines []string) {
	t.Helper()
	for _, l := range lines {
		t.Log(l)
	}
	path := os.Getenv(envReport)
	if path == "" {
		return
	}
	f, err := os.OpenFile(path, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o644)
	if err != nil {
		t.Errorf("writing the conformance report: %v", err)
		return
	}
	defer f.Close()
	if _, err := io.WriteString(f, strings.Join(lines, "\n")+"\n"); err != nil {
		t.Errorf("writing the conformance report: %v", err)
	}
}

func tail(b []byte, n int) string {
	lines := strings.Split(strings.TrimRight(string(b), "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// syncBuffer is a bytes.Buffer safe for writers and a reader at once.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) WriteString(p string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.b.WriteString(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

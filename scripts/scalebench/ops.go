package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/internal/errs"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/scripts/bigledger/bulk"
)

// shape is the ledger every size gets: one record in 100 UNKNOWN, the
// oldest tenth past its retention.
var shape = bulk.Shape{UnknownEvery: 100, Expired: 0.1}

// The operations, in the order of the tables.
const (
	opCallNew    = "`agentctl call`, a new key"
	opCallReplay = "`agentctl call`, its replay"
	opCallReplan = "`agentctl call`, an unkeyed re-plan"
	opShow       = "`ledger show KEY`"
	opShowTool   = "`ledger show KEY --tool create_payment`"
	opReconcile  = "`ledger reconcile KEY --as succeeded`"
	opApprove    = "`ledger approve KEY`"
	opDeny       = "`ledger deny KEY`"
	opList       = "`ledger list --session S`"
	opStatus     = "`ledger_status` (the model's tool, `agentctl serve`)"
	opConsole    = "console `/`"
	opUnknown    = "console `/unknown`"
	opRecord     = "console record page"
	opExport     = "`ledger export`"
	opPurge      = "`ledger purge` of the expired records"
)

var ops = []string{opCallNew, opCallReplay, opCallReplan, opShow, opShowTool, opReconcile, opApprove, opDeny,
	opList, opStatus, opConsole, opUnknown, opRecord, opExport, opPurge}

// measure is one operation's runs at one size.
type measure struct {
	times []time.Duration
	bytes int64 // a page's or the export's size
	rss   int64 // the export's peak RSS, bytes
	count int   // records exported or purged
}

func (m *measure) median() time.Duration {
	s := slices.Clone(m.times)
	slices.Sort(s)
	if len(s) == 0 {
		return 0
	}
	return s[len(s)/2]
}

// result is one store at one size.
type result struct {
	store   string
	n       int
	load    time.Duration
	sizes   storage
	measure map[string]*measure
}

// queuePolicy queues create_payment for a person's approval.
const queuePolicy = `{"version": 1, "rules": [{"tool": "create_payment", "action": "queue", "note": "scalebench: approve and deny"}]}`

// bench runs the operations of one ledger.
type bench struct {
	ctx    context.Context
	bin    string
	ledger string
	n      int
	upURL  string
	policy string
	res    *result
	// serve is agentctl serve's session, for ledger_status.
	serve *mcp.ClientSession
	// ui is agentctl ui; uiBase and uiToken where and how to reach it.
	ui              *exec.Cmd
	uiBase, uiToken string
}

// runStore builds the ledgers of every size, then runs the operations
// interleaved: each repetition runs an operation at every size in turn
// (upwards, then downwards), so that a machine busier at one moment than
// at another weighs on every size alike.
func runStore(ctx context.Context, c config, dir string, b binaries, upURL, store string) ([]*result, error) {
	policy := filepath.Join(dir, "queue.json")
	if err := os.WriteFile(policy, []byte(queuePolicy), 0o600); err != nil {
		return nil, err
	}
	var benches []*bench
	defer func() {
		for _, bn := range benches {
			bn.close()
			if !c.keep {
				if err := dropLedger(context.Background(), store, bn.ledger, bn.n); err != nil {
					logf("%v", err)
				}
			}
		}
	}()
	for _, n := range c.sizes {
		led, err := ledgerAt(c, dir, store, n)
		if err != nil {
			return nil, err
		}
		bn := &bench{ctx: ctx, bin: b.agentctl, ledger: led, n: n, upURL: upURL, policy: policy,
			res: &result{store: store, n: n, measure: map[string]*measure{}}}
		if err := dropLedger(ctx, store, led, n); err != nil {
			return nil, err
		}
		benches = append(benches, bn)
		if err := bn.build(); err != nil {
			return nil, fmt.Errorf("%d records: %w", n, err)
		}
	}
	for _, bn := range benches {
		if err := bn.start(); err != nil {
			return nil, fmt.Errorf("%d records: %w", bn.n, err)
		}
	}
	for rep := range c.reps {
		logf("%s: repetition %d of %d", storeTitle(store), rep+1, c.reps)
		order := slices.Clone(benches)
		if rep%2 == 1 {
			slices.Reverse(order)
		}
		for _, bn := range order {
			for _, step := range []func(int) error{bn.calls, bn.lookups, bn.decisions, bn.status, bn.console} {
				if err := step(rep); err != nil {
					return nil, fmt.Errorf("%d records: %w", bn.n, err)
				}
			}
		}
	}
	for _, last := range []func(*bench) error{(*bench).export, (*bench).purge} {
		for _, bn := range benches {
			if err := last(bn); err != nil {
				return nil, fmt.Errorf("%d records: %w", bn.n, err)
			}
		}
	}
	var out []*result
	for _, bn := range benches {
		out = append(out, bn.res)
	}
	return out, nil
}

// build makes the ledger and reads its size.
func (b *bench) build() error {
	store, n := b.res.store, b.n
	logf("%s: building a ledger of %d records", storeTitle(store), n)
	start := time.Now()
	s := shape
	s.Progress = func(done, n int) { logf("  %d of %d records", done, n) }
	var err error
	if store == "sqlite" {
		err = bulk.SQLite(b.ctx, b.ledger, n, s)
	} else {
		err = bulk.Postgres(b.ctx, b.ledger, n, s)
	}
	if err != nil {
		return fmt.Errorf("building the ledger: %w", err)
	}
	b.res.load = time.Since(start)
	logf("  built in %s", b.res.load.Round(time.Millisecond))
	if b.res.sizes, err = sizesOf(b.ctx, store, b.ledger, n); err != nil {
		return fmt.Errorf("reading the ledger's size: %w", err)
	}
	return nil
}

// The records the operations read: in the middle of the ledger, among
// the unexpired ones, a different one for each repetition.
func mid(n int) int { return n / 2 / 100 * 100 }

// payKey is a create_payment record, SUCCEEDED.
func payKey(n, rep int) string { return bulk.Key(mid(n) + rep*4) }

// unknownKey is an UNKNOWN create_payment record.
func unknownKey(n, rep int) string {
	i := mid(n) + shape.UnknownEvery/2 + rep*100
	if !shape.Unknown(i) {
		panic("scalebench: unknownKey is not an UNKNOWN record")
	}
	return bulk.Key(i)
}

func (b *bench) add(op string, d time.Duration) *measure {
	m := b.res.measure[op]
	if m == nil {
		m = &measure{}
		b.res.measure[op] = m
	}
	m.times = append(m.times, d)
	return m
}

// ran is one agentctl run.
type ran struct {
	took   time.Duration
	code   int
	out    []byte // stdout, unless counted
	lines  int    // stdout's lines, when counted
	bytes  int64  // stdout's bytes, when counted
	stderr string
	maxRSS int64
}

// agentctl runs the CLI on the ledger; count keeps stdout's size rather
// than stdout.
func (b *bench) agentctl(count bool, args ...string) (ran, error) {
	cmd := exec.CommandContext(b.ctx, b.bin, append([]string{"--ledger", b.ledger}, args...)...)
	cmd.Env = cleanEnv()
	var out bytes.Buffer
	var cnt counter
	if count {
		cmd.Stdout = &cnt
	} else {
		cmd.Stdout = &out
	}
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	start := time.Now()
	err := cmd.Run()
	r := ran{took: time.Since(start), out: out.Bytes(), lines: cnt.lines, bytes: cnt.bytes, stderr: strings.TrimSpace(errOut.String())}
	if cmd.ProcessState != nil {
		r.maxRSS = maxRSS(cmd.ProcessState)
	}
	if ee, ok := errs.AsType[*exec.ExitError](err); ok {
		r.code = ee.ExitCode()
		err = nil
	}
	if err != nil {
		return r, fmt.Errorf("agentctl %s: %w", strings.Join(args, " "), err)
	}
	return r, nil
}

// want runs agentctl and requires exit code and, in stdout, each of has.
func (b *bench) want(code int, has []string, args ...string) (ran, error) {
	r, err := b.agentctl(false, args...)
	if err != nil {
		return r, err
	}
	if r.code != code {
		return r, fmt.Errorf("agentctl %s: exit %d, want %d: %s", strings.Join(args, " "), r.code, code, lastLine(r.stderr))
	}
	for _, h := range has {
		if !bytes.Contains(r.out, []byte(h)) {
			return r, fmt.Errorf("agentctl %s: stdout lacks %q: %.300s", strings.Join(args, " "), h, r.out)
		}
	}
	return r, nil
}

func lastLine(s string) string {
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return s[i+1:]
	}
	return s
}

// cleanEnv is this process's environment without MCPLEDGER_ settings,
// which would change what agentctl does.
func cleanEnv() []string {
	return slices.DeleteFunc(os.Environ(), func(kv string) bool { return strings.HasPrefix(kv, "MCPLEDGER_") })
}

// counter counts what is written to it.
type counter struct {
	bytes int64
	lines int
}

func (c *counter) Write(p []byte) (int, error) {
	c.bytes += int64(len(p))
	c.lines += bytes.Count(p, []byte{'\n'})
	return len(p), nil
}

func (b *bench) calls(rep int) error {
	n := b.n
	key := fmt.Sprintf("sb-%d-%d-%d", n, rep, time.Now().UnixNano())
	pay := []string{"create_payment", "amount_cents=100", "currency=EUR", "payee=" + key}
	call := []string{"call", "--url", b.upURL, "--session", "sb-" + key, "--yes", "--progress=none"}
	r, err := b.want(0, []string{"payment pay_"}, append(append(slices.Clone(call), "--key", key), pay...)...)
	if err != nil {
		return err
	}
	b.add(opCallNew, r.took)
	if r, err = b.want(0, []string{"payment pay_"}, append(append(slices.Clone(call), "--key", key), pay...)...); err != nil {
		return err
	}
	if !strings.Contains(r.stderr, "replayed") {
		return fmt.Errorf("the second call with key %s was not a replay: %s", key, r.stderr)
	}
	b.add(opCallReplay, r.took)
	// An unkeyed call, then the same call again in its session: the
	// second is a re-plan, answered from the ledger.
	replan := append(slices.Clone(call), append(pay[:len(pay):len(pay)], "memo=replan")...)
	if _, err := b.want(0, []string{"payment pay_"}, replan...); err != nil {
		return err
	}
	if r, err = b.want(0, []string{"payment pay_"}, replan...); err != nil {
		return err
	}
	if !strings.Contains(r.stderr, "replayed") {
		return fmt.Errorf("the unkeyed call repeated in its session was not answered from the ledger: %s", r.stderr)
	}
	b.add(opCallReplan, r.took)
	return nil
}

func (b *bench) lookups(rep int) error {
	n := b.n
	key := payKey(n, rep)
	r, err := b.want(0, []string{key}, "ledger", "show", key)
	if err != nil {
		return err
	}
	b.add(opShow, r.took)
	if r, err = b.want(0, []string{key}, "ledger", "show", key, "--tool", "create_payment"); err != nil {
		return err
	}
	b.add(opShowTool, r.took)
	uk := unknownKey(n, rep)
	if r, err = b.want(0, []string{"SUCCEEDED"}, "ledger", "reconcile", uk, "--as", "succeeded", "--note", "scalebench: settled by hand"); err != nil {
		return err
	}
	b.add(opReconcile, r.took)
	s := bulk.Session(mid(n) + rep*100)
	if r, err = b.want(0, []string{s}, "ledger", "list", "--wide", "--session", s); err != nil {
		return err
	}
	if got := bytes.Count(r.out, []byte(s)); got != 50 {
		return fmt.Errorf("ledger list --session %s: %d records, want the 50 of its first page", s, got)
	}
	b.add(opList, r.took)
	return nil
}

func (b *bench) decisions(rep int) error {
	n := b.n
	for _, approve := range []bool{true, false} {
		key := fmt.Sprintf("sb-q-%d-%d-%t-%d", n, rep, approve, time.Now().UnixNano())
		// The policy queues the call: exit 6, awaiting approval.
		if _, err := b.want(6, nil, "call", "--policy", b.policy, "--url", b.upURL, "--session", "sb-queue", "--key", key, "--progress=none",
			"create_payment", "amount_cents=100", "currency=EUR", "payee="+key); err != nil {
			return err
		}
		if approve {
			r, err := b.want(0, []string{"approved"}, "ledger", "approve", key, "--policy", b.policy)
			if err != nil {
				return err
			}
			b.add(opApprove, r.took)
			continue
		}
		r, err := b.want(0, []string{"DENIED"}, "ledger", "deny", key, "--policy", b.policy, "--reason", "scalebench: denied")
		if err != nil {
			return err
		}
		b.add(opDeny, r.took)
	}
	return nil
}

// start starts agentctl serve (for ledger_status, in the session of the
// records it asks about) and agentctl ui on the ledger.
func (b *bench) start() error {
	cmd := exec.CommandContext(b.ctx, b.bin, "--ledger", b.ledger, "serve", "--session", bulk.Session(mid(b.n)))
	cmd.Env = cleanEnv()
	cl := mcp.NewClient(&mcp.Implementation{Name: "scalebench", Version: "1"}, nil)
	cs, err := cl.Connect(b.ctx, &mcp.CommandTransport{Command: cmd}, nil)
	if err != nil {
		return fmt.Errorf("agentctl serve: %w", err)
	}
	b.serve = cs
	ui := exec.CommandContext(b.ctx, b.bin, "--ledger", b.ledger, "ui", "--listen", "127.0.0.1:0")
	ui.Env = cleanEnv()
	stdout, err := ui.StdoutPipe()
	if err != nil {
		return err
	}
	if err := ui.Start(); err != nil {
		return fmt.Errorf("agentctl ui: %w", err)
	}
	b.ui = ui
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil {
		return fmt.Errorf("agentctl ui printed no URL: %w", err)
	}
	u, err := url.Parse(strings.TrimSpace(line))
	if err != nil {
		return fmt.Errorf("agentctl ui printed %q: %w", line, err)
	}
	b.uiToken = u.Query().Get("token")
	b.uiBase = u.Scheme + "://" + u.Host
	return nil
}

// close ends agentctl serve and agentctl ui.
func (b *bench) close() {
	if b.serve != nil {
		_ = b.serve.Close() // the figures are taken
	}
	if b.ui != nil {
		_ = b.ui.Process.Signal(os.Interrupt) // it ends on SIGINT; Wait reaps it
		_ = b.ui.Wait()                       // as above
	}
}

// status asks ledger_status about a record of the session agentctl serve
// serves; the time is the tool call's.
func (b *bench) status(rep int) error {
	key := payKey(b.n, rep)
	start := time.Now()
	res, err := b.serve.CallTool(b.ctx, &mcp.CallToolParams{Name: "ledger_status", Arguments: map[string]any{"key": key}})
	took := time.Since(start)
	if err != nil {
		return fmt.Errorf("ledger_status %s: %w", key, err)
	}
	var out struct {
		Found bool `json:"found"`
	}
	raw, err := json.Marshal(res.StructuredContent)
	if err == nil {
		err = json.Unmarshal(raw, &out)
	}
	if err != nil || res.IsError || !out.Found {
		return fmt.Errorf("ledger_status %s in session %s: not found (error %v, isError %t): %s", key, bulk.Session(mid(b.n)), err, res.IsError, raw)
	}
	b.add(opStatus, took)
	return nil
}

// console reads three pages of agentctl ui.
func (b *bench) console(rep int) error {
	get := func(op, path string) error {
		req, err := http.NewRequestWithContext(b.ctx, http.MethodGet, b.uiBase+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("X-Console-Token", b.uiToken)
		start := time.Now()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return fmt.Errorf("console %s: %w", path, err)
		}
		body, err := io.ReadAll(resp.Body)
		_ = resp.Body.Close() // read to the end above
		took := time.Since(start)
		if err != nil {
			return fmt.Errorf("console %s: %w", path, err)
		}
		if resp.StatusCode != http.StatusOK {
			return fmt.Errorf("console %s: %s: %.200s", path, resp.Status, body)
		}
		b.add(op, took).bytes = int64(len(body))
		return nil
	}
	key := payKey(b.n, rep)
	for _, p := range []struct{ op, path string }{
		{opConsole, "/"},
		{opUnknown, "/unknown"},
		{opRecord, "/record?" + url.Values{"tenant": {"default"}, "layer": {"client"}, "tool": {"create_payment"}, "key": {key}}.Encode()},
	} {
		if err := get(p.op, p.path); err != nil {
			return err
		}
	}
	return nil
}

func (b *bench) export() error {
	n := b.n
	r, err := b.agentctl(true, "ledger", "export")
	if err != nil {
		return err
	}
	if r.code != 0 {
		return fmt.Errorf("ledger export: exit %d: %s", r.code, lastLine(r.stderr))
	}
	// A header line, a line per record and an end line.
	if records := r.lines - 2; records < n {
		return fmt.Errorf("ledger export wrote %d records, want at least %d", records, n)
	}
	m := b.add(opExport, r.took)
	m.bytes, m.rss, m.count = r.bytes, r.maxRSS, r.lines-2
	return nil
}

var purged = regexp.MustCompile(`purged (\d+) records?`)

func (b *bench) purge() error {
	n := b.n
	r, err := b.want(0, nil, "ledger", "purge", "--yes")
	if err != nil {
		return err
	}
	m := purged.FindSubmatch(r.out)
	if m == nil {
		return fmt.Errorf("ledger purge said %q, not how many it purged", r.out)
	}
	got, _ := strconv.Atoi(string(m[1])) // \d+
	want := 0
	for i := range shape.Expiring(n) {
		if !shape.Unknown(i) {
			want++
		}
	}
	if got != want {
		return fmt.Errorf("ledger purge purged %d records, want the %d expired settled ones", got, want)
	}
	b.add(opPurge, r.took).count = got
	return nil
}

// Command retention measures how large a proxy's SQLite ledger grows, per
// 10,000 calls, with and without the proxy's own purge, at the default
// retention (records 24h, call events 7 days).
//
//	go run ./scripts/retention                  # 8 simulated days, 500 calls an hour
//	go run ./scripts/retention -days 3 -rate 2000
//
// Each run is the real proxy (package internal/proxy) on a real SQLite
// ledger file, with an MCP host and a payments-like upstream over
// in-memory transports. Time is simulated: the ledger's, the client's and
// the sweeps' clock advances 3600/rate seconds per call, and the proxy
// sweeps once a simulated minute, as agentctl proxy does once a minute.
// The run without purge never sweeps. The ledger file is checkpointed
// before each reading; the figures are its size on disk and its records
// and events.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/internal/proxy"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func main() {
	days := flag.Int("days", 8, "simulated days (the call events' retention is 7)")
	rate := flag.Int("rate", 500, "calls per simulated hour")
	every := flag.Int("report", 24, "print a row every this many simulated hours")
	flag.Parse()
	if err := run(os.Stdout, *days, *rate, *every); err != nil {
		fmt.Fprintln(os.Stderr, "retention:", err)
		os.Exit(1)
	}
}

// reading is the ledger's size after some calls.
type reading struct {
	hours           int
	calls           int
	bytes           int64
	records, events int
}

func run(out io.Writer, days, rate, every int) error {
	if days <= 0 || rate <= 0 || every <= 0 {
		return fmt.Errorf("-days, -rate and -report want positive numbers")
	}
	dir, err := os.MkdirTemp("", "retention-")
	if err != nil {
		return err
	}
	defer func() { _ = os.RemoveAll(dir) }() // a temporary folder: best effort
	start := time.Now()
	var runs [2][]reading
	for i, purge := range []bool{false, true} {
		r, err := measure(filepath.Join(dir, fmt.Sprintf("ledger-%d.db", i)), days, rate, every, purge)
		if err != nil {
			return err
		}
		runs[i] = r
	}
	// The report is built whole and written once, so that a failed write
	// is one error to return.
	var b strings.Builder
	fmt.Fprintf(&b, "%d calls an hour for %d simulated days, default retention (records %s, call events %s), sweeps once a simulated minute\n\n",
		rate, days, ledger.DefaultRetention, 7*24*time.Hour)
	fmt.Fprintln(&b, "| hours | calls | no purge: file | records | events | purge: file | records | events |")
	fmt.Fprintln(&b, "| ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
	for i := range runs[0] {
		x, y := runs[0][i], runs[1][i]
		fmt.Fprintf(&b, "| %d | %d | %s | %d | %d | %s | %d | %d |\n", x.hours, x.calls, mib(x.bytes), x.records, x.events, mib(y.bytes), y.records, y.events)
	}
	last := len(runs[0]) - 1
	a := runs[0][last]
	fmt.Fprintf(&b, "\nno purge: %s per 10,000 calls, growing for as long as the proxy runs\n", mib(a.bytes*10000/int64(a.calls)))
	// With the purge, growth stops once the oldest records and events
	// leave their retention: compare the last day with the day before.
	perDay := 24 * rate
	if last >= 1 && runs[1][last].hours-runs[1][last-1].hours == 24 {
		d := runs[1][last].bytes - runs[1][last-1].bytes
		fmt.Fprintf(&b, "purge: %s per 10,000 calls over the last simulated day (%d calls); the file holds one day of records and a week of events\n",
			mib(d*10000/int64(perDay)), perDay)
	}
	fmt.Fprintf(&b, "(measured in %s)\n", time.Since(start).Round(time.Second))
	_, err = io.WriteString(out, b.String())
	return err
}

// measure runs days×24×rate calls through a proxy on a fresh ledger at
// path and reads the ledger every `every` simulated hours.
func measure(path string, days, rate, every int, purge bool) (_ []reading, err error) {
	ctx := context.Background()
	clock := &simClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	st, err := sqlite.Open(ctx, path, &sqlite.Options{Now: clock.Now, Synchronous: sqlite.SyncNormal,
		Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, st.Close()) }()
	allow, err := confirm.Parse([]byte(`{"version":1,"rules":[{"tool":"create_payment","action":"allow","note":"measured"}]}`))
	if err != nil {
		return nil, err
	}
	up := upstream()
	p, err := proxy.New(ctx, &proxy.Options{
		Transport: func(ctx context.Context) (mcp.Transport, error) {
			st, ct := mcp.NewInMemoryTransports()
			if _, err := up.Connect(ctx, st, nil); err != nil {
				return nil, err
			}
			return ct, nil
		},
		Store:      st,
		Session:    "retention",
		Policy:     allow,
		Client:     &client.Options{Now: clock.Now},
		Logger:     slog.New(slog.DiscardHandler),
		SweepEvery: -1, // swept below, on the simulated clock
		Now:        clock.Now,
	})
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, p.Close()) }()
	hs, ct := mcp.NewInMemoryTransports()
	if _, err := p.Server().Connect(ctx, hs, nil); err != nil {
		return nil, err
	}
	host, err := mcp.NewClient(&mcp.Implementation{Name: "host", Version: "v1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		return nil, err
	}
	defer func() { err = errors.Join(err, host.Close()) }()

	step := time.Hour / time.Duration(rate)
	var out []reading
	lastSweep := clock.Now()
	calls := 0
	for h := 1; h <= days*24; h++ {
		for range rate {
			calls++
			res, err := host.CallTool(ctx, &mcp.CallToolParams{Name: "create_payment", Arguments: map[string]any{
				"amount_cents": 1000 + calls%9000, "currency": "EUR", "payee": fmt.Sprintf("payee-%d", calls), "memo": "invoice " + fmt.Sprint(calls),
			}})
			if err != nil || res.IsError {
				return nil, fmt.Errorf("call %d: %v %v", calls, err, res)
			}
			now := clock.Advance(step)
			if purge && now.Sub(lastSweep) >= time.Minute {
				p.Sweep(ctx)
				lastSweep = now
			}
		}
		if h%every == 0 {
			r, err := read(ctx, path)
			if err != nil {
				return nil, err
			}
			r.hours, r.calls = h, calls
			out = append(out, r)
		}
	}
	return out, nil
}

// read checkpoints the ledger and reads its size and rows.
func read(ctx context.Context, path string) (reading, error) {
	// The call events still queued in the proxy's client (less than one
	// batch; they are written in the background) are not counted yet.
	db, err := sql.Open("sqlite3", "file:"+path)
	if err != nil {
		return reading{}, err
	}
	// The checkpoint and the counts are in when it closes: closing
	// changes no figure.
	defer func() { _ = db.Close() }()
	var r reading
	if _, err := db.ExecContext(ctx, `PRAGMA wal_checkpoint(TRUNCATE)`); err != nil {
		return reading{}, err
	}
	if err := db.QueryRowContext(ctx, `SELECT (SELECT count(*) FROM records), (SELECT count(*) FROM events)`).Scan(&r.records, &r.events); err != nil {
		return reading{}, err
	}
	for _, f := range []string{path, path + "-wal"} {
		if fi, err := os.Stat(f); err == nil {
			r.bytes += fi.Size()
		}
	}
	return r, nil
}

// upstream is a payments-like server: create_payment answers with the
// payment's text and structured content, as the payments example does.
func upstream() *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "payments", Version: "v1"}, nil)
	type in struct {
		AmountCents int    `json:"amount_cents"`
		Currency    string `json:"currency"`
		Payee       string `json:"payee"`
		Memo        string `json:"memo,omitempty"`
	}
	type payment struct {
		PaymentID   string `json:"payment_id"`
		AmountCents int    `json:"amount_cents"`
		Currency    string `json:"currency"`
		Payee       string `json:"payee"`
		Memo        string `json:"memo,omitempty"`
		CreatedAt   string `json:"created_at"`
	}
	var mu sync.Mutex // guards n
	n := 0
	destructive := true
	mcp.AddTool(s, &mcp.Tool{Name: "create_payment", Annotations: &mcp.ToolAnnotations{DestructiveHint: &destructive}},
		func(_ context.Context, _ *mcp.CallToolRequest, a in) (*mcp.CallToolResult, payment, error) {
			mu.Lock()
			n++
			id := fmt.Sprintf("pay_%016x", n*2654435761)
			mu.Unlock()
			p := payment{PaymentID: id, AmountCents: a.AmountCents, Currency: a.Currency, Payee: a.Payee, Memo: a.Memo,
				CreatedAt: time.Now().UTC().Format(time.RFC3339Nano)}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{
				Text: fmt.Sprintf("payment %s: %d.%02d %s to %s", id, a.AmountCents/100, a.AmountCents%100, a.Currency, a.Payee),
			}}}, p, nil
		})
	return s
}

func mib(b int64) string {
	if b < 1<<20 {
		return fmt.Sprintf("%.0f KiB", float64(b)/(1<<10))
	}
	return fmt.Sprintf("%.1f MiB", float64(b)/(1<<20))
}

// simClock is a clock the run advances.
type simClock struct {
	mu sync.Mutex // guards t
	t  time.Time
}

func (c *simClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *simClock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sort"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/internal/payments"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// replicaAnswer is one call's outcome as a client saw it.
type replicaAnswer struct {
	replica int
	key     int
	body    string       // the result as JSON, without the replay marker
	marker  *wire.Replay // nil when this call ran the handler
}

// TestReplicasShareOneLedger runs two payments server processes, each with
// its own payments database, in front of one downstream, and sends every
// key to both at once. Only the idempotency ledger can stop the second
// replica from paying again: the payments table's unique key lives in each
// replica's own database. With a shared PostgreSQL ledger each key pays
// once and both replicas answer with that one payment; with a SQLite ledger
// per replica (the control) each key pays twice, which shows the counts
// below can tell the two apart.
func TestReplicasShareOneLedger(t *testing.T) {
	cases := []struct {
		name   string
		ledger func(t *testing.T) string // "" gives each replica its own SQLite ledger
		want   int                       // payments, fresh answers and distinct results per key
	}{
		{"one postgres ledger pays once", func(t *testing.T) string { return pgtest.Schema(t) }, 1},
		{"a sqlite ledger each pays twice", func(*testing.T) string { return "" }, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			runReplicas(t, tc.ledger(t), tc.want)
		})
	}
}

func runReplicas(t *testing.T, ledgerURL string, want int) {
	const (
		replicas = 2
		sessions = 2 // per replica
		keys     = 16
	)
	dir := t.TempDir()
	down := filepath.Join(dir, "p.downstream.db")
	dbs := make([]string, replicas)
	urls := make([]string, replicas)
	for r := range replicas {
		dbs[r] = filepath.Join(dir, fmt.Sprintf("replica%d.db", r))
		// A long -wait: under -race a duplicate on the other replica may
		// wait a while for the winner, and -31002 would end the call.
		args := []string{"-db", dbs[r], "-downstream", down, "-wait", "30s"}
		if ledgerURL != "" {
			args = append(args, "-ledger", ledgerURL)
		}
		urls[r] = startHTTP(t, nil, args...)
	}
	keyName := func(k int) string { return fmt.Sprintf("replica-key-%02d", k) }

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var clients []struct {
		replica int
		cs      *mcp.ClientSession
	}
	for r, url := range urls {
		for range sessions {
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "v1"}, nil).
				Connect(ctx, &mcp.StreamableClientTransport{Endpoint: url}, nil)
			if err != nil {
				t.Fatalf("connect to replica %d at %s: %v", r, url, err)
			}
			defer cs.Close()
			clients = append(clients, struct {
				replica int
				cs      *mcp.ClientSession
			}{r, cs})
		}
	}

	// Every session calls every key at once, so each key races on both
	// replicas. Each goroutine owns one slot of answers.
	answers := make([]replicaAnswer, len(clients)*keys)
	var fresh, replayed [keys]atomic.Int64
	start := make(chan struct{})
	var wg sync.WaitGroup
	for c, cl := range clients {
		for k := range keys {
			slot := &answers[c*keys+k]
			wg.Go(func() {
				<-start
				res, err := cl.cs.CallTool(ctx, payParams(keyName(k)))
				if err != nil {
					t.Errorf("replica %d: CallTool(%s) = %v; want a payment", cl.replica, keyName(k), err)
					return
				}
				a, err := answerOf(res)
				if err != nil {
					t.Errorf("replica %d: result of %s: %v", cl.replica, keyName(k), err)
					return
				}
				a.replica, a.key = cl.replica, k
				if a.marker == nil {
					fresh[k].Add(1)
				} else {
					replayed[k].Add(1)
				}
				*slot = a
			})
		}
	}
	close(start)
	wg.Wait()
	if t.Failed() {
		t.FailNow()
	}

	// Payments made, per key and replica, from the replicas' own databases.
	paid := make([]map[string]int, replicas)
	total := 0
	for r := range replicas {
		paid[r] = countByKey(t, dbs[r], "payments")
		for _, n := range paid[r] {
			total += n
		}
	}
	var totalFresh, totalReplayed, elsewhere int64
	for k := range keys {
		key := keyName(k)
		made := 0
		for r := range replicas {
			made += paid[r][key]
		}
		if made != want {
			t.Errorf("key %s: %d payments across %d replicas (%d, %d); want %d", key, made, replicas, paid[0][key], paid[1][key], want)
		}
		if got := fresh[k].Load(); got != int64(want) {
			t.Errorf("key %s: %d answers ran the handler; want %d", key, got, want)
		}
		totalFresh += fresh[k].Load()
		totalReplayed += replayed[k].Load()
	}
	if total != keys*want {
		t.Errorf("%d payments in all; want %d (%d keys × %d), no stray keys", total, keys*want, keys, want)
	}

	bodies := make([]map[string]int, keys)    // result JSON -> answers with it
	answered := make([][replicas]int, keys)   // answers per replica
	freshFrom := make([][replicas]bool, keys) // replicas whose answer ran the handler
	for i := range bodies {
		bodies[i] = map[string]int{}
	}
	for _, a := range answers {
		bodies[a.key][a.body]++
		answered[a.key][a.replica]++
		if a.marker == nil {
			freshFrom[a.key][a.replica] = true
			continue
		}
		if paid[a.replica][keyName(a.key)] == 0 {
			elsewhere++ // a replay of a payment another replica made
		}
		if a.marker.Key != keyName(a.key) || a.marker.State != ledger.StateSucceeded {
			t.Errorf("replica %d: replay marker for %s = %+v; want key %s, state SUCCEEDED", a.replica, keyName(a.key), *a.marker, keyName(a.key))
		}
	}
	for k := range keys {
		key := keyName(k)
		if len(bodies[k]) != want {
			t.Errorf("key %s: %d different results over %d answers; want %d: %v", key, len(bodies[k]), len(clients), want, sortedKeys(bodies[k]))
		}
		for r := range replicas {
			if answered[k][r] != sessions {
				t.Errorf("key %s: replica %d answered %d calls; want %d", key, r, answered[k][r], sessions)
			}
			// The replica that answered fresh is the one that holds the
			// payment; any other answer was a replay.
			if has := paid[r][key] == 1; freshFrom[k][r] != has {
				t.Errorf("key %s: replica %d ran the handler for a client = %v, holds the payment = %v; want them equal", key, r, freshFrom[k][r], has)
			}
		}
	}

	// Each payment enqueued exactly one payment.created in its own
	// transaction; the dispatchers deliver on their own schedule, so poll
	// until the shared downstream applied as many events as there are
	// payments, then check them per key.
	applied := waitApplied(t, down, total)
	for k := range keys {
		if got := applied[keyName(k)]; got != want {
			t.Errorf("key %s: downstream applied %d events; want %d", keyName(k), got, want)
		}
	}

	if ledgerURL != "" {
		checkLedger(t, ledgerURL, keys, keyName)
	}
	t.Logf("%d replicas, %d sessions, %d keys: %d calls, %d ran the handler, %d replays (%d of a payment made by the other replica), %d payments, %d applied downstream",
		replicas, len(clients), keys, len(answers), totalFresh, totalReplayed, elsewhere, total, sum(applied))
}

// answerOf splits a result into its JSON without the replay marker and the
// marker itself.
func answerOf(res *mcp.CallToolResult) (replicaAnswer, error) {
	var a replicaAnswer
	if res.IsError {
		return a, fmt.Errorf("tool error: %v", res.Content)
	}
	cp := *res
	cp.Meta = nil
	for k, v := range res.Meta {
		if k == wire.MetaReplay {
			raw, err := json.Marshal(v)
			if err != nil {
				return a, err
			}
			a.marker = new(wire.Replay)
			if err := json.Unmarshal(raw, a.marker); err != nil {
				return a, fmt.Errorf("replay marker %s: %w", raw, err)
			}
			continue
		}
		if cp.Meta == nil {
			cp.Meta = mcp.Meta{}
		}
		cp.Meta[k] = v
	}
	b, err := json.Marshal(&cp)
	if err != nil {
		return a, err
	}
	a.body = string(b)
	return a, nil
}

// countByKey counts the rows of table (payments, or the downstream's
// applied) per idempotency key, reading the SQLite file a server process
// may still be writing.
func countByKey(t *testing.T, path, table string) map[string]int {
	t.Helper()
	db, err := sql.Open("sqlite3", "file:"+path+"?_busy_timeout=10000")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rows, err := db.Query(`SELECT idempotency_key, count(*) FROM ` + table + ` GROUP BY idempotency_key`)
	if err != nil {
		t.Fatalf("count %s in %s: %v", table, path, err)
	}
	defer rows.Close()
	n := map[string]int{}
	for rows.Next() {
		var key sql.NullString
		var c int
		if err := rows.Scan(&key, &c); err != nil {
			t.Fatal(err)
		}
		n[key.String] += c
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return n
}

// waitApplied polls the downstream until it applied total events.
func waitApplied(t *testing.T, path string, total int) map[string]int {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		n := countByKey(t, path, "applied")
		if got := sum(n); got >= total {
			if got > total {
				t.Errorf("downstream applied %d events; want %d, one per payment", got, total)
			}
			return n
		}
		if time.Now().After(deadline) {
			t.Fatalf("downstream applied %d events after 30s; want %d", sum(n), total)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// checkLedger reads the shared ledger: one SUCCEEDED record per key.
func checkLedger(t *testing.T, url string, keys int, keyName func(int) string) {
	t.Helper()
	ctx := context.Background()
	st, err := postgres.Open(ctx, url, nil)
	if err != nil {
		t.Fatalf("postgres.Open: %v", err)
	}
	defer st.Close()
	for k := range keys {
		id := ledger.ID{Layer: ledger.LayerServer, Tenant: server.DefaultTenant, Tool: payments.ToolCreate, Key: keyName(k)}
		rec, err := st.Get(ctx, id)
		if err != nil || rec.State != ledger.StateSucceeded {
			t.Errorf("Get(%q) = %v, %v; want SUCCEEDED", id.Key, rec, err)
		}
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

func sortedKeys(m map[string]int) []string {
	s := make([]string, 0, len(m))
	for k := range m {
		s = append(s, k)
	}
	sort.Strings(s)
	return s
}

package aesgcm_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/codec/aesgcm"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// A backend is a real Store that can be opened again (as a new process
// would) and read at rest, below the Store: the SQLite file with its WAL,
// or the PostgreSQL rows.
type backend struct {
	name string
	// open opens the backend's one ledger; each call gives a new Store.
	open func(t *testing.T) ledger.Store
	// raw returns every byte the ledger keeps at rest.
	raw func(t *testing.T) []byte
}

func sqliteBackend(t *testing.T) backend {
	path := filepath.Join(t.TempDir(), "ledger.db")
	return backend{
		name: "sqlite",
		open: func(t *testing.T) ledger.Store {
			st, err := sqlite.Open(context.Background(), path, nil)
			if err != nil {
				t.Fatalf("sqlite.Open = %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		raw: func(t *testing.T) []byte {
			var all []byte
			for _, suffix := range []string{"", "-wal", "-shm", "-journal"} {
				b, err := os.ReadFile(path + suffix)
				if err != nil && !errors.Is(err, os.ErrNotExist) {
					t.Fatal(err)
				}
				all = append(all, b...)
			}
			return all
		},
	}
}

func postgresBackend(t *testing.T) backend {
	url := pgtest.Schema(t)
	return backend{
		name: "postgres",
		open: func(t *testing.T) ledger.Store {
			st, err := postgres.Open(context.Background(), url, nil)
			if err != nil {
				t.Fatalf("postgres.Open = %v", err)
			}
			t.Cleanup(func() { st.Close() })
			return st
		},
		raw: func(t *testing.T) []byte { return pgRaw(t, url) },
	}
}

// run runs body once per backend, each with a fresh ledger.
func run(t *testing.T, body func(t *testing.T, b backend)) {
	t.Run("sqlite", func(t *testing.T) { body(t, sqliteBackend(t)) })
	t.Run("postgres", func(t *testing.T) { body(t, postgresBackend(t)) })
}

// pgRaw reads every record row: the payload columns as bytes, and the
// whole row as PostgreSQL prints it.
func pgRaw(t *testing.T, url string) []byte {
	t.Helper()
	conn, err := pgx.Connect(context.Background(), url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	rows, err := conn.Query(context.Background(), `SELECT coalesce(arguments, ''), coalesce(result, ''), r::text FROM records r`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var all []byte
	for rows.Next() {
		var args, res []byte
		var row string
		if err := rows.Scan(&args, &res, &row); err != nil {
			t.Fatal(err)
		}
		all = append(append(append(all, args...), res...), row...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return all
}

// echoClient is a client.Client over a real in-memory MCP session with a
// server whose one tool, "echo", returns its arguments as text and as
// structured content.
func echoClient(t *testing.T, st ledger.Store) *client.Client {
	t.Helper()
	srv := mcp.NewServer(&mcp.Implementation{Name: "echo", Version: "v1"}, nil)
	srv.AddTool(&mcp.Tool{Name: "echo", InputSchema: map[string]any{"type": "object"}},
		func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return &mcp.CallToolResult{
				Content:           []mcp.Content{&mcp.TextContent{Text: "echo " + string(req.Params.Arguments)}},
				StructuredContent: req.Params.Arguments,
			}, nil
		})
	ct, serverT := mcp.NewInMemoryTransports()
	ss, err := srv.Connect(context.Background(), serverT, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { ss.Close() })
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	c := client.New(cs, st, &client.Options{Policy: &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}})
	t.Cleanup(func() { c.Close() })
	return c
}

func echo(key, note string) (context.Context, *mcp.CallToolParams) {
	return client.WithKey(context.Background(), key), &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{
		"note": note, "amount": 12.50, "to": "acct-" + note,
	}}
}

func TestEncryptedAtRestAndReplayedByteForByte(t *testing.T) {
	run(t, func(t *testing.T, b backend) {
		keys := keyring(t, newKey(t))
		const clear, sealed = "plainzebra4471", "sealedzebra9026"

		// A control: without a codec the raw reading does see arguments
		// and results, so the check below can fail.
		plain := echoClient(t, b.open(t))
		if _, err := plain.Call(echo("order-plain", clear)); err != nil {
			t.Fatalf("Call(plain) = %v", err)
		}
		if n := bytes.Count(b.raw(t), []byte(clear)); n < 2 {
			t.Fatalf("the raw %s ledger holds %q %d times; want it in clear in arguments and result", b.name, clear, n)
		}

		c := echoClient(t, codec.Wrap(b.open(t), keys))
		first, err := c.Call(echo("order-sealed", sealed))
		if err != nil {
			t.Fatalf("Call = %v", err)
		}
		if first.Replayed || !strings.Contains(string(first.Record.Result), sealed) {
			t.Fatalf("Call = replayed %v, result %s; want a fresh execution echoing %q", first.Replayed, first.Record.Result, sealed)
		}
		raw := b.raw(t)
		if bytes.Contains(raw, []byte(sealed)) || bytes.Contains(raw, []byte("acct-"+sealed)) {
			t.Fatalf("the raw %s ledger holds %q in clear", b.name, sealed)
		}
		if !bytes.Contains(raw, []byte(`{"mcpledger/encrypted":1,"alg":"A256GCM","kid":"`+keys.CurrentKeyID())) {
			t.Fatalf("the raw %s ledger holds no envelope of key %s", b.name, keys.CurrentKeyID())
		}

		// A new process: a new Store and client, so the replay comes from
		// the stored, sealed bytes.
		again := echoClient(t, codec.Wrap(b.open(t), keys))
		second, err := again.Call(echo("order-sealed", sealed))
		if err != nil {
			t.Fatalf("repeat Call = %v", err)
		}
		if !second.Replayed {
			t.Fatalf("repeat Call ran the tool again; want a replay")
		}
		if !bytes.Equal(second.Record.Result, first.Record.Result) {
			t.Fatalf("replayed result %s; want the first result byte for byte: %s", second.Record.Result, first.Record.Result)
		}
		if !bytes.Equal(second.Record.Arguments, first.Record.Arguments) {
			t.Fatalf("replayed arguments %s; want %s", second.Record.Arguments, first.Record.Arguments)
		}
		got, want := second.Result.Content[0].(*mcp.TextContent).Text, first.Result.Content[0].(*mcp.TextContent).Text
		if got != want {
			t.Fatalf("replayed text %q; want %q", got, want)
		}
	})
}

// seed writes n settled records through st, keyed prefix-a, prefix-b, …,
// each with arguments and a result that name marker.
func seed(t *testing.T, st ledger.Store, n int, prefix, marker string) []ledger.ID {
	t.Helper()
	ctx := context.Background()
	var ids []ledger.ID
	for i := range n {
		id := ledger.ID{Tenant: "acme", Tool: "pay", Key: prefix + "-" + string(rune('a'+i))}
		doc := json.RawMessage(`{"note":"` + marker + `","i":` + string(rune('0'+i)) + `}`)
		fp, err := args.Fingerprint(doc)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "w"}); err != nil {
			t.Fatalf("Claim = %v", err)
		}
		res := json.RawMessage(`{"content":[{"type":"text","text":"paid ` + marker + `"}]}`)
		if _, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1, Result: res}); err != nil {
			t.Fatalf("Transition = %v", err)
		}
		ids = append(ids, id)
	}
	return ids
}

// stored reads every record's payloads as the Store keeps them.
func stored(t *testing.T, st ledger.Store) map[ledger.ID][2]string {
	t.Helper()
	out := map[ledger.ID][2]string{}
	_, err := ledger.Unwrap(st).(ledger.PayloadRewriter).RewritePayloads(context.Background(), func(id ledger.ID, a, r []byte) ([]byte, []byte, bool, error) {
		out[id] = [2]string{string(a), string(r)}
		return nil, nil, false, nil
	})
	if err != nil {
		t.Fatalf("RewritePayloads = %v", err)
	}
	return out
}

func TestRotation(t *testing.T) {
	run(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		a, bk := newKey(t), newKey(t)
		base := b.open(t)
		plainIDs := seed(t, base, 2, "p", "plainleft")
		oldIDs := seed(t, codec.Wrap(base, keyring(t, a)), 3, "o", "oldkeyed")

		both := codec.Wrap(base, keyring(t, bk, a))
		newIDs := seed(t, both, 1, "n", "newkeyed")
		for _, id := range append(append(append([]ledger.ID(nil), plainIDs...), oldIDs...), newIDs...) {
			r, err := both.Get(ctx, id)
			if err != nil {
				t.Fatalf("Get(%s) with [new, old] = %v", id.Key, err)
			}
			if !json.Valid(r.Arguments) || !strings.Contains(string(r.Result), "paid") {
				t.Fatalf("Get(%s) = args %s result %s; want them opened", id.Key, r.Arguments, r.Result)
			}
		}

		rep, err := codec.Rekey(ctx, base.(ledger.PayloadRewriter), keyring(t, bk, a))
		if err != nil {
			t.Fatalf("Rekey = %v", err)
		}
		if rep.Records != 6 || rep.Rewritten != 5 || rep.Plain != 4 || rep.Current != 2 {
			t.Fatalf("Rekey = %+v; want 6 records, 5 rewritten, 4 plain payloads, 2 already current", rep)
		}
		for id, p := range stored(t, base) {
			for _, payload := range p {
				s, ok, err := codec.SealedOf([]byte(payload))
				if !ok || err != nil || s.KeyID != aesgcm.KeyID(bk) {
					t.Fatalf("after Rekey, %s is stored as %.60s; want sealed with key %s", id.Key, payload, aesgcm.KeyID(bk))
				}
			}
		}
		raw := b.raw(t)
		for _, m := range []string{"plainleft", "oldkeyed", "newkeyed"} {
			if bytes.Contains(raw, []byte(m)) {
				t.Errorf("after Rekey the raw %s ledger holds %q in clear", b.name, m)
			}
		}

		onlyNew := codec.Wrap(b.open(t), keyring(t, bk))
		for _, id := range oldIDs {
			r, err := onlyNew.Get(ctx, id)
			if err != nil || !strings.Contains(string(r.Result), "paid oldkeyed") {
				t.Fatalf("Get(%s) with the new key alone = %v; want the rekeyed record", id.Key, err)
			}
		}
		onlyOld := codec.Wrap(b.open(t), keyring(t, a))
		if _, err := onlyOld.Get(ctx, oldIDs[0]); !errors.Is(err, codec.ErrNoKey) {
			t.Fatalf("Get with the retired key alone = %v; want ErrNoKey", err)
		}
		// A second rekey has nothing left to do.
		rep, err = codec.Rekey(ctx, base.(ledger.PayloadRewriter), keyring(t, bk))
		if err != nil || rep.Rewritten != 0 || rep.Current != 12 {
			t.Fatalf("second Rekey = %+v, %v; want nothing rewritten, 12 payloads current", rep, err)
		}
	})
}

func TestWrongKey(t *testing.T) {
	run(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		base := b.open(t)
		right := keyring(t, newKey(t))
		ids := seed(t, codec.Wrap(base, right), 3, "r", "rightkey")
		before := stored(t, base)

		wrong := keyring(t, newKey(t))
		st := codec.Wrap(b.open(t), wrong)
		_, err := st.Get(ctx, ids[0])
		if !errors.Is(err, codec.ErrNoKey) || !strings.Contains(err.Error(), right.CurrentKeyID()) || strings.Contains(err.Error(), "\n") {
			t.Fatalf("Get with the wrong key = %v; want one line wrapping ErrNoKey naming key id %s", err, right.CurrentKeyID())
		}
		// A repeat of the call with the wrong key fails; it does not run
		// again or replace the record.
		doc := json.RawMessage(`{"note":"rightkey","i":0}`)
		fp, _ := args.Fingerprint(doc)
		if c, err := st.Claim(ctx, ledger.ClaimRequest{ID: ids[0], Fingerprint: fp, Arguments: doc, Owner: "x"}); !errors.Is(err, codec.ErrNoKey) || c.Won {
			t.Fatalf("Claim with the wrong key = won %v, %v; want ErrNoKey", c.Won, err)
		}
		// Listing still works and says what it cannot show.
		page, err := st.List(ctx, ledger.Filter{Tenant: "acme"})
		if err != nil || len(page.Records) != 3 {
			t.Fatalf("List with the wrong key = %d records, %v; want 3", len(page.Records), err)
		}
		for _, r := range page.Records {
			if string(r.Arguments) != `"[encrypted]"` || string(r.Result) != `"[encrypted]"` {
				t.Fatalf("List shows %s / %s; want [encrypted] for both", r.Arguments, r.Result)
			}
		}
		// Without any key, the same.
		page, err = codec.Wrap(b.open(t), nil).List(ctx, ledger.Filter{Tenant: "acme"})
		if err != nil || len(page.Records) != 3 || string(page.Records[0].Result) != `"[encrypted]"` {
			t.Fatalf("List without a key = %v; want 3 records shown [encrypted]", err)
		}
		if _, err := codec.Wrap(b.open(t), nil).Get(ctx, ids[1]); !errors.Is(err, codec.ErrNoKey) || !strings.Contains(err.Error(), "no ledger key is configured") {
			t.Fatalf("Get without a key = %v; want ErrNoKey saying no key is configured", err)
		}

		if _, err := codec.Rekey(ctx, base.(ledger.PayloadRewriter), wrong); !errors.Is(err, codec.ErrNoKey) || !strings.Contains(err.Error(), "nothing was rewritten") {
			t.Fatalf("Rekey with the wrong key = %v; want ErrNoKey and nothing rewritten", err)
		}
		after := stored(t, base)
		if len(after) != len(before) {
			t.Fatalf("after the failed Rekey %d records; want %d", len(after), len(before))
		}
		for id, p := range before {
			if after[id] != p {
				t.Fatalf("the failed Rekey changed %s", id.Key)
			}
		}
		for _, id := range ids {
			if r, err := codec.Wrap(base, right).Get(ctx, id); err != nil || r.State != ledger.StateSucceeded {
				t.Fatalf("Get(%s) with the right key = %v; want the record as it was", id.Key, err)
			}
		}
	})
}

// racer is a real store's PayloadRewriter with a hook that runs another
// writer's change just before the walk hands a record to Rekey.
type racer struct {
	ledger.PayloadRewriter
	calls  int
	before func(call int, id ledger.ID)
}

func (r *racer) RewritePayloads(ctx context.Context, fn ledger.RewriteFunc) (int, error) {
	r.calls++
	call := r.calls
	return r.PayloadRewriter.RewritePayloads(ctx, func(id ledger.ID, a, res []byte) ([]byte, []byte, bool, error) {
		r.before(call, id)
		return fn(id, a, res)
	})
}

func TestRekeyBesideAWriter(t *testing.T) {
	run(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		base := b.open(t)
		keys := keyring(t, newKey(t))
		seed(t, base, 3, "s", "settledplain")
		busy := ledger.ID{Tenant: "acme", Tool: "pay", Key: "busy"}
		doc := json.RawMessage(`{"note":"busyplain"}`)
		fp, _ := args.Fingerprint(doc)
		if _, err := base.Claim(ctx, ledger.ClaimRequest{ID: busy, Fingerprint: fp, Arguments: doc, Owner: "w"}); err != nil {
			t.Fatal(err)
		}
		other := codec.Wrap(base, keys) // the running process
		res := json.RawMessage(`{"content":[{"type":"text","text":"done by the other writer"}]}`)
		r := &racer{PayloadRewriter: base.(ledger.PayloadRewriter), before: func(call int, id ledger.ID) {
			if call == 2 && id == busy {
				if _, err := other.Transition(ctx, ledger.Transition{ID: busy, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1, Result: res}); err != nil {
					t.Errorf("Transition beside Rekey = %v", err)
				}
			}
		}}
		rep, err := codec.Rekey(ctx, r, keys)
		if err != nil {
			t.Fatalf("Rekey = %v", err)
		}
		if rep.Rewritten != 4 || rep.Skipped != 0 || r.calls != 3 {
			t.Fatalf("Rekey = %+v in %d walks; want all 4 records rewritten, the raced one in a second rewrite pass", rep, r.calls)
		}
		got, err := other.Get(ctx, busy)
		if err != nil || string(got.Result) != string(res) || string(got.Arguments) != string(doc) || got.State != ledger.StateSucceeded {
			t.Fatalf("Get(busy) = %+v, %v; want the other writer's result kept and the arguments opened", got, err)
		}
		for id, p := range stored(t, base) {
			for _, payload := range p {
				if s, ok, _ := codec.SealedOf([]byte(payload)); !ok || s.KeyID != keys.CurrentKeyID() {
					t.Fatalf("after Rekey %s is stored as %.40s; want it sealed", id.Key, payload)
				}
			}
		}
	})
}

// TestConcurrentCallsOneExecution: many callers of one key through one
// encrypted ledger run the tool once and all get the same bytes.
func TestConcurrentCallsOneExecution(t *testing.T) {
	run(t, func(t *testing.T, b backend) {
		keys := keyring(t, newKey(t))
		var runs atomic.Int64
		srv := mcp.NewServer(&mcp.Implementation{Name: "count", Version: "v1"}, nil)
		srv.AddTool(&mcp.Tool{Name: "charge", InputSchema: map[string]any{"type": "object"}},
			func(_ context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
				n := runs.Add(1)
				return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("charged, run %d, %s", n, req.Params.Arguments)}}}, nil
			})
		// Two agents, each with its own Store on the one ledger, as two
		// processes would be: followers of the other agent's call wait on
		// the stored record and decrypt it.
		var agents []*client.Client
		for range 2 {
			ct, serverT := mcp.NewInMemoryTransports()
			ss, err := srv.Connect(context.Background(), serverT, nil)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() { ss.Close() })
			cs, err := mcp.NewClient(&mcp.Implementation{Name: "t", Version: "v1"}, nil).Connect(context.Background(), ct, nil)
			if err != nil {
				t.Fatal(err)
			}
			c := client.New(cs, codec.Wrap(b.open(t), keys), &client.Options{Policy: &confirm.Policy{Rules: []confirm.Rule{{Tool: "*", Action: confirm.Allow}}}})
			t.Cleanup(func() { c.Close() })
			agents = append(agents, c)
		}

		const callers = 8
		results := make([]json.RawMessage, callers)
		var wg sync.WaitGroup
		for i := range callers {
			wg.Go(func() {
				o, err := agents[i%2].Call(client.WithKey(context.Background(), "charge-1"), &mcp.CallToolParams{Name: "charge", Arguments: map[string]any{"amount": 5}})
				if err != nil {
					t.Errorf("Call %d = %v", i, err)
					return
				}
				results[i] = o.Record.Result
			})
		}
		wg.Wait()
		if n := runs.Load(); n != 1 {
			t.Fatalf("the tool ran %d times for one key; want 1", n)
		}
		for i, r := range results {
			if !bytes.Equal(r, results[0]) {
				t.Fatalf("caller %d got %s; want the same bytes as caller 0: %s", i, r, results[0])
			}
		}
	})
}

// TestTakeOverWithAnotherKey: a record that never ran (RETRYABLE), sealed
// with a key this process lacks, is not taken over by a process with
// another key (its key does not match the ledger, and it says so), and
// nothing is left stranded in PROCESSING; a process whose key file holds
// the ledger's key too takes it over and runs its own arguments.
func TestTakeOverWithAnotherKey(t *testing.T) {
	run(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		base := b.open(t)
		firstKey := newKey(t)
		first := codec.Wrap(base, keyring(t, firstKey))
		id := ledger.ID{Tenant: "acme", Tool: "pay", Key: "retry-1"}
		doc := json.RawMessage(`{"amount":5}`)
		fp, _ := args.Fingerprint(doc)
		if _, err := first.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "a"}); err != nil {
			t.Fatal(err)
		}
		if _, err := first.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateRetryable, Owner: "a", Fence: 1, ErrorKind: "unsent"}); err != nil {
			t.Fatal(err)
		}
		other := codec.Wrap(base, keyring(t, newKey(t)))
		if c, err := other.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "b"}); !errors.Is(err, codec.ErrKeyMismatch) || c.Won {
			t.Fatalf("Claim with another key = won %v, %v; want ErrKeyMismatch", c.Won, err)
		}
		if r, err := base.Get(ctx, id); err != nil || r.State != ledger.StateRetryable {
			t.Fatalf("after the refused claim: %+v, %v; want the record RETRYABLE as it was", r, err)
		}
		rotated := codec.Wrap(base, keyring(t, newKey(t), firstKey))
		c, err := rotated.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "b"})
		if err != nil || !c.Won {
			t.Fatalf("Claim of a RETRYABLE record with a key file that holds its key = won %v, %v; want the take-over", c.Won, err)
		}
		res := json.RawMessage(`{"content":[]}`)
		done, err := rotated.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "b", Fence: c.Record.Fence, Result: res})
		if err != nil || done.State != ledger.StateSucceeded || string(done.Result) != string(res) {
			t.Fatalf("Transition after the take-over = %+v, %v; want SUCCEEDED with the result", done, err)
		}
	})
}

// A ledger that holds encrypted records takes no new call from a process
// without the key (nothing written in clear), nor from one with another
// key; the error names the key id the ledger needs.
func TestEncryptedLedgerRefusesOtherWriters(t *testing.T) {
	run(t, func(t *testing.T, b backend) {
		ctx := context.Background()
		plain := b.open(t)
		if err := codec.CheckKeys(ctx, plain, nil); err != nil {
			t.Fatalf("CheckKeys(empty ledger, no key) = %v; want nil", err)
		}
		rightKey := newKey(t)
		right := keyring(t, rightKey)
		seed(t, codec.Wrap(plain, right), 1, "r", "sealed")
		kid := right.CurrentKeyID()
		newCall := func(st ledger.Store, key string) error {
			doc := json.RawMessage(`{"note":"in clear?"}`)
			fp, _ := args.Fingerprint(doc)
			_, err := st.Claim(ctx, ledger.ClaimRequest{ID: ledger.ID{Tenant: "other", Tool: "pay", Key: key}, Fingerprint: fp, Arguments: doc, Owner: "x"})
			return err
		}
		if err := newCall(codec.Wrap(b.open(t), nil), "n-1"); !errors.Is(err, codec.ErrNoKey) || errors.Is(err, codec.ErrKeyMismatch) || !strings.Contains(err.Error(), kid) {
			t.Errorf("a new call without a key = %v; want ErrNoKey naming key id %s", err, kid)
		}
		wrong := keyring(t, newKey(t))
		if err := newCall(codec.Wrap(b.open(t), wrong), "n-2"); !errors.Is(err, codec.ErrKeyMismatch) || !strings.Contains(err.Error(), kid) || !strings.Contains(err.Error(), wrong.CurrentKeyID()) {
			t.Errorf("a new call with another key = %v; want ErrKeyMismatch naming key ids %s and %s", err, kid, wrong.CurrentKeyID())
		}
		if bytes.Contains(b.raw(t), []byte("in clear?")) {
			t.Fatal("a refused call left its arguments in the ledger")
		}
		both := keyring(t, newKey(t), rightKey)
		if err := newCall(codec.Wrap(b.open(t), both), "n-3"); err != nil {
			t.Errorf("a new call with a key file that holds the ledger's key = %v; want it written", err)
		}
		if bytes.Contains(b.raw(t), []byte("in clear?")) {
			t.Fatal("the accepted call was written in clear")
		}
	})
}

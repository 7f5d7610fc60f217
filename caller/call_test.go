package caller_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
	"github.com/mcpledger/mcpledger/retry"
	"github.com/mcpledger/mcpledger/wire"
)

// The orchestration of one call, from the claim to the answer, through a
// fake connection and a real SQLite ledger: what the caller sends, how
// often and under which key, what it records, and what it answers.

// params is the adapter's own request in these tests: its name only.
type params struct{ name string }

// result is the SDK's tool result in these tests.
type result struct {
	Meta    map[string]any `json:"_meta,omitempty"`
	Content []content      `json:"content"`
	IsError bool           `json:"isError,omitempty"`
}

type content struct {
	Type string `json:"type"`
	Text string `json:"text"`
}

func text(s string, isError bool) *result {
	return &result{Content: []content{{Type: "text", Text: s}}, IsError: isError}
}

// codec is the SDK side of result.
type codec struct{}

func (codec) Encode(r *result) (json.RawMessage, error) { return json.Marshal(r) }

func (codec) Decode(raw json.RawMessage) (*result, error) {
	var r result
	if err := json.Unmarshal(raw, &r); err != nil {
		return nil, err
	}
	return &r, nil
}

func (codec) Copy(*result) (*result, bool) { return nil, false }

func (codec) Mark(r *result, m wire.Replay) {
	meta := map[string]any{wire.MetaReplay: m}
	for k, v := range r.Meta {
		meta[k] = v
	}
	r.Meta = meta
}

func (codec) IsError(r *result) bool { return r.IsError }

func (codec) Meta(r *result) map[string]any { return r.Meta }

func (codec) Text(r *result) string {
	var b strings.Builder
	for _, c := range r.Content {
		b.WriteString(c.Text)
	}
	return b.String()
}

// conn is a fake connection made of function fields; a nil field answers
// as a server that lists no tools, says nothing of itself, and needs no
// repair. It keeps every attempt it was asked to send.
type conn struct {
	send   func(ctx context.Context, a *caller.Attempt[params]) (*result, json.RawMessage, error)
	tool   func(ctx context.Context, name string) (*caller.Tool, error)
	server func() caller.Server
	repair func(ctx context.Context, a *caller.Attempt[params], err error)

	mu       sync.Mutex // guards attempts and repairs
	attempts []caller.Attempt[params]
	repairs  int
}

func (c *conn) Send(ctx context.Context, a *caller.Attempt[params]) (*result, json.RawMessage, error) {
	a.Via = c // a connection was there to send on
	c.mu.Lock()
	c.attempts = append(c.attempts, *a)
	c.mu.Unlock()
	return c.send(ctx, a)
}

func (c *conn) Tool(ctx context.Context, name string) (*caller.Tool, error) {
	if c.tool == nil {
		return nil, nil
	}
	return c.tool(ctx, name)
}

func (c *conn) Server() caller.Server {
	if c.server == nil {
		return caller.Server{Name: "fake"}
	}
	return c.server()
}

func (c *conn) Repair(ctx context.Context, a *caller.Attempt[params], err error) {
	c.mu.Lock()
	c.repairs++
	c.mu.Unlock()
	if c.repair != nil {
		c.repair(ctx, a, err)
	}
}

func (c *conn) sent() []caller.Attempt[params] {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]caller.Attempt[params](nil), c.attempts...)
}

// answers is a send that gives each attempt the next answer, and fails
// the test past the last one.
func answers(t *testing.T, as ...func() (*result, error)) func(context.Context, *caller.Attempt[params]) (*result, json.RawMessage, error) {
	var mu sync.Mutex
	n := 0
	return func(context.Context, *caller.Attempt[params]) (*result, json.RawMessage, error) {
		mu.Lock()
		defer mu.Unlock()
		if n == len(as) {
			t.Errorf("attempt %d sent; the test expects %d", n+1, len(as))
			return nil, nil, errors.New("no more answers")
		}
		a := as[n]
		n++
		r, err := a()
		return r, nil, err
	}
}

func ok(s string) func() (*result, error) {
	return func() (*result, error) { return text(s, false), nil }
}
func toolSaysNo() func() (*result, error) {
	return func() (*result, error) { return text("no such account", true), nil }
}
func fails(err error) func() (*result, error) { return func() (*result, error) { return nil, err } }

// rpc is a JSON-RPC error answer as an adapter hands it over.
func rpc(code int64, reason string) error {
	var data json.RawMessage
	if reason != "" {
		data = json.RawMessage(fmt.Sprintf(`{"reason":%q}`, reason))
	}
	return &retry.RPCError{Code: code, Message: fmt.Sprintf("refused (%d)", code), Data: data}
}

// now is a timer that fires at once: retries never sleep.
type now struct{ c chan time.Time }

func (t *now) Start(time.Duration) { t.c = make(chan time.Time, 1); t.c <- time.Time{} }
func (t *now) Stop()               {}
func (t *now) C() <-chan time.Time { return t.c }

func newCaller(t *testing.T, cn *conn) (*caller.Caller[params, *result], ledger.Store) {
	t.Helper()
	st, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	c := caller.New[params, *result](st, &caller.Options{
		Tenant: "t", Session: "s",
		Retry: &retry.Policy{MaxAttempts: 3, Timer: &now{}},
	}, cn, codec{}, "caller-test")
	t.Cleanup(func() {
		if err := c.Close(); err != nil {
			t.Error(err)
		}
	})
	return c, st
}

func TestCall(t *testing.T) {
	const tool, key = "create_note", "k-1"
	keyAware := func() caller.Server { return caller.Server{Name: "fake", KeyAware: true} }
	tests := []struct {
		name   string
		server func() caller.Server
		answer []func() (*result, error)
		args   any
		// What the call answers: a result with this text (isError when
		// toolError), or an error that errors.Is each of wantErr.
		wantText  string
		toolError bool
		wantErr   []error
		// The record it leaves (none: "") with its error kind, and how
		// many requests were sent and repairs asked.
		wantState ledger.State
		wantKind  string
		wantSends int
		repairs   int
	}{
		{name: "new call succeeds", answer: []func() (*result, error){ok("noted")},
			wantText: "noted", wantState: ledger.StateSucceeded, wantSends: 1},
		{name: "the tool says no", answer: []func() (*result, error){toolSaysNo()},
			wantText: "no such account", toolError: true, wantState: ledger.StateFailed, wantSends: 1},
		{name: "transient failure retried under the same key",
			answer:   []func() (*result, error){fails(retry.Wrap(errors.New("closed"), retry.ErrConnectionClosed)), ok("noted")},
			wantText: "noted", wantState: ledger.StateSucceeded, wantSends: 2, repairs: 1},
		{name: "in progress at the server is retried",
			answer:   []func() (*result, error){fails(rpc(ledger.CodeInProgress, ledger.ReasonInProgress)), ok("noted")},
			wantText: "noted", wantState: ledger.StateSucceeded, wantSends: 2, repairs: 1},
		{name: "transient until the attempts run out",
			answer:  []func() (*result, error){fails(retry.ErrConnectionClosed), fails(retry.ErrConnectionClosed), fails(retry.ErrConnectionClosed)},
			wantErr: []error{caller.ErrNotSent}, wantState: ledger.StateRetryable, wantKind: "not_sent", wantSends: 3, repairs: 3},
		{name: "ambiguous failure is UNKNOWN", answer: []func() (*result, error){fails(io.ErrUnexpectedEOF)},
			wantErr: []error{caller.ErrOutcomeUnknown}, wantState: ledger.StateUnknown, wantKind: "ambiguous", wantSends: 1},
		{name: "ambiguous failure re-sent to a key-aware server", server: keyAware,
			answer:   []func() (*result, error){fails(io.ErrUnexpectedEOF), ok("noted")},
			wantText: "noted", wantState: ledger.StateSucceeded, wantSends: 2, repairs: 1},
		{name: "the server's outcome unknown", server: keyAware,
			answer:  []func() (*result, error){fails(rpc(ledger.CodeOutcomeUnknown, ledger.ReasonOutcomeUnknown))},
			wantErr: []error{caller.ErrOutcomeUnknown}, wantState: ledger.StateUnknown, wantKind: "server_outcome_unknown", wantSends: 1},
		{name: "invalid params refused before the tool ran", answer: []func() (*result, error){fails(rpc(ledger.CodeInvalidParams, ""))},
			wantErr: []error{caller.ErrRejected}, wantState: ledger.StateRejected, wantKind: "jsonrpc_-32602", wantSends: 1},
		{name: "unknown tool refused", answer: []func() (*result, error){fails(rpc(ledger.CodeMethodNotFound, ""))},
			wantErr: []error{caller.ErrRejected}, wantState: ledger.StateRejected, wantKind: "jsonrpc_-32601", wantSends: 1},
		{name: "key required refused", answer: []func() (*result, error){fails(rpc(ledger.CodeKeyRequired, ledger.ReasonKeyInvalid))},
			wantErr: []error{caller.ErrRejected}, wantState: ledger.StateRejected, wantKind: ledger.ReasonKeyInvalid, wantSends: 1},
		{name: "key reused at the server", answer: []func() (*result, error){fails(rpc(ledger.CodeKeyReused, ledger.ReasonKeyReused))},
			wantErr: []error{caller.ErrRejected, ledger.ErrKeyReused}, wantState: ledger.StateRejected, wantKind: ledger.ReasonKeyReused, wantSends: 1},
		{name: "arguments that are not an object", args: []int{1, 2},
			wantErr: []error{}, wantSends: 0},
		{name: "arguments that are not JSON", args: json.RawMessage(`{"amount":`),
			wantErr: []error{}, wantSends: 0},
		{name: "arguments too large", args: map[string]any{"note": strings.Repeat("x", 1<<20)},
			wantErr: []error{caller.ErrArgumentsTooLarge}, wantSends: 0},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cn := &conn{server: tc.server, send: answers(t, tc.answer...)}
			c, st := newCaller(t, cn)
			args := tc.args
			if args == nil {
				args = map[string]any{"note": "hello"}
			}
			ctx := caller.WithKey(context.Background(), key)
			o, err := c.Call(ctx, caller.Request[params]{Tool: tool, Arguments: args, Params: params{name: tc.name}})
			if tc.wantErr != nil {
				if err == nil {
					t.Fatalf("Call() = %+v, nil; want an error", o)
				}
				for _, want := range tc.wantErr {
					if !errors.Is(err, want) {
						t.Errorf("Call() = %v; want it to wrap %v", err, want)
					}
				}
				if tc.wantState != "" && !errors.Is(err, ledger.ErrKeyReused) {
					if got, named := caller.StateOf(err); !named || got != tc.wantState {
						t.Errorf("StateOf(Call()) = %s, %v; want %s", got, named, tc.wantState)
					}
				}
			} else {
				if err != nil {
					t.Fatalf("Call() = %v; want the result %q", err, tc.wantText)
				}
				if got := (codec{}).Text(o.Result); got != tc.wantText || o.Result.IsError != tc.toolError {
					t.Errorf("Call() result = %q, isError %v; want %q, %v", got, o.Result.IsError, tc.wantText, tc.toolError)
				}
				if o.Replayed || o.Key != key || o.Attempts != tc.wantSends {
					t.Errorf("Call() = replayed %v, key %q, %d attempts; want a new execution under %q in %d", o.Replayed, o.Key, o.Attempts, key, tc.wantSends)
				}
			}
			// The server sees the key scoped by the tenant, since it keeps
			// keys of one namespace.
			wireKey := wire.TenantKey("t", key)
			sent := cn.sent()
			if len(sent) != tc.wantSends {
				t.Errorf("%d requests sent; want %d", len(sent), tc.wantSends)
			}
			for i, a := range sent {
				if !a.Keyed || a.Key != wireKey || a.Tool != tool || a.Params.name != tc.name {
					t.Errorf("attempt %d: keyed %v, key %q, tool %q, params %+v; want key %q for %s and the adapter's own params", i+1, a.Keyed, a.Key, a.Tool, a.Params, wireKey, tool)
				}
				if i > 0 && a.Fence != sent[0].Fence {
					t.Errorf("attempt %d is fenced %+v, attempt 1 %+v; want every attempt under one lease", i+1, a.Fence, sent[0].Fence)
				}
			}
			if cn.repairs != tc.repairs {
				t.Errorf("%d repairs asked; want %d", cn.repairs, tc.repairs)
			}
			rec, err := st.Get(context.Background(), ledger.ID{Tenant: "t", Layer: ledger.LayerClient, Tool: tool, Key: key})
			switch {
			case tc.wantState == "" && !errors.Is(err, ledger.ErrNotFound):
				t.Errorf("record = %+v, %v; want none", rec, err)
			case tc.wantState == "":
			case err != nil:
				t.Fatalf("record: %v; want %s", err, tc.wantState)
			case rec.State != tc.wantState || rec.ErrorKind != tc.wantKind:
				t.Errorf("record is %s (%q); want %s (%q)", rec.State, rec.ErrorKind, tc.wantState, tc.wantKind)
			case rec.Attempts != tc.wantSends:
				t.Errorf("record counts %d attempts; want %d", rec.Attempts, tc.wantSends)
			}
		})
	}
}

// A repeat of a finished call, from this caller or another over the same
// ledger, gets the first result back with the replay marker, and sends
// nothing; a repeat of an UNKNOWN one is told so and sends nothing either.
func TestCallRepeat(t *testing.T) {
	const tool, key = "create_note", "k-1"
	tests := []struct {
		name      string
		first     func() (*result, error)
		wantText  string
		toolError bool
		wantErr   error
		wantState ledger.State
	}{
		{name: "succeeded", first: ok("noted"), wantText: "noted", wantState: ledger.StateSucceeded},
		{name: "failed", first: toolSaysNo(), wantText: "no such account", toolError: true, wantState: ledger.StateFailed},
		{name: "unknown", first: fails(io.ErrUnexpectedEOF), wantErr: caller.ErrOutcomeUnknown, wantState: ledger.StateUnknown},
	}
	for _, tc := range tests {
		for _, fresh := range []bool{false, true} {
			name := tc.name + "/same caller"
			if fresh {
				name = tc.name + "/another caller"
			}
			t.Run(name, func(t *testing.T) {
				cn := &conn{send: answers(t, tc.first)}
				c, st := newCaller(t, cn)
				ctx := caller.WithKey(context.Background(), key)
				req := caller.Request[params]{Tool: tool, Arguments: map[string]any{"note": "hello"}}
				if _, err := c.Call(ctx, req); (err != nil) != (tc.wantErr != nil) {
					t.Fatalf("first Call() = %v", err)
				}
				again := c
				if fresh {
					again = caller.New[params, *result](st, &caller.Options{Tenant: "t", Session: "s"}, cn, codec{}, "caller-test")
					defer again.Close()
				}
				o, err := again.Call(ctx, req)
				if len(cn.sent()) != 1 {
					t.Errorf("%d requests sent over both calls; want 1", len(cn.sent()))
				}
				if tc.wantErr != nil {
					if !errors.Is(err, tc.wantErr) {
						t.Fatalf("repeat Call() = %v, %v; want %v", o, err, tc.wantErr)
					}
					if st, _ := caller.StateOf(err); st != tc.wantState {
						t.Errorf("StateOf(repeat) = %s; want %s", st, tc.wantState)
					}
					var ce *caller.Error
					if !errors.As(err, &ce) || ce.Key != key || !strings.Contains(ce.Text, "Do not issue it again") {
						t.Errorf("repeat Call() = %#v; want a *caller.Error of key %s telling the model not to issue it again", err, key)
					}
					return
				}
				if err != nil {
					t.Fatalf("repeat Call() = %v; want the replay", err)
				}
				if got := (codec{}).Text(o.Result); !o.Replayed || got != tc.wantText || o.Result.IsError != tc.toolError || o.Attempts != 0 {
					t.Errorf("repeat Call() = replayed %v, %q, isError %v, %d attempts; want a replay of %q", o.Replayed, got, o.Result.IsError, o.Attempts, tc.wantText)
				}
				m, ok := o.Result.Meta[wire.MetaReplay].(wire.Replay)
				if !ok || m.Key != key || string(m.State) != string(tc.wantState) {
					t.Errorf("replay marker = %#v; want key %s, state %s", o.Result.Meta[wire.MetaReplay], key, tc.wantState)
				}
			})
		}
	}
}

// The same key with other arguments is refused before anything is sent,
// and the first record is untouched.
func TestCallKeyReused(t *testing.T) {
	const tool, key = "create_note", "k-1"
	cn := &conn{send: answers(t, ok("noted"))}
	c, st := newCaller(t, cn)
	ctx := caller.WithKey(context.Background(), key)
	if _, err := c.Call(ctx, caller.Request[params]{Tool: tool, Arguments: map[string]any{"note": "hello"}}); err != nil {
		t.Fatal(err)
	}
	_, err := c.Call(ctx, caller.Request[params]{Tool: tool, Arguments: map[string]any{"note": "other"}})
	if !errors.Is(err, ledger.ErrKeyReused) {
		t.Fatalf("Call(other arguments) = %v; want ledger.ErrKeyReused", err)
	}
	if _, named := caller.StateOf(err); named {
		t.Errorf("StateOf(%v) names a state; a reused key is no state of the call", err)
	}
	if n := len(cn.sent()); n != 1 {
		t.Errorf("%d requests sent; want 1", n)
	}
	rec, err := st.Get(context.Background(), ledger.ID{Tenant: "t", Layer: ledger.LayerClient, Tool: tool, Key: key})
	if err != nil || rec.State != ledger.StateSucceeded {
		t.Errorf("record = %+v, %v; want the first call's SUCCEEDED record", rec, err)
	}
}

package caller_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

func record(result string) *ledger.Record {
	return &ledger.Record{
		ID:    ledger.ID{Tenant: "t", Tool: "pay", Key: "k-1"},
		State: ledger.StateSucceeded, Attempts: 2, Result: json.RawMessage(result),
		CreatedAt: time.Date(2026, 12, 1, 9, 0, 0, 0, time.UTC),
	}
}

// Mark adds the marker and keeps every other member's bytes, whatever the
// stored _meta held.
func TestMark(t *testing.T) {
	tests := []struct {
		name, stored string
		keep         []string // members whose bytes must survive
	}{
		{"no meta", `{"content":[{"type":"text","text":"ok"}],"structuredContent":{"n":1.50}}`, []string{"content", "structuredContent"}},
		{"null meta", `{"_meta":null,"content":[],"isError":true}`, []string{"content", "isError"}},
		{"meta kept", `{"_meta":{"trace":"x"},"content":[]}`, []string{"content"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			out, err := caller.Mark(record(tc.stored))
			if err != nil {
				t.Fatalf("Mark(%s) = %v", tc.stored, err)
			}
			var got, want map[string]json.RawMessage
			if err := json.Unmarshal(out, &got); err != nil {
				t.Fatal(err)
			}
			if err := json.Unmarshal([]byte(tc.stored), &want); err != nil {
				t.Fatal(err)
			}
			for _, k := range tc.keep {
				if string(got[k]) != string(want[k]) {
					t.Errorf("Mark(%s)[%q] = %s; want %s", tc.stored, k, got[k], want[k])
				}
			}
			var meta map[string]json.RawMessage
			if err := json.Unmarshal(got["_meta"], &meta); err != nil {
				t.Fatalf("Mark(%s) _meta = %s: %v", tc.stored, got["_meta"], err)
			}
			var m wire.Replay
			if err := json.Unmarshal(meta[wire.MetaReplay], &m); err != nil || m != caller.Marker(record(tc.stored)) {
				t.Errorf("Mark(%s) marker = %s (%v); want %+v", tc.stored, meta[wire.MetaReplay], err, caller.Marker(record(tc.stored)))
			}
			if tc.name == "meta kept" && string(meta["trace"]) != `"x"` {
				t.Errorf("Mark(%s) lost the stored _meta entry: %s", tc.stored, got["_meta"])
			}
		})
	}
	for _, bad := range []string{``, `[]`, `"x"`, `{"_meta":[1]}`} {
		if _, err := caller.Mark(record(bad)); err == nil {
			t.Errorf("Mark(%q) = nil error; want one", bad)
		}
	}
}

// Repeat answers by the table's action for the record: a replay for a
// settled call, the -3100x refusals otherwise.
func TestRepeat(t *testing.T) {
	id := ledger.ID{Tenant: "t", Tool: "pay", Key: "k-1"}
	tests := []struct {
		name   string
		rec    *ledger.Record
		err    error
		code   int64
		reason string
	}{
		{"succeeded", &ledger.Record{ID: id, State: ledger.StateSucceeded}, nil, 0, ""},
		{"denied", &ledger.Record{ID: id, State: ledger.StateDenied}, nil, 0, ""},
		{"key reused", &ledger.Record{ID: id, State: ledger.StateSucceeded}, ledger.ErrKeyReused, ledger.CodeKeyReused, ledger.ReasonKeyReused},
		{"in progress", &ledger.Record{ID: id, State: ledger.StateProcessing}, ledger.ErrInProgress, ledger.CodeInProgress, ledger.ReasonInProgress},
		{"unknown", &ledger.Record{ID: id, State: ledger.StateUnknown}, nil, ledger.CodeOutcomeUnknown, ledger.ReasonOutcomeUnknown},
		{"tombstone", &ledger.Record{ID: id, State: ledger.StateSucceeded, Tombstone: true}, nil, ledger.CodeOutcomeUnknown, ledger.ReasonOutcomeUnknown},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := caller.Repeat(context.Background(), id, tc.rec, tc.err, time.Second)
			if tc.code == 0 {
				if err != nil {
					t.Errorf("Repeat(%s) = %v; want nil (replay)", tc.rec.State, err)
				}
				return
			}
			var r *caller.Refusal
			if !errors.As(err, &r) || r.Code != tc.code || r.Data == nil || r.Data.Reason != tc.reason || r.Data.Key != id.Key {
				t.Errorf("Repeat(%s, %v) = %#v; want code %d reason %s with the key", tc.rec.State, tc.err, err, tc.code, tc.reason)
			}
		})
	}
}

// A caller of either SDK wrapper sets the key the same way; a guarded
// handler reads it back the same way.
func Example() {
	ctx := caller.WithKey(context.Background(), "order-1042")
	key, ok := caller.Key(ctx)
	fmt.Println(key, ok)

	h := caller.WithHandler(context.Background(), "order-1042", wire.Fence{Token: 7, Scope: "l1"})
	key, _ = caller.KeyFromHandler(h)
	fence, _ := caller.FenceFromHandler(h)
	fmt.Println(key, fence.Token, fence.Scope)
	// Output:
	// order-1042 true
	// order-1042 7 l1
}

// A replay of a reconciled record says so: how, by whom and when, and
// the evidence stays in the ledger.
func TestMarkReconciled(t *testing.T) {
	at := time.Date(2026, 12, 1, 9, 30, 0, 0, time.UTC)
	rec := record(`{"content":[]}`)
	plain, err := caller.Mark(rec)
	if err != nil {
		t.Fatal(err)
	}
	if bytes.Contains(plain, []byte(`"reconciled"`)) {
		t.Errorf("Mark of a record the tool answered = %s; want no reconciled member", plain)
	}
	rec.Reconciled = &ledger.Resolution{Verdict: ledger.VerdictFound, Method: ledger.MethodProbe, By: "find_payment", At: at, Evidence: "payment p_1"}
	out, err := caller.Mark(rec)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		Meta map[string]wire.Replay `json:"_meta"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatal(err)
	}
	got := res.Meta[wire.MetaReplay].Reconciled
	if got == nil || got.Method != ledger.MethodProbe || got.By != "find_payment" || !got.At.Equal(at) {
		t.Errorf("Mark of a reconciled record: reconciled = %+v; want probe by find_payment at %v", got, at)
	}
	if bytes.Contains(out, []byte("payment p_1")) {
		t.Errorf("Mark = %s; want the evidence kept out of the replay", out)
	}
}

package wire_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

func TestKeyOf(t *testing.T) {
	tests := []struct {
		name    string
		meta    map[string]any
		args    string
		want    string
		wantErr error
	}{
		{"meta only", map[string]any{wire.MetaKey: "a-1"}, `{}`, "a-1", nil},
		{"argument only", nil, `{"idempotency_key":"b.2"}`, "b.2", nil},
		{"both agree", map[string]any{wire.MetaKey: "c:3"}, `{"idempotency_key":"c:3"}`, "c:3", nil},
		{"both differ", map[string]any{wire.MetaKey: "c:3"}, `{"idempotency_key":"c:4"}`, "", ledger.ErrInvalidKey},
		{"none", nil, `{"x":1}`, "", wire.ErrKeyRequired},
		{"number in meta", map[string]any{wire.MetaKey: 7.0}, `{}`, "", ledger.ErrInvalidKey},
		{"null argument", nil, `{"idempotency_key":null}`, "", ledger.ErrInvalidKey},
		{"slash", map[string]any{wire.MetaKey: "a/b"}, `{}`, "", ledger.ErrInvalidKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := wire.DecodeArgs(json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			got, err := wire.KeyOf(tc.meta, args)
			if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("KeyOf(%v, %s) = %q, %v; want %q, %v", tc.meta, tc.args, got, err, tc.want, tc.wantErr)
			}
		})
	}
}

func TestTraceParent(t *testing.T) {
	tests := []struct {
		in          any
		trace, span string
	}{
		{"00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", "4bf92f3577b34da6a3ce929d0e0e4736", "00f067aa0ba902b7"},
		{"garbage", "", ""},
		{42, "", ""},
	}
	for _, tc := range tests {
		trace, span := wire.TraceParent(map[string]any{"traceparent": tc.in})
		if trace != tc.trace || span != tc.span {
			t.Errorf("TraceParent(%v) = %q, %q; want %q, %q", tc.in, trace, span, tc.trace, tc.span)
		}
	}
}

// FuzzKeyOf checks that whatever a client sends, the key either obeys
// the key rules and is what the client sent, or is refused with an error.
func FuzzKeyOf(f *testing.F) {
	f.Add(`"k-1"`, `{"idempotency_key":"k-1"}`)
	f.Add(`7`, `{}`)
	f.Add(`"a b"`, `[1]`)
	f.Add(`null`, `{"idempotency_key":{"x":1}}`)
	f.Add(`""`, ``)
	f.Fuzz(func(t *testing.T, metaJSON, argsJSON string) {
		var mv any
		meta := map[string]any{}
		if json.Unmarshal([]byte(metaJSON), &mv) == nil {
			meta[wire.MetaKey] = mv
		}
		args, err := wire.DecodeArgs(json.RawMessage(argsJSON))
		if err != nil {
			return
		}
		key, err := wire.KeyOf(meta, args)
		if err != nil {
			if key != "" {
				t.Errorf("KeyOf returned key %q with error %v", key, err)
			}
			return
		}
		if verr := ledger.ValidateKey(key); verr != nil {
			t.Errorf("KeyOf accepted %q, which breaks the key rules: %v", key, verr)
		}
		if key != meta[wire.MetaKey] && key != args[wire.ArgKey] {
			t.Errorf("KeyOf = %q; the client sent %v and %v", key, meta[wire.MetaKey], args[wire.ArgKey])
		}
	})
}

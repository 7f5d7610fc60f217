package server

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func TestCallKey(t *testing.T) {
	tests := []struct {
		name    string
		meta    mcp.Meta
		args    string
		want    string
		wantErr error
	}{
		{"meta only", mcp.Meta{MetaKey: "a-1"}, `{}`, "a-1", nil},
		{"argument only", nil, `{"idempotency_key":"b.2"}`, "b.2", nil},
		{"both agree", mcp.Meta{MetaKey: "c:3"}, `{"idempotency_key":"c:3"}`, "c:3", nil},
		{"both differ", mcp.Meta{MetaKey: "c:3"}, `{"idempotency_key":"c:4"}`, "", ledger.ErrInvalidKey},
		{"none", nil, `{"x":1}`, "", errNoKey},
		{"number in meta", mcp.Meta{MetaKey: 7.0}, `{}`, "", ledger.ErrInvalidKey},
		{"null argument", nil, `{"idempotency_key":null}`, "", ledger.ErrInvalidKey},
		{"slash", mcp.Meta{MetaKey: "a/b"}, `{}`, "", ledger.ErrInvalidKey},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			args, err := decodeArgs(json.RawMessage(tc.args))
			if err != nil {
				t.Fatal(err)
			}
			got, err := callKey(tc.meta, args)
			if got != tc.want || !errors.Is(err, tc.wantErr) || (tc.wantErr == nil) != (err == nil) {
				t.Errorf("callKey(%v, %s) = %q, %v; want %q, %v", tc.meta, tc.args, got, err, tc.want, tc.wantErr)
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
		trace, span := traceParent(mcp.Meta{"traceparent": tc.in})
		if trace != tc.trace || span != tc.span {
			t.Errorf("traceParent(%v) = %q, %q; want %q, %q", tc.in, trace, span, tc.trace, tc.span)
		}
	}
}

// FuzzCallKey checks that whatever a client sends, the key either obeys
// the key rules and is what the client sent, or is refused with an error.
func FuzzCallKey(f *testing.F) {
	f.Add(`"k-1"`, `{"idempotency_key":"k-1"}`)
	f.Add(`7`, `{}`)
	f.Add(`"a b"`, `[1]`)
	f.Add(`null`, `{"idempotency_key":{"x":1}}`)
	f.Add(`""`, ``)
	f.Fuzz(func(t *testing.T, metaJSON, argsJSON string) {
		var mv any
		meta := mcp.Meta{}
		if json.Unmarshal([]byte(metaJSON), &mv) == nil {
			meta[MetaKey] = mv
		}
		args, err := decodeArgs(json.RawMessage(argsJSON))
		if err != nil {
			return
		}
		key, err := callKey(meta, args)
		if err != nil {
			if key != "" {
				t.Errorf("callKey returned key %q with error %v", key, err)
			}
			return
		}
		if verr := ledger.ValidateKey(key); verr != nil {
			t.Errorf("callKey accepted %q, which breaks the key rules: %v", key, verr)
		}
		if key != meta[MetaKey] && key != args[ArgKey] {
			t.Errorf("callKey = %q; the client sent %v and %v", key, meta[MetaKey], args[ArgKey])
		}
	})
}

package caller_test

import (
	"encoding/json"
	"testing"

	"github.com/mcpledger/mcpledger/caller"
)

func TestCarriesKeyArg(t *testing.T) {
	for _, c := range []struct {
		args string
		want bool
	}{
		{`{"idempotency_key":"k","a":1}`, true},
		{`{"a":1}`, false},
		{`{"a":{"idempotency_key":"k"}}`, false},
		{`{"a":"idempotency_key"}`, false},
		{`{"idempotency\u005fkey":"k"}`, true},
		{`not json "idempotency_key"`, false},
	} {
		if got := caller.CarriesKeyArg(json.RawMessage(c.args)); got != c.want {
			t.Errorf("CarriesKeyArg(%s) = %v; want %v", c.args, got, c.want)
		}
	}
}

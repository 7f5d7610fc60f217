package ledger

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/mcpledger/mcpledger/internal/errs"
	"github.com/mcpledger/mcpledger/ledger/args"
)

// The forwards kept for one release answer as ledger/args does, and an
// error from either package matches the sentinel of the other.
func TestDeprecatedArgumentNamesForward(t *testing.T) {
	doc := json.RawMessage(`{"b":1,"a":2.0,"traceparent":"x"}`)
	old, err := Fingerprint(doc)
	if err != nil {
		t.Fatal(err)
	}
	if now, err := args.Fingerprint(doc); err != nil || now != old {
		t.Errorf("args.Fingerprint = %s, %v; ledger.Fingerprint gave %s", now, err, old)
	}
	_, err = args.Decode([]byte(`{"a":1,"a":2}`))
	if !errors.Is(err, ErrInvalidArguments) {
		t.Errorf("args.Decode error %v does not match ledger.ErrInvalidArguments", err)
	}
	if dup, ok := errs.AsType[*DuplicateNameError](err); !ok || dup.Name != "a" {
		t.Errorf("args.Decode error %v is not a ledger.DuplicateNameError for \"a\"", err)
	}
	if _, err := DecodeArguments([]byte(`[1]`)); !errors.Is(err, args.ErrInvalid) {
		t.Errorf("ledger.DecodeArguments([1]) = %v; want args.ErrInvalid", err)
	}
	if err := CheckNames([]byte(`{"a":"\ud800"}`)); !errors.Is(err, args.ErrInvalid) {
		t.Errorf("ledger.CheckNames(lone surrogate) = %v; want args.ErrInvalid", err)
	}
	if c, err := Canonical(doc); err != nil || string(c) != `{"a":2,"b":1}` {
		t.Errorf("ledger.Canonical = %s, %v", c, err)
	}
	if len(DefaultExcluded) != len(args.DefaultExcluded) {
		t.Errorf("ledger.DefaultExcluded = %v; want args.DefaultExcluded %v", DefaultExcluded, args.DefaultExcluded)
	}
}

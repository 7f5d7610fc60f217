package ledger

import (
	"time"

	"github.com/mcpledger/mcpledger/ledger/compact"
	"github.com/mcpledger/mcpledger/ledger/redact"
)

// ToolSettings are the per-tool settings the client, the server middleware
// and the proxy share, one value per tool name. The zero value means the
// defaults of whichever side reads it.
type ToolSettings struct {
	// Window is how long after a call an identical one made without a key
	// counts as a re-plan of it (the client's guard; its default window
	// when zero, off when negative).
	Window time.Duration
	// Retention is how long the record is kept for replay (the side's
	// default when zero).
	Retention time.Duration
	// Reuse says what a reuse of a key after its record expired means
	// (Reexecute when empty).
	Reuse ReusePolicy
	// Exclude names extra top-level argument fields that carry no business
	// meaning and do not change the fingerprint ([args.DefaultExcluded] always
	// applies).
	Exclude []string
	// Idempotent: trusted configuration says the tool may run twice with
	// the same effect, so an ambiguous failure may be re-sent.
	Idempotent bool
	// ReadOnly: trusted configuration says the tool has no side effect: the
	// client calls it without the ledger and the server needs no key.
	ReadOnly bool
	// Keyed makes a server require a key for the tool even when its own
	// annotations say read-only.
	Keyed bool
	// Redact finds secrets in the tool's arguments before they are stored
	// or shown: extra names and patterns beside the built-in rules (the
	// built-in rules alone when nil).
	Redact *redact.Redactor
	// Compact shrinks a result past the size limit to what a replay needs
	// to mean the same thing (compact.Result when nil).
	Compact compact.Func
}

// Tools maps tool names to their settings.
type Tools map[string]ToolSettings

// For returns the settings of tool (the zero value when it has none).
func (t Tools) For(tool string) ToolSettings {
	return t[tool]
}

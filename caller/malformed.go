package caller

import (
	"errors"

	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/wire"
)

// Malformed reports whether err refused a call for its params themselves,
// before anything was recorded or sent: arguments the ledger cannot
// fingerprint (a member name given twice, invalid UTF-8), or one key in
// _meta and another in the idempotency_key argument. Every adapter answers
// such a call as its SDK answers invalid params (-32602).
func Malformed(err error) bool {
	return errors.Is(err, args.ErrInvalid) || errors.Is(err, wire.ErrKeysDiffer)
}

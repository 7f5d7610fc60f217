package caller

import (
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
)

// Explain is the model-facing text of a call of tool under key that did
// not complete with err: what happened to it and what to do next. rec is
// the call's record when there is one.
func Explain(tool, key string, rec *ledger.Record, err error) string {
	switch {
	case rec != nil && errors.Is(err, ledger.ErrKeyReused):
		return fmt.Sprintf("The key %s was already used for %s with different arguments, so this call was not run. Do not re-issue it; use a new operation if a second effect is really wanted.", key, tool)
	case rec != nil:
		return ledger.Explain(rec)
	}
	return fmt.Sprintf("The call to %s (key %s) did not complete: %v. Ask ledger_status with this key before calling again.", tool, key, err)
}

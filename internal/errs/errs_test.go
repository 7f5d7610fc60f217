package errs_test

import (
	"errors"
	"fmt"
	"io/fs"
	"testing"

	"github.com/mcpledger/mcpledger/internal/errs"
)

func TestAsType(t *testing.T) {
	pe := &fs.PathError{Op: "open", Path: "ledger.db", Err: fs.ErrPermission}
	got, ok := errs.AsType[*fs.PathError](fmt.Errorf("wrapped: %w", pe))
	if !ok || got != pe {
		t.Fatalf("AsType of a wrapped *fs.PathError = %v, %v; want it found", got, ok)
	}
	if got, ok := errs.AsType[*fs.PathError](errors.New("plain")); ok || got != nil {
		t.Fatalf("AsType of a plain error = %v, %v; want nil, false", got, ok)
	}
}

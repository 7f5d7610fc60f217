package caller

import (
	"context"
	"encoding/json"
	"time"

	"github.com/mcpledger/mcpledger/guard"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/compact"
	"github.com/mcpledger/mcpledger/wire"
)

// The names below moved to the lowest package both ends of a call import:
// the request's key, fence and arguments and the replay marker to package
// wire, a server's refusals, fence book, handler context and Reconcile to
// package guard. They stay here for one release.

// ErrKeyRequired: a guarded tool was called without an idempotency key.
//
// Deprecated: use wire.ErrKeyRequired.
var ErrKeyRequired = wire.ErrKeyRequired

// KeyHelp is appended to every key_required and key_invalid message.
//
// Deprecated: use wire.KeyHelp.
const KeyHelp = wire.KeyHelp

// KindReconciled is the ErrorKind of a record a person reconciled.
//
// Deprecated: use ledger.KindReconciled.
const KindReconciled = ledger.KindReconciled

// MetaReconciled marks the result of a reconciled record.
//
// Deprecated: use wire.MetaReconciled.
const MetaReconciled = wire.MetaReconciled

// Refusal is a server's JSON-RPC error answer to a tools/call.
//
// Deprecated: use guard.Refusal.
type Refusal = guard.Refusal

// FenceBook remembers the newest fencing token a server saw per key.
//
// Deprecated: use guard.FenceBook.
type FenceBook = guard.FenceBook

// Reconciliation is what someone found out about an UNKNOWN call.
//
// Deprecated: use guard.Reconciliation.
type Reconciliation = guard.Reconciliation

// Deprecated: use wire.MarshalArgs.
func MarshalArgs(a any) (json.RawMessage, error) { return wire.MarshalArgs(a) }

// Deprecated: use wire.DecodeArgs.
func DecodeArgs(raw json.RawMessage) (map[string]any, error) { return wire.DecodeArgs(raw) }

// Deprecated: use wire.JSONKind.
func JSONKind(v any) string { return wire.JSONKind(v) }

// Deprecated: use wire.KeyOf.
func KeyOf(meta, args map[string]any) (string, error) { return wire.KeyOf(meta, args) }

// Deprecated: use wire.FenceOf.
func FenceOf(meta map[string]any) (wire.Fence, error) { return wire.FenceOf(meta) }

// Deprecated: use wire.TraceParent.
func TraceParent(meta map[string]any) (trace, span string) { return wire.TraceParent(meta) }

// Deprecated: use wire.CarriesKeyArg.
func CarriesKeyArg(args json.RawMessage) bool { return wire.CarriesKeyArg(args) }

// Deprecated: use wire.Marker.
func Marker(rec *ledger.Record) wire.Replay { return wire.Marker(rec) }

// Deprecated: use wire.Missing.
func Missing(rec *ledger.Record) (string, bool) { return wire.Missing(rec) }

// Deprecated: use wire.Mark.
func Mark(rec *ledger.Record) (json.RawMessage, error) { return wire.Mark(rec) }

// Deprecated: use compact.Stored.
func Stored(raw json.RawMessage, limit int, fn compact.Func) (json.RawMessage, bool, error) {
	return compact.Stored(raw, limit, fn)
}

// Deprecated: use guard.Refuse.
func Refuse(code int64, reason, key, state, msg string, retryAfter time.Duration) *Refusal {
	return guard.Refuse(code, reason, key, state, msg, retryAfter)
}

// Deprecated: use guard.InvalidParams.
func InvalidParams(msg string) *Refusal { return guard.InvalidParams(msg) }

// Deprecated: use guard.KeyRefusal.
func KeyRefusal(tool, key string, err error) *Refusal { return guard.KeyRefusal(tool, key, err) }

// Deprecated: use guard.StaleFence.
func StaleFence(tool, key string, fence, seen int64) *Refusal {
	return guard.StaleFence(tool, key, fence, seen)
}

// Deprecated: use guard.Unknown.
func Unknown(tool, key, why string) *Refusal { return guard.Unknown(tool, key, why) }

// Deprecated: use guard.Repeat.
func Repeat(ctx context.Context, id ledger.ID, rec *ledger.Record, err error, retryAfter time.Duration) error {
	return guard.Repeat(ctx, id, rec, err, retryAfter)
}

// Deprecated: use guard.WithHandler.
func WithHandler(ctx context.Context, key string, fence wire.Fence) context.Context {
	return guard.WithHandler(ctx, key, fence)
}

// Deprecated: use guard.KeyFromContext.
func KeyFromHandler(ctx context.Context) (string, bool) { return guard.KeyFromContext(ctx) }

// Deprecated: use guard.FenceFromContext.
func FenceFromHandler(ctx context.Context) (wire.Fence, bool) { return guard.FenceFromContext(ctx) }

// Deprecated: use guard.Reconcile.
func Reconcile(ctx context.Context, st ledger.Store, id ledger.ID, r Reconciliation) (*ledger.Record, error) {
	return guard.Reconcile(ctx, st, id, r)
}

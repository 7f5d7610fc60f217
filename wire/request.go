package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
)

// ErrKeyRequired: a guarded tool was called without an idempotency key.
var ErrKeyRequired = errors.New("this tool changes state and needs an idempotency key")

// ErrKeysDiffer: a request carries one key in _meta and another in its
// idempotency_key argument. KeyOf's error wraps it with
// ledger.ErrInvalidKey; a proxy and the client middleware answer it -32602
// (malformed params), naming both keys.
var ErrKeysDiffer = errors.New("two different keys")

// KeyHelp is appended to every key_required and key_invalid message so a
// client author knows how to fix the call.
const KeyHelp = "send one in params._meta[\"" + MetaKey + "\"] or as the \"" + ArgKey +
	"\" argument: 1-255 bytes of [A-Za-z0-9._:~-], the same key on every retry of the same request"

// KeyOf finds the key of a request in its _meta or its idempotency_key
// argument. Both may be present only when they agree. The error wraps
// ErrKeyRequired when there is none, ledger.ErrInvalidKey when it breaks the key
// rules.
func KeyOf(meta, args map[string]any) (string, error) {
	mv, inMeta := meta[MetaKey]
	av, inArgs := args[ArgKey]
	if !inMeta && !inArgs {
		return "", ErrKeyRequired
	}
	var mk, ak string
	if inMeta {
		s, ok := mv.(string)
		if !ok {
			return "", fmt.Errorf("%w: _meta key is a JSON %s, not a string", ledger.ErrInvalidKey, JSONKind(mv))
		}
		mk = s
	}
	if inArgs {
		s, ok := av.(string)
		if !ok {
			return "", fmt.Errorf("%w: %s argument is a JSON %s, not a string", ledger.ErrInvalidKey, ArgKey, JSONKind(av))
		}
		ak = s
	}
	key := mk
	switch {
	case !inMeta:
		key = ak
	case inArgs && mk != ak:
		return "", fmt.Errorf("%w: _meta[%q] is %.60q and the %s argument %.60q (%w); send one key, or the same key in both",
			ledger.ErrInvalidKey, MetaKey, mk, ArgKey, ak, ErrKeysDiffer)
	}
	if err := ledger.ValidateKey(key); err != nil {
		return "", err
	}
	return key, nil
}

// FenceOf reads the fencing token and its scope from _meta: an absent
// token is 0, else a positive integer.
func FenceOf(meta map[string]any) (Fence, error) {
	v, ok := meta[MetaFence]
	if !ok || v == nil {
		return Fence{}, nil
	}
	scope, _ := meta[MetaFenceScope].(string)
	token, err := fenceToken(v)
	return Fence{Token: token, Scope: scope}, err
}

func fenceToken(v any) (int64, error) {
	var f float64
	switch n := v.(type) {
	case float64:
		f = n
	case int64:
		f = float64(n)
	case int:
		f = float64(n)
	case json.Number:
		var err error
		if f, err = n.Float64(); err != nil {
			return 0, fmt.Errorf("_meta[%q] is not a number", MetaFence)
		}
	default:
		return 0, fmt.Errorf("_meta[%q] is a JSON %s, not an integer", MetaFence, JSONKind(v))
	}
	if f < 1 || f != float64(int64(f)) {
		return 0, fmt.Errorf("_meta[%q] = %v is not a positive integer", MetaFence, f)
	}
	return int64(f), nil
}

// TraceParent splits a W3C traceparent ("00-<trace>-<span>-<flags>") from
// _meta into its trace and span ids; anything malformed is ignored.
func TraceParent(meta map[string]any) (trace, span string) {
	s, ok := meta["traceparent"].(string)
	if !ok {
		return "", ""
	}
	parts := strings.Split(s, "-")
	if len(parts) != 4 || len(parts[1]) != 32 || len(parts[2]) != 16 {
		return "", ""
	}
	return parts[1], parts[2]
}

// CarriesKeyArg reports whether the argument object args has an
// idempotency_key member at its top level (a host or an earlier hop put
// the key there). A client that changes the key on the wire must then
// change it there too, or the server sees two keys, whether or not the
// tool's schema, which it may not have at hand, declares the argument.
func CarriesKeyArg(args json.RawMessage) bool {
	_, ok, _ := KeyArg(args)
	return ok
}

// KeyArg is the decoded value of the idempotency_key member at the top
// level of the argument object raw, if it has one (of any JSON type: KeyOf
// judges it). Arguments that hold the member are read by [args.Decode], so
// a member given twice is refused ([args.ErrInvalid]) rather than read one
// way here and another by the tool.
func KeyArg(raw json.RawMessage) (any, bool, error) {
	if !bytes.Contains(raw, []byte(`"`+ArgKey+`"`)) && bytes.IndexByte(raw, '\\') < 0 {
		return nil, false, nil
	}
	m, err := args.Decode(raw)
	if err != nil {
		return nil, false, err
	}
	v, ok := m[ArgKey]
	return v, ok, nil
}

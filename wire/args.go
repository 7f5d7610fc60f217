package wire

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger/args"
)

// MarshalArgs returns a call's arguments as a JSON object: nil and JSON
// null are the empty object; json.RawMessage and []byte are taken as they
// are (trimmed) once they prove to be an object; anything else is
// json.Marshal'ed.
func MarshalArgs(a any) (json.RawMessage, error) {
	var raw []byte
	switch v := a.(type) {
	case nil:
		return json.RawMessage("{}"), nil
	case json.RawMessage:
		raw = v
	case []byte:
		raw = v
	case map[string]any:
		if v == nil {
			return json.RawMessage("{}"), nil
		}
		return marshalObject(a)
	default:
		return marshalObject(a)
	}
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		return json.RawMessage("{}"), nil
	}
	if raw[0] != '{' || !json.Valid(raw) {
		return nil, errors.New("client: arguments must be a JSON object")
	}
	return raw, nil
}

// marshalObject is json.Marshal for arguments of any Go type.
func marshalObject(a any) (json.RawMessage, error) {
	b, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("client: arguments do not marshal to JSON: %w", err)
	}
	if len(b) == 0 || b[0] != '{' {
		if bytes.Equal(b, []byte("null")) {
			return json.RawMessage("{}"), nil
		}
		return nil, errors.New("client: arguments must be a JSON object")
	}
	return b, nil // json.Marshal writes compact, valid JSON
}

// DecodeArgs parses a request's arguments as a JSON object; absent or null
// arguments are the empty object. A member name given twice, invalid UTF-8
// or a lone surrogate is refused with [args.ErrInvalid]
// ([args.Decode]): every door answers it -32602.
func DecodeArgs(raw json.RawMessage) (map[string]any, error) {
	return args.Decode(raw)
}

// JSONKind names the JSON type of a decoded value, for messages.
func JSONKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case float64, json.Number:
		return "number"
	case map[string]any:
		return "object"
	case []any:
		return "array"
	}
	return fmt.Sprintf("%T", v)
}

package client

import (
	"math"
	"reflect"
	"slices"
	"strconv"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// encodeResult returns res as go-sdk's own encoder writes it. A result as a
// client decodes it (text content and plain JSON values, which is nearly
// every tool result) is written directly, without the reflection
// encoding/json spends on the structured content's maps; anything else goes
// to res.MarshalJSON. FuzzEncodeResult holds the two to the same bytes.
func encodeResult(res *mcp.CallToolResult) ([]byte, error) {
	if b, ok := appendResult(make([]byte, 0, 512), res); ok {
		return b, nil
	}
	return res.MarshalJSON()
}

// resultLayout is where CallToolResult keeps its unexported result type, or
// -1 when the struct is not the one appendResult was written against (a
// newer go-sdk), which turns the direct path off.
var resultLayout = func() int {
	want := []struct {
		name string
		kind reflect.Kind
	}{
		{"Meta", reflect.Map}, {"Content", reflect.Slice}, {"StructuredContent", reflect.Interface},
		{"IsError", reflect.Bool}, {"InputRequests", reflect.Map}, {"RequestState", reflect.String},
		{"resultType", reflect.String}, {"err", reflect.Interface},
	}
	rt := reflect.TypeFor[mcp.CallToolResult]()
	tt := reflect.TypeFor[mcp.TextContent]()
	if rt.NumField() != len(want) || tt.NumField() != 3 {
		return -1
	}
	at := -1
	for i, w := range want {
		if f := rt.Field(i); f.Name != w.name || f.Type.Kind() != w.kind {
			return -1
		}
		if w.name == "resultType" {
			at = i
		}
	}
	for i, name := range []string{"Text", "Meta", "Annotations"} {
		if tt.Field(i).Name != name {
			return -1
		}
	}
	return at
}()

// appendResult appends res in the field order and spelling of go-sdk's
// CallToolResult.MarshalJSON. It reports false, having written nothing
// useful, for anything outside the direct path.
func appendResult(b []byte, res *mcp.CallToolResult) ([]byte, bool) {
	if resultLayout < 0 || res.InputRequests != nil {
		return nil, false
	}
	ok := true
	b = append(b, '{')
	if len(res.Meta) > 0 {
		b = append(b, `"_meta":`...)
		if b, ok = appendValue(b, map[string]any(res.Meta)); !ok {
			return nil, false
		}
		b = append(b, ',')
	}
	b = append(b, `"content":`...)
	if res.Content == nil {
		b = append(b, "null"...)
	} else {
		b = append(b, '[')
		for i, c := range res.Content {
			t, isText := c.(*mcp.TextContent)
			if !isText || t == nil || t.Annotations != nil {
				return nil, false
			}
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"type":"text","text":`...)
			b = appendString(b, t.Text)
			if len(t.Meta) > 0 {
				b = append(b, `,"_meta":`...)
				if b, ok = appendValue(b, map[string]any(t.Meta)); !ok {
					return nil, false
				}
			}
			b = append(b, '}')
		}
		b = append(b, ']')
	}
	if res.StructuredContent != nil {
		b = append(b, `,"structuredContent":`...)
		if b, ok = appendValue(b, res.StructuredContent); !ok {
			return nil, false
		}
	}
	if res.IsError {
		b = append(b, `,"isError":true`...)
	}
	if res.RequestState != "" {
		b = append(b, `,"requestState":`...)
		b = appendString(b, res.RequestState)
	}
	if rt := reflect.ValueOf(res).Elem().Field(resultLayout).String(); rt != "" {
		b = append(b, `,"resultType":`...)
		b = appendString(b, rt)
	}
	return append(b, '}'), true
}

// appendValue appends a value of the kinds JSON decodes into an any, and
// the integers and string slices and maps arguments are often built from,
// as encoding/json writes them: map keys sorted, floats in its format,
// strings with its escapes. Any other type reports false.
func appendValue(b []byte, v any) ([]byte, bool) {
	switch v := v.(type) {
	case nil:
		return append(b, "null"...), true
	case string:
		return appendString(b, v), true
	case bool:
		return strconv.AppendBool(b, v), true
	case float64:
		return appendFloat(b, v)
	case int:
		return strconv.AppendInt(b, int64(v), 10), true
	case int64:
		return strconv.AppendInt(b, v, 10), true
	case int32:
		return strconv.AppendInt(b, int64(v), 10), true
	case uint64:
		return strconv.AppendUint(b, v, 10), true
	case []string:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(b, e)
		}
		return append(b, ']'), true
	case map[string]string:
		if v == nil {
			return append(b, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendString(append(appendString(b, k), ':'), v[k])
		}
		return append(b, '}'), true
	case map[string]any:
		if v == nil {
			return append(b, "null"...), true
		}
		keys := make([]string, 0, len(v))
		for k := range v {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		b = append(b, '{')
		ok := true
		for i, k := range keys {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(appendString(b, k), ':')
			if b, ok = appendValue(b, v[k]); !ok {
				return nil, false
			}
		}
		return append(b, '}'), true
	case []any:
		if v == nil {
			return append(b, "null"...), true
		}
		b = append(b, '[')
		ok := true
		for i, e := range v {
			if i > 0 {
				b = append(b, ',')
			}
			if b, ok = appendValue(b, e); !ok {
				return nil, false
			}
		}
		return append(b, ']'), true
	}
	return nil, false
}

// appendFloat is encoding/json's float64 format; NaN and infinities,
// which it refuses, report false.
func appendFloat(b []byte, f float64) ([]byte, bool) {
	if math.IsNaN(f) || math.IsInf(f, 0) {
		return nil, false
	}
	format := byte('f')
	if abs := math.Abs(f); abs != 0 && (abs < 1e-6 || abs >= 1e21) {
		format = 'e'
	}
	b = strconv.AppendFloat(b, f, format, -1, 64)
	if format == 'e' {
		// e-09 to e-9, as encoding/json does.
		if n := len(b); n >= 4 && b[n-4] == 'e' && b[n-3] == '-' && b[n-2] == '0' {
			b[n-2] = b[n-1]
			b = b[:n-1]
		}
	}
	return b, true
}

const hexDigits = "0123456789abcdef"

// appendString quotes s as encoding/json does with HTML escaping on, its
// default: <, > and & as \u escapes, U+2028 and U+2029 escaped, invalid
// UTF-8 replaced by U+FFFD.
func appendString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		if c := s[i]; c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' && c != '<' && c != '>' && c != '&' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '\\', '"':
				b = append(b, '\\', c)
			case '\b':
				b = append(b, '\\', 'b')
			case '\f':
				b = append(b, '\\', 'f')
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xF])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			b = append(b, s[start:i]...)
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xF])
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

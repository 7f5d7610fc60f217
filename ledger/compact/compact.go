// Package compact shrinks a tool's result past the ledger's size limit to
// what a replay needs to mean the same thing, keeping every item or field
// whole or dropping it and saying so:
//
//	small, changed, err := compact.Stored(raw, compact.DefaultLimit, nil)
//
// The ledger stores what Stored returns; a tool whose results need
// something else kept gets its own Func (ledger.ToolSettings.Compact).
package compact

import (
	"bytes"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
)

// DefaultLimit is the size in bytes past which a result is compacted
// (ledger.DefaultMaxResult).
const DefaultLimit = 4 << 20

// MetaKey is the _meta key Result adds to a compacted result, with
// {"originalBytes": n}, so that runtimes can tell a compacted replay apart
// without reading the note.
const MetaKey = "io.github.mcpledger/compacted"

// smallText is the largest text item Result keeps whole: short messages
// such as "created order 42" often carry what a replay needs, bulk text
// rarely does.
const smallText = 4 << 10

// A Func shrinks a CallToolResult that is larger than limit bytes,
// keeping what a replay needs to mean the same thing, and reports whether
// it changed anything. Result is the default; a tool whose results need
// something else kept (a field of a large text, say) gets its own.
type Func func(result json.RawMessage, limit int) (json.RawMessage, bool, error)

var _ Func = Result

// Result returns result unchanged when it is at most limit bytes
// (DefaultLimit when limit <= 0). Otherwise it rebuilds the
// CallToolResult JSON from what a replay needs:
//
//   - isError, always;
//   - resource_link content items, whole;
//   - embedded resource items, reduced to their uri and mimeType;
//   - then, each only while the result still fits: _meta,
//     structuredContent, text items of at most 4 KiB (in order), and any
//     other top-level field;
//   - first in content, one text item saying that the original result was
//     N bytes and was compacted, and what was kept and dropped.
//
// Nothing is cut in the middle: an item or field is kept whole or dropped
// and named in the note. _meta also gets MetaKey. When links and
// resource references alone exceed limit the result is returned compacted
// but larger than limit, since dropping them would lose the created
// resources.
func Result(result json.RawMessage, limit int) (json.RawMessage, bool, error) {
	if limit <= 0 {
		limit = DefaultLimit
	}
	if len(result) <= limit {
		return result, false, nil
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(result, &top); err != nil {
		return nil, false, fmt.Errorf("compact: result is not a JSON object: %w", err)
	}
	c := compaction{original: len(result), limit: limit}
	if err := c.split(top); err != nil {
		return nil, false, err
	}
	// Greedy in order of how much a replay needs each piece. Sizes are
	// added up rather than rebuilt per piece, so a result of many small
	// items costs one pass; the note is sized at its longest wording.
	c.upperNote = true
	total := len(c.build())
	c.upperNote = false
	for i := range c.optional {
		if total+c.optional[i].cost <= limit {
			c.optional[i].kept = true
			total += c.optional[i].cost
		}
	}
	return c.build(), true, nil
}

// piece is one part of a result Result may keep or drop whole.
type piece struct {
	field string          // top-level name; "" for a content item
	item  int             // position among content items when field == ""
	label string          // how the note names it
	value json.RawMessage // compact JSON
	cost  int             // bytes it adds to the compacted result
	kept  bool
}

type compaction struct {
	original, limit int
	isError         json.RawMessage
	meta            map[string]json.RawMessage // nil when absent or not an object
	// items are the content items in order; nil entries were dropped for
	// good, and optional pieces with field == "" point into it.
	items    []json.RawMessage
	required []string // what the note lists as always kept
	dropped  []string // what the note lists as always dropped
	optional []piece
	// upperNote makes note list every optional piece as both kept and
	// dropped: no real wording is longer.
	upperNote bool
}

type contentItem struct {
	Type     string `json:"type"`
	Resource *struct {
		URI      string `json:"uri"`
		MIMEType string `json:"mimeType,omitempty"`
	} `json:"resource"`
}

func (c *compaction) split(top map[string]json.RawMessage) error {
	if v, ok := top["isError"]; ok {
		c.isError = compactJSON(v)
		c.required = append(c.required, "isError")
	}
	if raw, ok := top["_meta"]; ok {
		// A _meta that is not an object cannot carry the marker; it is
		// dropped and said so.
		if err := json.Unmarshal(raw, &c.meta); err != nil || c.meta == nil {
			c.dropped = append(c.dropped, "_meta (not an object)")
			c.meta = nil
		} else {
			marker := len(marshal(map[string]json.RawMessage{MetaKey: c.marker()}))
			c.optional = append(c.optional, piece{field: "_meta", label: "_meta", cost: len(c.mergedMeta(true)) - marker})
		}
	}
	if raw, ok := top["structuredContent"]; ok {
		c.optional = append(c.optional, field("structuredContent", raw))
	}

	var items []json.RawMessage
	if raw, ok := top["content"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &items); err != nil {
			return fmt.Errorf("compact: content is not an array: %w", err)
		}
	}
	var links, refs int
	dropped := map[string]int{}
	for _, raw := range items {
		var it contentItem
		if err := json.Unmarshal(raw, &it); err != nil {
			return fmt.Errorf("compact: content item: %w", err)
		}
		switch {
		case it.Type == "resource_link":
			links++
			c.items = append(c.items, compactJSON(raw))
		case it.Type == "resource" && it.Resource != nil:
			refs++
			c.items = append(c.items, marshal(map[string]any{"type": "resource", "resource": it.Resource}))
		case it.Type == "text" && len(raw) <= smallText:
			v := compactJSON(raw)
			c.optional = append(c.optional, piece{item: len(c.items), label: "text", value: v, cost: len(v) + 1})
			c.items = append(c.items, nil)
		default:
			dropped[it.Type]++
		}
	}
	if links > 0 {
		c.required = append(c.required, count(links, "resource link"))
	}
	if refs > 0 {
		c.required = append(c.required, count(refs, "embedded resource")+" (uri and mimeType only)")
	}
	for _, kind := range sortedKeys(dropped) {
		c.dropped = append(c.dropped, count(dropped[kind], orUnnamed(kind)+" item"))
	}
	for _, name := range sortedKeys(top) {
		switch name {
		case "isError", "_meta", "structuredContent", "content":
			continue
		}
		c.optional = append(c.optional, field(name, top[name]))
	}
	return nil
}

// build writes the compacted result for the pieces currently kept.
func (c *compaction) build() json.RawMessage {
	var b bytes.Buffer
	b.WriteString(`{"content":[`)
	b.Write(marshal(map[string]string{"type": "text", "text": c.note()}))
	kept := make(map[int]json.RawMessage)
	for _, p := range c.optional {
		if p.field == "" && p.kept {
			kept[p.item] = p.value
		}
	}
	for i, it := range c.items {
		if it == nil {
			it = kept[i]
		}
		if it != nil {
			b.WriteByte(',')
			b.Write(it)
		}
	}
	b.WriteByte(']')
	if c.isError != nil {
		b.WriteString(`,"isError":`)
		b.Write(c.isError)
	}
	keepMeta := false
	for _, p := range c.optional {
		keepMeta = keepMeta || p.field == "_meta" && p.kept
	}
	b.WriteString(`,"_meta":`)
	b.Write(c.mergedMeta(keepMeta))
	for _, p := range c.optional {
		if p.field != "" && p.field != "_meta" && p.kept {
			b.WriteByte(',')
			b.Write(marshal(p.field))
			b.WriteByte(':')
			b.Write(p.value)
		}
	}
	b.WriteByte('}')
	return b.Bytes()
}

// note is the text a model reads first in a compacted replay.
func (c *compaction) note() string {
	kept := append([]string(nil), c.required...)
	dropped := append([]string(nil), c.dropped...)
	texts, droppedTexts := 0, 0
	for _, p := range c.optional {
		if c.upperNote {
			if p.field == "" {
				texts++
				droppedTexts++
				continue
			}
			kept = append(kept, p.label)
			dropped = append(dropped, p.label)
			continue
		}
		switch {
		case p.field == "" && p.kept:
			texts++
		case p.field == "":
			droppedTexts++
		case p.kept:
			kept = append(kept, p.label)
		default:
			dropped = append(dropped, p.label)
		}
	}
	if texts > 0 {
		kept = append(kept, count(texts, "short text item"))
	}
	if droppedTexts > 0 {
		dropped = append(dropped, count(droppedTexts, "short text item"))
	}
	var s strings.Builder
	fmt.Fprintf(&s, "This result was compacted: the original was %d bytes, over the ledger's limit of %d bytes.", c.original, c.limit)
	fmt.Fprintf(&s, " Kept: %s.", orNothing(kept))
	fmt.Fprintf(&s, " Dropped: %s.", orNothing(dropped))
	if c.upperNote {
		// "nothing" may be longer than the one short label it stands for.
		s.WriteString(strings.Repeat(" ", 2*len("nothing")))
	}
	return s.String()
}

// marker is the value of MetaKey.
func (c *compaction) marker() json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"originalBytes":%d}`, c.original))
}

// mergedMeta is the compacted result's _meta: the original members when
// kept, and the marker.
func (c *compaction) mergedMeta(keep bool) json.RawMessage {
	meta := map[string]json.RawMessage{}
	if keep {
		for k, v := range c.meta {
			meta[k] = v
		}
	}
	meta[MetaKey] = c.marker()
	return marshal(meta)
}

// field is an optional top-level member.
func field(name string, raw json.RawMessage) piece {
	v := compactJSON(raw)
	return piece{field: name, label: name, value: v, cost: len(marshal(name)) + len(v) + 2}
}

// marshal encodes values that are known to encode (strings, maps of valid
// raw JSON), without HTML escaping so stored bytes stay as the tool sent
// them.
func marshal(v any) json.RawMessage {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		panic(fmt.Sprintf("compact: %v", err)) // programmer error: only encodable values reach here
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

func compactJSON(raw json.RawMessage) json.RawMessage {
	var b bytes.Buffer
	if err := json.Compact(&b, raw); err != nil {
		return raw
	}
	return b.Bytes()
}

func count(n int, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return fmt.Sprintf("%d %ss", n, what)
}

func orUnnamed(kind string) string {
	if kind == "" {
		return "untyped"
	}
	return kind
}

func orNothing(parts []string) string {
	if len(parts) == 0 {
		return "nothing"
	}
	return strings.Join(parts, ", ")
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// Stored is a result as the ledger keeps it: raw itself, or past limit
// bytes what compact (Result when nil) keeps of it, and whether it
// was compacted.
func Stored(raw json.RawMessage, limit int, compact Func) (json.RawMessage, bool, error) {
	if len(raw) <= limit {
		return raw, false, nil
	}
	if compact == nil {
		compact = Result
	}
	return compact(raw, limit)
}

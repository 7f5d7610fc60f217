package wire

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
)

// Marker is the replay marker of rec, the value of _meta[MetaReplay]
// on a replayed result.
func Marker(rec *ledger.Record) Replay {
	m := Replay{Key: rec.Key, FirstAt: rec.CreatedAt.UTC(), Attempts: rec.Attempts, Compacted: rec.Compacted,
		Reconciled: ReconciledOf(rec)}
	setState(&m.State, rec.State)
	return m
}

// setState sets a marker's state whether the field is a string or a
// ledger.State.
func setState[T ~string](field *T, s ledger.State) { *field = T(s) }

// Missing is the text of a replay of a record that settled without a
// result (DENIED, or reconciled without one), so the reply says why rather
// than replaying an empty success. It reports false when rec has a result
// or succeeded.
func Missing(rec *ledger.Record) (string, bool) {
	if row := ledger.RowOf(rec.State); len(rec.Result) > 0 || row.Ran == ledger.RanYes && !row.IsError {
		return "", false
	}
	if rec.ErrorMessage != "" {
		return rec.ErrorMessage, true
	}
	return "the operation ended as " + string(rec.State), true
}

// Mark returns the stored result of rec with the replay marker added to
// its _meta, at the JSON level: every other member keeps its stored bytes
// (members may be reordered), so a replay decodes to what the first
// execution returned, on any SDK.
func Mark(rec *ledger.Record) (json.RawMessage, error) {
	raw := bytes.TrimSpace(rec.Result)
	if len(raw) < 2 || raw[0] != '{' {
		return nil, fmt.Errorf("wire: stored result of %s key %s is not a JSON object", rec.Tool, ledger.ShortHash(rec.Key))
	}
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, fmt.Errorf("wire: stored result of %s key %s: %w", rec.Tool, ledger.ShortHash(rec.Key), err)
	}
	meta := map[string]json.RawMessage{}
	if m, ok := obj["_meta"]; ok && !bytes.Equal(bytes.TrimSpace(m), []byte("null")) {
		if err := json.Unmarshal(m, &meta); err != nil {
			return nil, fmt.Errorf("wire: stored _meta of %s key %s: %w", rec.Tool, ledger.ShortHash(rec.Key), err)
		}
	}
	marker, err := json.Marshal(Marker(rec))
	if err != nil {
		return nil, fmt.Errorf("wire: replay marker: %w", err)
	}
	meta[MetaReplay] = marker
	if obj["_meta"], err = json.Marshal(meta); err != nil {
		return nil, fmt.Errorf("wire: replay marker: %w", err)
	}
	out, err := json.Marshal(obj)
	if err != nil {
		return nil, fmt.Errorf("wire: replay marker: %w", err)
	}
	return out, nil
}

package ledger

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"time"
)

// List page sizes.
const (
	DefaultPageSize = 50
	MaxPageSize     = 1000
)

// PageSize returns the effective limit of f.
func (f Filter) PageSize() int {
	switch {
	case f.Limit <= 0:
		return DefaultPageSize
	case f.Limit > MaxPageSize:
		return MaxPageSize
	}
	return f.Limit
}

// Cursor is the position after the last record of a page. Stores encode it
// with EncodeCursor so a cursor means the same thing on every Store.
type Cursor struct {
	CreatedAt time.Time `json:"c"`
	Tool      string    `json:"t"`
	Key       string    `json:"k"`
	Layer     string    `json:"l,omitempty"`
}

// EncodeCursor returns the opaque cursor that follows r.
func EncodeCursor(r *Record) string {
	b, err := json.Marshal(Cursor{CreatedAt: r.CreatedAt.UTC(), Tool: r.Tool, Key: r.Key, Layer: r.Layer})
	if err != nil {
		return ""
	}
	return base64.RawURLEncoding.EncodeToString(b)
}

// DecodeCursor parses a cursor from EncodeCursor.
func DecodeCursor(s string) (Cursor, error) {
	var c Cursor
	b, err := base64.RawURLEncoding.DecodeString(s)
	if err != nil {
		return c, fmt.Errorf("ledger: malformed page cursor: %w", err)
	}
	if err := json.Unmarshal(b, &c); err != nil {
		return c, fmt.Errorf("ledger: malformed page cursor: %w", err)
	}
	return c, nil
}

package audit

import (
	"bufio"
	"context"
	"crypto/ed25519"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// Format names the export's layout; Verify refuses any other.
const Format = "mcpledger-audit/1"

// Line kinds.
const (
	KindHeader = "header"
	KindRecord = "record"
	KindEnd    = "end"
)

// Line is one line of an export. Prev is the hex SHA-256 of the previous
// line's bytes (without its newline); the header's is empty.
type Line struct {
	Seq  int64  `json:"seq"`
	Prev string `json:"prev"`
	Kind string `json:"kind"`

	Header    *Header        `json:"header,omitempty"`
	Record    *ledger.Record `json:"record,omitempty"`
	Timeline  []Entry        `json:"timeline,omitempty"`
	End       *End           `json:"end,omitempty"`
	Signature *Signature     `json:"signature,omitempty"`
}

// Header opens an export.
type Header struct {
	Format     string    `json:"format"`
	Tenant     string    `json:"tenant"`
	Layer      string    `json:"layer,omitempty"`
	Since      time.Time `json:"since,omitzero"`
	ExportedAt time.Time `json:"exportedAt"`
	Order      string    `json:"order"`
}

// End closes an export: a file without it was cut short.
type End struct {
	Records int64 `json:"records"`
}

// Lister is the part of a ledger.Store an export reads.
type Lister interface {
	List(ctx context.Context, f ledger.Filter) (ledger.Page, error)
}

// Options select what Export writes.
type Options struct {
	// Tenant whose records are exported (required).
	Tenant string
	// Layer keeps the records of one layer; empty keeps every layer.
	Layer string
	// Since keeps the records created at or after it; zero keeps all.
	Since time.Time
	// Now is the clock for the header (time.Now when nil).
	Now func() time.Time
	// Sign, when set, signs the export: a last line after the end line
	// carries the signature of the end line's hash (see Signature).
	Sign ed25519.PrivateKey
}

// Export writes the tenant's records to w, newest first (the order the
// ledger lists them in, so memory stays bounded by one page), and returns
// how many records it wrote. An error part way leaves a file without its
// end line, which Verify reports as cut short.
func Export(ctx context.Context, st Lister, w io.Writer, o Options) (int64, error) {
	if err := ledger.ValidateTenant(o.Tenant); err != nil {
		return 0, err
	}
	now := time.Now
	if o.Now != nil {
		now = o.Now
	}
	cw := &chainWriter{w: bufio.NewWriterSize(w, 64<<10)}
	hdr := &Header{Format: Format, Tenant: o.Tenant, Layer: o.Layer, Since: o.Since.UTC(), ExportedAt: now().UTC(), Order: "newest first"}
	if err := cw.write(Line{Kind: KindHeader, Header: hdr}); err != nil {
		return 0, err
	}
	var n int64
	f := ledger.Filter{Tenant: o.Tenant, Layer: o.Layer, Since: o.Since, Limit: ledger.MaxPageSize}
	for {
		page, err := st.List(ctx, f)
		if err != nil {
			return n, fmt.Errorf("audit: list the records of tenant %s: %w", o.Tenant, err)
		}
		for _, r := range page.Records {
			red, err := redacted(r)
			if err != nil {
				return n, err
			}
			if err := cw.write(Line{Kind: KindRecord, Record: red, Timeline: Timeline(red)}); err != nil {
				return n, err
			}
			n++
		}
		if page.Next == "" {
			break
		}
		f.Cursor = page.Next
	}
	if err := cw.write(Line{Kind: KindEnd, End: &End{Records: n}}); err != nil {
		return n, err
	}
	if o.Sign != nil {
		pub, ok := o.Sign.Public().(ed25519.PublicKey)
		if !ok {
			return n, fmt.Errorf("audit: the signing key has no ed25519 public key")
		}
		sig := &Signature{Alg: AlgEd25519, KeyID: KeyID(pub), Head: cw.prev, Sig: ed25519.Sign(o.Sign, SignedMessage(cw.prev))}
		if err := cw.write(Line{Kind: KindSignature, Signature: sig}); err != nil {
			return n, err
		}
	}
	if err := cw.w.Flush(); err != nil {
		return n, fmt.Errorf("audit: write the export: %w", err)
	}
	return n, nil
}

// redacted is a copy of r whose arguments and result pass through
// ledger.Redact: a store may hold values an older version did not redact,
// and results were never redacted.
func redacted(r *ledger.Record) (*ledger.Record, error) {
	c := *r
	var err error
	if c.Arguments, err = ledger.Redact(r.Arguments); err != nil {
		return nil, fmt.Errorf("audit: arguments of %s key %s: %w", r.Tool, ledger.ShortHash(r.Key), err)
	}
	if c.Result, err = ledger.Redact(r.Result); err != nil {
		return nil, fmt.Errorf("audit: result of %s key %s: %w", r.Tool, ledger.ShortHash(r.Key), err)
	}
	return &c, nil
}

// chainWriter writes lines, each carrying the hash of the one before.
type chainWriter struct {
	w    *bufio.Writer
	seq  int64
	prev string
}

func (c *chainWriter) write(l Line) error {
	l.Seq, l.Prev = c.seq, c.prev
	b, err := json.Marshal(l)
	if err != nil {
		return fmt.Errorf("audit: encode line %d: %w", c.seq+1, err)
	}
	sum := sha256.Sum256(b)
	c.prev = hex.EncodeToString(sum[:])
	c.seq++
	b = append(b, '\n')
	if _, err := c.w.Write(b); err != nil {
		return fmt.Errorf("audit: write the export: %w", err)
	}
	return nil
}

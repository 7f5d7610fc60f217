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
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/redact"
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

// exportPage is how many records an export reads at a time: each page is
// one short read of the store (a SQLite snapshot held for the whole
// export would keep the WAL from being checkpointed meanwhile). The
// export holds at most exportAhead+2 pages (one read, the ones encoded
// ahead, one written), so its memory is a few pages' records, up to a
// few MB, however large the ledger.
const exportPage = 200

// exportAhead is how many pages are read and encoded ahead of the one
// being written: enough for the store's reads, the encoding and the
// writing to overlap on separate cores.
const exportAhead = 1

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
	f := ledger.Filter{Tenant: o.Tenant, Layer: o.Layer, Since: o.Since, Limit: exportPage}
	n, err := cw.records(ctx, st, f)
	if err != nil {
		return n, err
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

// encoded is one page's record lines, encoded without their chain fields
// (seq and prev), which only the writer knows.
type encoded struct {
	lines [][]byte
	err   error
}

// records writes the record lines of every page of f. A reader goroutine
// lists the pages, each page is redacted and encoded on a goroutine of
// its own, and the writer chains the lines in the order the pages were
// listed; at most exportAhead pages wait ahead of the writer.
func (c *chainWriter) records(ctx context.Context, st Lister, f ledger.Filter) (int64, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	pages := make(chan chan encoded, exportAhead)
	var wg sync.WaitGroup
	var listErr error
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(pages)
		for {
			page, err := st.List(ctx, f)
			if err != nil {
				listErr = fmt.Errorf("audit: list the records of tenant %s: %w", f.Tenant, err)
				return
			}
			done := make(chan encoded, 1)
			select {
			case pages <- done:
			case <-ctx.Done():
				listErr = ctx.Err()
				return
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				done <- encodePage(page.Records)
			}()
			if page.Next == "" {
				return
			}
			f.Cursor = page.Next
		}
	}()
	var n int64
	err := func() error {
		for done := range pages {
			page := <-done
			if page.err != nil {
				return page.err
			}
			for _, body := range page.lines {
				if err := c.chain(body); err != nil {
					return err
				}
				n++
			}
		}
		return nil
	}()
	cancel()
	for done := range pages { // the reader stops at its next page
		<-done
	}
	wg.Wait()
	if err == nil {
		err = listErr
	}
	return n, err
}

// recordLine is a record line without its chain fields.
type recordLine struct {
	Kind     string         `json:"kind"`
	Record   *ledger.Record `json:"record"`
	Timeline []Entry        `json:"timeline,omitempty"`
}

// encodePage redacts and encodes the records of one page.
func encodePage(recs []*ledger.Record) encoded {
	out := encoded{lines: make([][]byte, 0, len(recs))}
	for _, r := range recs {
		red, err := redacted(r)
		if err != nil {
			return encoded{err: err}
		}
		b, err := json.Marshal(recordLine{Kind: KindRecord, Record: red, Timeline: Timeline(red)})
		if err != nil {
			return encoded{err: fmt.Errorf("audit: encode the record of %s key %s: %w", r.Tool, ledger.ShortHash(r.Key), err)}
		}
		out.lines = append(out.lines, b)
	}
	return out
}

// chainFields are the fields a line's writer adds in front of its body.
type chainFields struct {
	Seq  int64  `json:"seq"`
	Prev string `json:"prev"`
}

// chain writes body, an encoded JSON object, with the chain fields in
// front: the same bytes json.Marshal gives for the whole Line, since
// Line's fields start with seq and prev.
func (c *chainWriter) chain(body []byte) error {
	head, err := json.Marshal(chainFields{Seq: c.seq, Prev: c.prev})
	if err != nil {
		return fmt.Errorf("audit: encode line %d: %w", c.seq+1, err)
	}
	line := make([]byte, 0, len(head)+len(body))
	line = append(append(append(line, head[:len(head)-1]...), ','), body[1:]...)
	return c.put(line)
}

// redacted is a copy of r whose arguments and result pass through
// redact.JSON (a store may hold values an older version did not redact,
// and results were never redacted), and whose error message and approval
// reason, free text, pass through redact.Text.
func redacted(r *ledger.Record) (*ledger.Record, error) {
	c := *r
	c.ErrorMessage = redact.Text(r.ErrorMessage)
	if a := r.Approval; a != nil && a.Reason != "" {
		ac := *a
		ac.Reason = redact.Text(a.Reason)
		c.Approval = &ac
	}
	var err error
	if c.Arguments, err = redact.JSON(r.Arguments); err != nil {
		return nil, fmt.Errorf("audit: arguments of %s key %s: %w", r.Tool, ledger.ShortHash(r.Key), err)
	}
	if c.Result, err = redact.JSON(r.Result); err != nil {
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
	return c.put(b)
}

// put writes the encoded line b and its newline, and chains it.
func (c *chainWriter) put(b []byte) error {
	sum := sha256.Sum256(b)
	c.prev = hex.EncodeToString(sum[:])
	c.seq++
	if _, err := c.w.Write(b); err != nil {
		return fmt.Errorf("audit: write the export: %w", err)
	}
	if err := c.w.WriteByte('\n'); err != nil {
		return fmt.Errorf("audit: write the export: %w", err)
	}
	return nil
}

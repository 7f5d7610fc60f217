package audit_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/internal/audit"
	"github.com/mcpledger/mcpledger/ledger"
)

// failingPages serves pages until page failAt (counted from 1), which
// fails.
type failingPages struct {
	pages
	failAt int
}

var errStoreGone = errors.New("store: connection lost")

func (p *failingPages) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	if p.calls+1 == p.failAt {
		p.calls++
		return ledger.Page{}, errStoreGone
	}
	return p.pages.List(ctx, f)
}

// A store that fails part way ends the export with its error; what was
// written is the records before it, in order, and no end line, so Verify
// calls the file cut short.
func TestExportStopsAtAListError(t *testing.T) {
	st := &failingPages{pages: pages{records: records(20), size: 3}, failAt: 4}
	var buf bytes.Buffer
	n, err := audit.Export(context.Background(), st, &buf, audit.Options{Tenant: "acme"})
	if !errors.Is(err, errStoreGone) {
		t.Fatalf("Export = %d, %v; want the store's error", n, err)
	}
	if n != 9 {
		t.Errorf("Export wrote %d records before the failing page; want 9 (three pages of 3)", n)
	}
	if strings.Contains(buf.String(), `"kind":"end"`) {
		t.Error("an export that failed has an end line")
	}
	if _, err := audit.Verify(bytes.NewReader(buf.Bytes())); err == nil {
		t.Error("Verify accepts an export that was cut short")
	}
}

// failingWriter takes ok bytes, then fails.
type failingWriter struct{ ok int }

var errDiskFull = errors.New("write /backup/audit.jsonl: no space left on device")

func (w *failingWriter) Write(p []byte) (int, error) {
	if len(p) > w.ok {
		n := w.ok
		w.ok = 0
		return n, errDiskFull
	}
	w.ok -= len(p)
	return len(p), nil
}

// A full disk ends the export with the write's error, while pages are
// still being read and encoded ahead of it.
func TestExportStopsAtAWriteError(t *testing.T) {
	st := &pages{records: records(2000), size: 10}
	_, err := audit.Export(context.Background(), st, &failingWriter{ok: 100 << 10}, audit.Options{Tenant: "acme"})
	if !errors.Is(err, errDiskFull) {
		t.Fatalf("Export = %v; want the write's error", err)
	}
	if st.calls >= 200 {
		t.Errorf("the export read all %d pages after its output failed; want it to stop reading", st.calls)
	}
}

// Each record line is the bytes json.Marshal gives for the whole Line,
// however its encoding is split between the page's encoder and the
// writer.
func TestRecordLinesAreWholeLines(t *testing.T) {
	out := export(t, &pages{records: records(7), size: 2}, audit.Options{Tenant: "acme"})
	lines := bytes.Split(bytes.TrimSuffix(out, []byte("\n")), []byte("\n"))
	records := 0
	for _, l := range lines {
		var line audit.Line
		if err := json.Unmarshal(l, &line); err != nil {
			t.Fatalf("line %s: %v", l, err)
		}
		if line.Kind != audit.KindRecord {
			continue
		}
		records++
		again, err := json.Marshal(line)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(again, l) {
			t.Errorf("record line\n%s\nis not what json.Marshal gives for it:\n%s", l, again)
		}
	}
	if records != 7 {
		t.Errorf("%d record lines; want 7", records)
	}
}

// The free text of a record, its error message and its approval's
// reason, is redacted in an export as a person wrote it: a reason that
// quotes a password does not carry it into the audit file.
func TestExportRedactsFreeText(t *testing.T) {
	recs := records(2)
	recs[0].Approval.Reason = "checked, the vendor's password=hunter2 matches"
	recs[1].State, recs[1].ErrorKind = ledger.StateFailed, "tool_error"
	recs[1].ErrorMessage = "upstream said: token ghp_0123456789abcdefghijABCDEFGHIJ012345 expired"
	out := export(t, &pages{records: recs, size: 10}, audit.Options{Tenant: "acme"})
	for _, secret := range []string{"hunter2", "ghp_0123456789"} {
		if bytes.Contains(out, []byte(secret)) {
			t.Errorf("the export holds %q:\n%s", secret, out)
		}
	}
	if !bytes.Contains(out, []byte("the vendor's password=")) {
		t.Errorf("the export lost the reason around the secret:\n%s", out)
	}
	if recs[0].Approval.Reason != "checked, the vendor's password=hunter2 matches" {
		t.Error("the export changed the store's record; want it to redact a copy")
	}
}

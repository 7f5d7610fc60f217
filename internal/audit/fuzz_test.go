package audit_test

import (
	"bytes"
	"context"
	"errors"
	"testing"

	"github.com/mcpledger/mcpledger/internal/audit"
)

// Whatever a file holds, Verify answers intact or names a line; it never
// calls a changed export intact.
func FuzzVerify(f *testing.F) {
	var good bytes.Buffer
	if _, err := audit.Export(context.Background(), &pages{records: records(2), size: 10}, &good, audit.Options{Tenant: "acme"}); err != nil {
		f.Fatal(err)
	}
	f.Add(good.Bytes(), 0, byte('x'))
	f.Add([]byte("{}\n"), 0, byte('{'))
	f.Add([]byte(""), 0, byte('\n'))
	f.Fuzz(func(t *testing.T, file []byte, at int, b byte) {
		rep, err := audit.Verify(bytes.NewReader(file))
		var broken *audit.Broken
		if err != nil && !errors.As(err, &broken) {
			t.Fatalf("Verify = %v; want intact or a *Broken", err)
		}
		if broken != nil && (broken.Line < 1 || broken.Why == "") {
			t.Fatalf("Verify names line %d (%q)", broken.Line, broken.Why)
		}
		if err == nil && rep.Lines < 2 {
			t.Fatalf("intact with %d lines; an export has a header and an end line", rep.Lines)
		}
		// One changed byte of the good export is always found.
		g := bytes.Clone(good.Bytes())
		if at < 0 {
			at = -at
		}
		i := at % len(g)
		if g[i] == b {
			return
		}
		g[i] = b
		if _, err := audit.Verify(bytes.NewReader(g)); err == nil {
			t.Fatalf("byte %d changed to %q and Verify says intact", i, b)
		}
	})
}

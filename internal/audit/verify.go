package audit

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
)

// ErrBroken is wrapped by every *Broken.
var ErrBroken = errors.New("audit: the export is not intact")

// Broken says where an export stops being intact. Line is 1-based: the
// first line that was changed, or where lines were removed, added or cut.
type Broken struct {
	Line int64
	Why  string
}

func (b *Broken) Error() string {
	return fmt.Sprintf("audit: line %d: %s", b.Line, b.Why)
}

func (b *Broken) Unwrap() error { return ErrBroken }

// Report describes an intact export.
type Report struct {
	Header  Header
	Records int64
	Lines   int64
	// Head is the hash of the last line: keeping it elsewhere makes a
	// wholesale rewrite of the file detectable too.
	Head string
}

// Verify reads an export and checks its chain line by line. It returns
// the report of an intact export; an error wrapping ErrBroken (a *Broken)
// names the first line that does not hold; any other error is a read
// failure.
func Verify(r io.Reader) (Report, error) {
	br := bufio.NewReaderSize(r, 64<<10)
	var (
		rep     Report
		prevSum string
		ended   bool
		n       int64 // line number of the line being read
	)
	for {
		raw, err := br.ReadBytes('\n')
		if err != nil && !errors.Is(err, io.EOF) {
			return rep, fmt.Errorf("audit: read line %d: %w", n+1, err)
		}
		if len(raw) == 0 && errors.Is(err, io.EOF) {
			break
		}
		n++
		b := bytes.TrimSuffix(raw, []byte("\n"))
		if ended {
			return rep, &Broken{Line: n, Why: "a line follows the end line: lines were added"}
		}
		var l Line
		if jerr := json.Unmarshal(b, &l); jerr != nil {
			return rep, &Broken{Line: n, Why: fmt.Sprintf("not a line of an export (%v): it was changed", jerr)}
		}
		if l.Seq != n-1 {
			return rep, &Broken{Line: n, Why: fmt.Sprintf("its sequence number is %d, want %d: lines were removed, added or reordered here", l.Seq, n-1)}
		}
		if l.Prev != prevSum && n == 1 {
			return rep, &Broken{Line: 1, Why: "the first line carries a previous line's hash: it was changed"}
		}
		if l.Prev != prevSum {
			return rep, &Broken{Line: n - 1, Why: fmt.Sprintf("its hash is %s but line %d carries %s: line %d was changed", short(prevSum), n, short(l.Prev), n-1)}
		}
		sum := sha256.Sum256(b)
		prevSum = hex.EncodeToString(sum[:])
		switch {
		case n == 1:
			if l.Kind != KindHeader || l.Header == nil {
				return rep, &Broken{Line: n, Why: "the first line is not the export's header"}
			}
			if l.Header.Format != Format {
				return rep, &Broken{Line: n, Why: fmt.Sprintf("format %q, want %q", l.Header.Format, Format)}
			}
			rep.Header = *l.Header
		case l.Kind == KindRecord && l.Record != nil:
			rep.Records++
		case l.Kind == KindEnd && l.End != nil:
			if l.End.Records != rep.Records {
				return rep, &Broken{Line: n, Why: fmt.Sprintf("the end line counts %d records but %d precede it", l.End.Records, rep.Records)}
			}
			ended = true
		default:
			return rep, &Broken{Line: n, Why: fmt.Sprintf("a line of kind %q without its content: it was changed", l.Kind)}
		}
		rep.Lines, rep.Head = n, prevSum
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if n == 0 {
		return rep, &Broken{Line: 1, Why: "the file is empty: no export header"}
	}
	if !ended {
		return rep, &Broken{Line: n + 1, Why: fmt.Sprintf("the export ends after line %d without its end line: it was cut short", n)}
	}
	return rep, nil
}

func short(h string) string {
	if h == "" {
		return "(none)"
	}
	if len(h) > 12 {
		return h[:12] + "…"
	}
	return h
}

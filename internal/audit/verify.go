package audit

import (
	"bufio"
	"bytes"
	"crypto/ed25519"
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
	// Signature: the chain holds, and its signature line is what does not.
	Signature bool
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
	// Head is the hash of the end line: keeping it elsewhere makes a
	// wholesale rewrite of the file detectable too.
	Head string
	// Signature is the export's signature line, nil for an unsigned
	// export; Verified reports that it was checked against a public key
	// and holds (VerifySigned).
	Signature *Signature
	Verified  bool
}

// Verify reads an export and checks its chain line by line. It returns
// the report of an export whose chain is consistent; an error wrapping
// ErrBroken (a *Broken) names the first line that does not hold; any other
// error is a read failure. A consistent chain proves nothing against
// someone who re-chained the lines they edited: a signature checked with
// VerifySigned does.
func Verify(r io.Reader) (Report, error) { return verify(r, nil) }

// VerifySigned is Verify that also requires the export's signature to hold
// for pub: an unsigned export fails with ErrUnsigned, a signature by
// another key or of another chain with a *Broken naming the signature
// line.
func VerifySigned(r io.Reader, pub ed25519.PublicKey) (Report, error) {
	rep, err := verify(r, pub)
	if err != nil {
		return rep, err
	}
	if rep.Signature == nil {
		return rep, fmt.Errorf("%w: it has no signature line after its end line; it was exported without --sign, or its signature was removed", ErrUnsigned)
	}
	return rep, nil
}

func verify(r io.Reader, pub ed25519.PublicKey) (Report, error) {
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
		if rep.Signature != nil {
			return rep, &Broken{Line: n, Why: "a line follows the signature line: lines were added"}
		}
		var l Line
		if jerr := json.Unmarshal(b, &l); jerr != nil {
			return rep, &Broken{Line: n, Why: fmt.Sprintf("not a line of an export (%v): it was changed", jerr)}
		}
		if ended && (l.Kind != KindSignature || l.Signature == nil) {
			return rep, &Broken{Line: n, Why: "a line follows the end line: lines were added"}
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
		if ended {
			// The signature line: it signs the end line's hash.
			sig := l.Signature
			if sig.Head != prevSum {
				return rep, &Broken{Line: n, Signature: true, Why: fmt.Sprintf("the signature is of the chain ending in %s, not of this file's (%s): the lines were changed", short(sig.Head), short(prevSum))}
			}
			rep.Signature = sig
			if pub != nil {
				if sig.Alg != AlgEd25519 || sig.KeyID != KeyID(pub) {
					return rep, &Broken{Line: n, Signature: true, Why: fmt.Sprintf("signed with %s key %s, not with the given key %s", sig.Alg, sig.KeyID, KeyID(pub))}
				}
				if !ed25519.Verify(pub, SignedMessage(sig.Head), sig.Sig) {
					return rep, &Broken{Line: n, Signature: true, Why: fmt.Sprintf("the signature does not hold for key %s: the export was changed and re-chained, or the signature was forged", sig.KeyID)}
				}
				rep.Verified = true
			}
			rep.Lines = n
			if errors.Is(err, io.EOF) {
				break
			}
			continue
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

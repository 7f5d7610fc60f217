package codec_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/codec/aesgcm"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func sealedStore(t *testing.T) (ledger.Store, *sqlite.Store) {
	t.Helper()
	raw, err := sqlite.Open(context.Background(), filepath.Join(t.TempDir(), "ledger.db"), nil)
	if err != nil {
		t.Fatalf("sqlite.Open = %v", err)
	}
	t.Cleanup(func() { raw.Close() })
	key := make([]byte, aesgcm.KeySize)
	if _, err := rand.Read(key); err != nil {
		t.Fatal(err)
	}
	keys, err := aesgcm.New(key)
	if err != nil {
		t.Fatal(err)
	}
	return codec.Wrap(raw, keys), raw
}

func TestWrapKeepsOptionalParts(t *testing.T) {
	st, raw := sealedStore(t)
	if _, ok := st.(ledger.EventLog); !ok {
		t.Errorf("Wrap(sqlite) is no EventLog; want the store's event log kept")
	}
	if got := ledger.Unwrap(st); got != ledger.Store(raw) {
		t.Errorf("Unwrap(Wrap(st)) = %T; want st", got)
	}
	if got := ledger.Unwrap(raw); got != ledger.Store(raw) {
		t.Errorf("Unwrap(st) = %T; want st itself", got)
	}
}

func TestWrapPaths(t *testing.T) {
	ctx := context.Background()
	st, raw := sealedStore(t)
	id := ledger.ID{Tenant: "acme", Tool: "pay", Key: "order-9"}
	doc := json.RawMessage(`{"to":"bob","amount":1.50}`)
	fp, _ := args.Fingerprint(doc)
	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "w"})
	if err != nil || !c.Won || string(c.Record.Arguments) != string(doc) {
		t.Fatalf("Claim = %+v, %v; want a win with the arguments as given", c, err)
	}
	res := json.RawMessage(`{"content":[{"type":"text","text":"paid bob"}]}`)
	done, err := st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing, To: ledger.StateSucceeded, Owner: "w", Fence: 1, Result: res})
	if err != nil || string(done.Result) != string(res) || string(done.Arguments) != string(doc) {
		t.Fatalf("Transition = %+v, %v; want the plain result and arguments back", done, err)
	}
	stored, err := raw.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !codec.IsEncrypted(stored.Arguments) || !codec.IsEncrypted(stored.Result) || strings.Contains(string(stored.Result), "bob") {
		t.Fatalf("stored = %s / %s; want both sealed", stored.Arguments, stored.Result)
	}

	// A follower gets the record opened.
	c, err = st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Arguments: doc, Owner: "x"})
	if err != nil || c.Won || string(c.Record.Result) != string(res) {
		t.Fatalf("follower Claim = %+v, %v; want the opened record", c, err)
	}
	// A reused key is refused, and the stored record it returns is opened.
	other := json.RawMessage(`{"to":"eve","amount":9}`)
	ofp, _ := args.Fingerprint(other)
	c, err = st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: ofp, Arguments: other, Owner: "x"})
	if !errors.Is(err, ledger.ErrKeyReused) || c.Record == nil || string(c.Record.Arguments) != string(doc) {
		t.Fatalf("Claim with other arguments = %+v, %v; want ErrKeyReused with the stored arguments opened", c, err)
	}
	for name, read := range map[string]func() (*ledger.Record, error){
		"Get":  func() (*ledger.Record, error) { return st.Get(ctx, id) },
		"Wait": func() (*ledger.Record, error) { return st.Wait(ctx, id) },
		"FindRecent": func() (*ledger.Record, error) {
			recs, err := st.FindRecent(ctx, ledger.RecentQuery{Tenant: "acme", Tool: "pay", Fingerprint: fp})
			if err != nil || len(recs) != 1 {
				return nil, errors.Join(err, errors.New("want one record"))
			}
			return recs[0], nil
		},
		"List": func() (*ledger.Record, error) {
			p, err := st.List(ctx, ledger.Filter{Tenant: "acme"})
			if err != nil || len(p.Records) != 1 {
				return nil, errors.Join(err, errors.New("want one record"))
			}
			return p.Records[0], nil
		},
	} {
		r, err := read()
		if err != nil || string(r.Arguments) != string(doc) || string(r.Result) != string(res) {
			t.Errorf("%s = %+v, %v; want the record opened", name, r, err)
		}
	}
}

func TestSealedOf(t *testing.T) {
	for name, tc := range map[string]struct {
		stored   string
		sealed   bool
		errorHas string
	}{
		"plain":      {`{"to":"bob"}`, false, ""},
		"lookalike":  {`{"mcpledger/encryptedx":1}`, false, ""},
		"envelope":   {`{"mcpledger/encrypted":1,"alg":"A256GCM","kid":"ab","data":"AAAA"}`, true, ""},
		"newer":      {`{"mcpledger/encrypted":2,"alg":"X","kid":"ab","data":"AAAA"}`, true, "upgrade"},
		"damaged":    {`{"mcpledger/encrypted":1,"alg":`, true, "damaged"},
		"bad base64": {`{"mcpledger/encrypted":1,"alg":"A256GCM","kid":"ab","data":"!!"}`, true, "damaged"},
	} {
		s, ok, err := codec.SealedOf([]byte(tc.stored))
		if ok != tc.sealed {
			t.Errorf("%s: SealedOf = sealed %v; want %v", name, ok, tc.sealed)
		}
		if tc.errorHas == "" && err != nil || tc.errorHas != "" && (err == nil || !strings.Contains(err.Error(), tc.errorHas)) {
			t.Errorf("%s: SealedOf = %v; want an error saying %q", name, err, tc.errorHas)
		}
		if name == "envelope" && (s.Alg != "A256GCM" || s.KeyID != "ab" || len(s.Data) != 3) {
			t.Errorf("SealedOf(envelope) = %+v", s)
		}
	}
}

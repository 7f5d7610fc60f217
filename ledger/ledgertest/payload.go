package ledgertest

import (
	"bytes"
	"encoding/json"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/args"
)

// bigResult is exactly size bytes of valid JSON that no JSON store may
// normalize: odd spacing, duplicate-free but unsorted keys, escapes next to
// raw multi-byte UTF-8, and random text.
func bigResult(size int) json.RawMessage {
	head := []byte(`{ "z" : 1,"content":[{"type":"text","text":"caf\u00e9 café 🚀 \"quoted\" \\ `)
	tail := []byte(`"}] ,"a":1.0e0 }`)
	rng := rand.New(rand.NewPCG(1, 2))
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,-"
	fill := make([]byte, size-len(head)-len(tail))
	for i := range fill {
		fill[i] = alphabet[rng.IntN(len(alphabet))]
	}
	return slices.Concat(head, fill, tail)
}

func testPayload(t *testing.T, newStore NewStore) {
	t.Run("OneMiBResult", func(t *testing.T) {
		e := newEnv(t, newStore)
		result := bigResult(1 << 20)
		if !json.Valid(result) || len(result) != 1<<20 {
			t.Fatalf("test payload: valid %v, %d bytes", json.Valid(result), len(result))
		}
		claimed := e.mustClaim(req("big", "owner-1"))
		waiter := e.startWait(e.ctx, id("big"))
		got := e.mustTransition(ledger.Transition{ID: id("big"), From: ledger.StateProcessing, To: ledger.StateSucceeded,
			Owner: "owner-1", Fence: claimed.Fence, Result: result})
		check := func(how string, r *ledger.Record) {
			t.Helper()
			if r == nil || !bytes.Equal(r.Result, result) {
				t.Errorf("%s: the 1 MiB result did not round-trip byte for byte (got %d bytes)", how, len(resultOf(r)))
			}
		}
		check("Transition", got)
		check("Get", e.mustGet(id("big")))
		c, err := e.st.Claim(e.ctx, req("big", "owner-2"))
		if err != nil {
			t.Fatalf("follower Claim = %v", err)
		}
		check("follower Claim", c.Record)
		w := e.awaitWait(waiter)
		if w.err != nil {
			t.Fatalf("Wait = %v", w.err)
		}
		check("Wait", w.rec)
		p, err := e.st.List(e.ctx, ledger.Filter{Tenant: tenant})
		if err != nil || len(p.Records) != 1 {
			t.Fatalf("List = %d records, %v; want 1", len(p.Records), err)
		}
		check("List", p.Records[0])
	})

	t.Run("Unicode", func(t *testing.T) {
		e := newEnv(t, newStore)
		doc := json.RawMessage(`{"name":"Zoë 🚀","rtl":"שלום עולם","combining":"e` + "\u0301" + `","escaped":"\u00e9\ud83d\ude80","nul":"a\u0000b","cjk":"支払い"}`)
		fingerprint, err := args.Fingerprint(doc)
		if err != nil {
			t.Fatalf("Fingerprint = %v", err)
		}
		r := ledger.ClaimRequest{
			ID:          ledger.ID{Tenant: tenant, Tool: "créer_paiement_💳", Key: "k1"},
			Session:     "sessión-🌍",
			Fingerprint: fingerprint,
			Arguments:   doc,
			Owner:       "wörker-1",
		}
		claimed := e.mustClaim(r)
		e.clock.Advance(time.Second)
		e.mustTransition(ledger.Transition{ID: r.ID, From: ledger.StateProcessing, To: ledger.StateFailed, Owner: r.Owner, Fence: claimed.Fence,
			Result:    json.RawMessage(`{"isError":true,"content":[{"type":"text","text":"карта отклонена ✗"}]}`),
			ErrorKind: "tool_error", ErrorMessage: "карта отклонена ✗"})
		want := e.mustGet(r.ID)
		if !bytes.Equal(want.Arguments, doc) || want.Session != r.Session || want.Owner != r.Owner || want.ErrorMessage != "карта отклонена ✗" {
			t.Errorf("unicode record = arguments %s session %q owner %q error %q; want them byte for byte", want.Arguments, want.Session, want.Owner, want.ErrorMessage)
		}
		recent, err := e.st.FindRecent(e.ctx, ledger.RecentQuery{Tenant: tenant, Session: r.Session, Tool: r.Tool, Fingerprint: fingerprint, Since: Start})
		if err != nil || len(recent) != 1 {
			t.Fatalf("FindRecent(unicode session and tool) = %v, %v; want the record", keys(recent), err)
		}
		if d := diff(recent[0], want); d != "" {
			t.Errorf("FindRecent record: %s", d)
		}
		p, err := e.st.List(e.ctx, ledger.Filter{Tenant: tenant, Tool: r.Tool, Session: r.Session})
		if err != nil || len(p.Records) != 1 {
			t.Fatalf("List(unicode tool and session) = %v, %v; want the record", keys(p.Records), err)
		}
		if d := diff(p.Records[0], want); d != "" {
			t.Errorf("List record: %s", d)
		}
	})
}

func resultOf(r *ledger.Record) []byte {
	if r == nil {
		return nil
	}
	return r.Result
}

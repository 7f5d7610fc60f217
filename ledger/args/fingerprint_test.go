package args_test

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"math"
	"strconv"
	"strings"
	"testing"
	"unicode/utf16"

	"github.com/mcpledger/mcpledger/ledger/args"
)

// TestCanonicalRFC8785 checks the examples printed in RFC 8785 itself.
func TestCanonicalRFC8785(t *testing.T) {
	cases := []struct {
		name string
		in   string
		want string
	}{
		{
			// Section 3.2.2, the sample object and its canonical form.
			name: "section 3.2.2 sample",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50,
              2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			// Section 3.2.3: names sort by UTF-16 code units, so the
			// emoji (a surrogate pair, 0xD83D...) sorts before U+FB33.
			name: "section 3.2.3 sorting",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\"," +
				"\"\u00f6\":\"Latin Small Letter O With Diaeresis\",\"\u20ac\":\"Euro Sign\"," +
				"\"\U0001F600\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{name: "1E30", in: `[1E30]`, want: `[1e+30]`},
		{name: "1e+30", in: `[1e+30]`, want: `[1e+30]`},
		{name: "4.50", in: `[4.50]`, want: `[4.5]`},
		{name: "2e-3", in: `[2e-3]`, want: `[0.002]`},
		{name: "0.000001", in: `[0.000001]`, want: `[0.000001]`},
		{name: "1e-7", in: `[1e-7]`, want: `[1e-7]`},
		{name: "1e-27", in: `[0.000000000000000000000000001]`, want: `[1e-27]`},
		{name: "1e21", in: `[1000000000000000000000]`, want: `[1e+21]`},
		{name: "below 1e21", in: `[999999999999999900000]`, want: `[999999999999999900000]`},
		{name: "minus zero", in: `[-0, -0.0, 0e5]`, want: `[0,0,0]`},
		{name: "euro escape", in: `["\u20ac"]`, want: `["€"]`},
		{name: "control escape lower-cased", in: `["\u000F"]`, want: `["\u000f"]`},
		{name: "short escapes kept", in: `["\b\f\n\r\t"]`, want: `["\b\f\n\r\t"]`},
		{name: "solidus unescaped", in: `["\/"]`, want: `["/"]`},
		{name: "DEL stays raw", in: `["\u007f"]`, want: "[\"\x7f\"]"},
		{name: "html characters stay raw", in: `["\u003c\u0026\u003e"]`, want: `["<&>"]`},
		{name: "nested objects sorted", in: `{"b":{"d":1,"c":2},"a":[{"z":0,"y":1}]}`, want: `{"a":[{"y":1,"z":0}],"b":{"c":2,"d":1}}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := args.Canonical(json.RawMessage(tc.in))
			if err != nil {
				t.Fatalf("Canonical(%s) = %v", tc.in, err)
			}
			if string(got) != tc.want {
				t.Fatalf("Canonical(%s) = %s; want %s", tc.in, got, tc.want)
			}
		})
	}
}

// TestCanonicalRFC8785Numbers checks the number serialization table of
// RFC 8785 Appendix B. Each double is written with 17 significant digits in
// exponent form (a non-canonical spelling) and must come back in the RFC's
// spelling. NaN and Infinity have no JSON spelling and are left out.
func TestCanonicalRFC8785Numbers(t *testing.T) {
	cases := []struct{ bits, want string }{
		{"0000000000000000", "0"},
		{"8000000000000000", "0"},
		{"0000000000000001", "5e-324"},
		{"8000000000000001", "-5e-324"},
		{"7fefffffffffffff", "1.7976931348623157e+308"},
		{"ffefffffffffffff", "-1.7976931348623157e+308"},
		{"4340000000000000", "9007199254740992"},
		{"c340000000000000", "-9007199254740992"},
		{"4430000000000000", "295147905179352830000"},
		{"44b52d02c7e14af5", "9.999999999999997e+22"},
		{"44b52d02c7e14af6", "1e+23"},
		{"44b52d02c7e14af7", "1.0000000000000001e+23"},
		{"444b1ae4d6e2ef4e", "999999999999999700000"},
		{"444b1ae4d6e2ef4f", "999999999999999900000"},
		{"444b1ae4d6e2ef50", "1e+21"},
		{"3eb0c6f7a0b5ed8c", "9.999999999999997e-7"},
		{"3eb0c6f7a0b5ed8d", "0.000001"},
		{"41b3de4355555553", "333333333.3333332"},
		{"41b3de4355555554", "333333333.33333325"},
		{"41b3de4355555555", "333333333.3333333"},
		{"41b3de4355555556", "333333333.3333334"},
		{"41b3de4355555557", "333333333.33333343"},
		{"becbf647612f3696", "-0.0000033333333333333333"},
		{"43143ff3c1cb0959", "1424953923781206.2"},
	}
	for _, tc := range cases {
		t.Run(tc.bits, func(t *testing.T) {
			u, err := strconv.ParseUint(tc.bits, 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			in := strconv.FormatFloat(math.Float64frombits(u), 'e', 16, 64)
			got, err := args.Canonical(json.RawMessage(in))
			if err != nil {
				t.Fatalf("Canonical(%s) = %v", in, err)
			}
			if string(got) != tc.want {
				t.Fatalf("Canonical(%s) = %s; want %s", in, got, tc.want)
			}
		})
	}
}

func mustFingerprint(t *testing.T, doc string, exclude ...string) string {
	t.Helper()
	fp, err := args.Fingerprint(json.RawMessage(doc), exclude...)
	if err != nil {
		t.Fatalf("Fingerprint(%s) = %v", doc, err)
	}
	return fp
}

func TestFingerprintInvariance(t *testing.T) {
	cases := []struct {
		name string
		a, b string
	}{
		{name: "key order", a: `{"to":"bob","amount":100,"currency":"EUR"}`, b: `{"currency":"EUR","amount":100,"to":"bob"}`},
		{name: "nested key order", a: `{"o":{"x":1,"y":[{"b":1,"a":2}]}}`, b: `{"o":{"y":[{"a":2,"b":1}],"x":1}}`},
		{name: "whitespace", a: `{"a":[1,2],"b":"x"}`, b: " \n{ \"a\" :\t[ 1 ,\r\n 2 ] , \"b\" : \"x\" }\n "},
		{name: "1 vs 1.0", a: `{"n":1}`, b: `{"n":1.0}`},
		{name: "1 vs 1e0", a: `{"n":1}`, b: `{"n":1e0}`},
		{name: "1 vs 10E-1", a: `{"n":1}`, b: `{"n":10E-1}`},
		{name: "100 vs 1e+2", a: `{"n":100}`, b: `{"n":1e+2}`},
		{name: "0 vs -0", a: `{"n":0}`, b: `{"n":-0.0}`},
		{name: "unicode escape vs raw", a: `{"city":"M\u00fcnchen","sym":"\u20ac"}`, b: `{"city":"München","sym":"€"}`},
		{name: "escaped name", a: `{"\u0061mount":1}`, b: `{"amount":1}`},
		{name: "surrogate pair vs raw", a: `{"e":"\ud83d\ude00"}`, b: `{"e":"😀"}`},
		{name: "solidus", a: `{"p":"a\/b"}`, b: `{"p":"a/b"}`},
		{name: "null vs empty", a: `null`, b: ``},
		{name: "empty object vs nothing", a: `{}`, b: `   `},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fa, fb := mustFingerprint(t, tc.a), mustFingerprint(t, tc.b)
			if fa != fb {
				t.Fatalf("Fingerprint(%s) = %s, Fingerprint(%s) = %s; want equal", tc.a, fa, tc.b, fb)
			}
		})
	}
}

func TestFingerprintIsSHA256OfCanonical(t *testing.T) {
	doc := `{"b":2,"a":1.50}`
	sum := sha256.Sum256([]byte(`{"a":1.5,"b":2}`))
	if got, want := mustFingerprint(t, doc), hex.EncodeToString(sum[:]); got != want {
		t.Fatalf("Fingerprint(%s) = %s; want %s", doc, got, want)
	}
}

func TestFingerprintExclusions(t *testing.T) {
	base := `{"to":"bob","amount":100}`
	want := mustFingerprint(t, base)
	for _, field := range args.DefaultExcluded {
		t.Run("default "+field, func(t *testing.T) {
			doc := `{"to":"bob",` + strconv.Quote(field) + `:{"anything":[1,"x"]},"amount":100}`
			if got := mustFingerprint(t, doc); got != want {
				t.Fatalf("Fingerprint(%s) = %s; want %s (as without %s)", doc, got, want, field)
			}
		})
	}
	t.Run("all defaults at once", func(t *testing.T) {
		doc := `{"_meta":{"progressToken":1},"traceparent":"00-abc-def-01","tracestate":"x=y",` +
			`"trace_id":"t","request_id":"r-9","timestamp":"2026-01-01T00:00:00Z","idempotency_key":"k",` +
			`"to":"bob","amount":100}`
		if got := mustFingerprint(t, doc); got != want {
			t.Fatalf("Fingerprint(%s) = %s; want %s", doc, got, want)
		}
	})
	t.Run("per-call exclusions", func(t *testing.T) {
		doc := `{"to":"bob","amount":100,"client_ref":"r-1","nonce":7}`
		if got := mustFingerprint(t, doc, "client_ref", "nonce"); got != want {
			t.Fatalf("Fingerprint(%s, client_ref, nonce) = %s; want %s", doc, got, want)
		}
		if got := mustFingerprint(t, doc, "client_ref"); got == want {
			t.Fatalf("Fingerprint(%s, client_ref) = %s; want it to differ (nonce is business data)", doc, got)
		}
	})
	t.Run("exclusion of an absent field", func(t *testing.T) {
		if got := mustFingerprint(t, base, "absent"); got != want {
			t.Fatalf("Fingerprint(%s, absent) = %s; want %s", base, got, want)
		}
	})
}

func TestFingerprintBusinessFields(t *testing.T) {
	base := `{"to":"bob","amount":100,"meta":{"_meta":1}}`
	want := mustFingerprint(t, base)
	cases := []struct{ name, doc string }{
		{name: "amount", doc: `{"to":"bob","amount":101,"meta":{"_meta":1}}`},
		{name: "recipient", doc: `{"to":"Bob","amount":100,"meta":{"_meta":1}}`},
		{name: "number as string", doc: `{"to":"bob","amount":"100","meta":{"_meta":1}}`},
		{name: "added field", doc: `{"to":"bob","amount":100,"memo":"","meta":{"_meta":1}}`},
		{name: "null field", doc: `{"to":"bob","amount":100,"memo":null,"meta":{"_meta":1}}`},
		{name: "removed field", doc: `{"to":"bob","meta":{"_meta":1}}`},
		// Exclusions apply at the top level only: a nested _meta is data.
		{name: "nested _meta", doc: `{"to":"bob","amount":100,"meta":{"_meta":2}}`},
		{name: "case of excluded name", doc: `{"to":"bob","amount":100,"meta":{"_meta":1},"Timestamp":1}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := mustFingerprint(t, tc.doc); got == want {
				t.Fatalf("Fingerprint(%s) = %s; want it to differ from Fingerprint(%s)", tc.doc, got, base)
			}
		})
	}
}

func TestFingerprintRejects(t *testing.T) {
	cases := []struct{ name, doc string }{
		{name: "not JSON", doc: `{to: bob}`},
		{name: "truncated", doc: `{"a":1`},
		{name: "trailing data", doc: `{"a":1} {}`},
		{name: "duplicate name", doc: `{"a":1,"a":2}`},
		{name: "duplicate name beside an excluded field", doc: `{"a":1,"a":2,"_meta":{}}`},
		{name: "duplicate excluded field", doc: `{"_meta":1,"_meta":2,"a":1}`},
		{name: "lone surrogate", doc: `{"a":"\ud800"}`},
		{name: "lone surrogate name beside an excluded field", doc: `{"\udc00":1,"_meta":1}`},
		{name: "invalid UTF-8", doc: "{\"a\":\"\xff\"}"},
		{name: "invalid UTF-8 name beside an excluded field", doc: "{\"\xff\":1,\"_meta\":1}"},
		{name: "number out of range", doc: `{"a":1e400}`},
		{name: "NaN", doc: `{"a":NaN}`},
		{name: "leading zero", doc: `{"a":01}`},
		{name: "hex number", doc: `{"a":0x10}`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			fp, err := args.Fingerprint(json.RawMessage(tc.doc))
			if err == nil {
				t.Fatalf("Fingerprint(%q) = %s, nil; want an error", tc.doc, fp)
			}
			if !strings.HasPrefix(err.Error(), "args: ") {
				t.Errorf("Fingerprint(%q) error = %q; want the package prefix", tc.doc, err)
			}
		})
	}
}

// FuzzFingerprint checks that canonicalization never panics, that its output
// is a fixed point, and that any re-spelling of the same value (shuffled
// names, other whitespace, other number and string spellings, an added
// excluded field) keeps the fingerprint.
func FuzzFingerprint(f *testing.F) {
	for _, seed := range []string{
		`{}`, `null`, `[]`, `1`, `"s"`, `{"a":1,"b":[true,false,null]}`,
		`{"numbers":[333333333.33333329,1E30,4.50,2e-3,1e-27],"s":"\u20ac\u000f"}`,
		`{"\ud83d\ude00":{"\u0080":[-0,1e21,5e-324]},"_meta":{"x":1}}`,
		`{"a":1,"a":2}`, `{"a":"\ud800"}`, "{\"\xff\":1}", `[[[[{"z":{"y":{}}}]]]]`,
	} {
		f.Add([]byte(seed), uint64(1))
	}
	f.Fuzz(func(t *testing.T, data []byte, seed uint64) {
		canon, err := args.Canonical(data)
		if err != nil {
			if _, ferr := args.Fingerprint(data); ferr == nil {
				t.Fatalf("Canonical(%q) failed (%v) but Fingerprint succeeded", data, err)
			}
			return
		}
		again, err := args.Canonical(canon)
		if err != nil {
			t.Fatalf("Canonical(Canonical(%q)) = %v; want %s", data, err, canon)
		}
		if !bytes.Equal(again, canon) {
			t.Fatalf("Canonical(Canonical(%q)) = %s; want %s", data, again, canon)
		}
		want, err := args.Fingerprint(data)
		if err != nil {
			t.Fatalf("Fingerprint(%q) = %v after Canonical succeeded", data, err)
		}

		dec := json.NewDecoder(bytes.NewReader(canon))
		dec.UseNumber()
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatalf("canonical output %s does not decode: %v", canon, err)
		}
		r := respeller{state: seed | 1}
		if obj, ok := v.(map[string]any); ok {
			// An excluded field anywhere in the top-level object changes
			// nothing.
			obj["_meta"] = map[string]any{"progressToken": json.Number("7")}
		}
		r.write(v)
		got, err := args.Fingerprint(r.buf.Bytes())
		if err != nil {
			t.Fatalf("Fingerprint(%s) = %v; a respelling of %s", r.buf.Bytes(), err, canon)
		}
		if got != want {
			t.Fatalf("Fingerprint(%s) = %s; want %s (as %s)", r.buf.Bytes(), got, want, canon)
		}
	})
}

// respeller writes a decoded JSON value in a randomly chosen but equivalent
// spelling: members shuffled, whitespace sprinkled, strings partly escaped,
// numbers in exponent form.
type respeller struct {
	buf   bytes.Buffer
	state uint64
}

func (r *respeller) next() uint64 {
	// xorshift64: deterministic per fuzz input, no shared state.
	r.state ^= r.state << 13
	r.state ^= r.state >> 7
	r.state ^= r.state << 17
	return r.state
}

func (r *respeller) space() {
	r.buf.WriteString([]string{"", " ", "\n", "\t", "\r\n  "}[r.next()%5])
}

func (r *respeller) write(v any) {
	r.space()
	switch t := v.(type) {
	case map[string]any:
		names := make([]string, 0, len(t))
		for k := range t {
			names = append(names, k)
		}
		for i := len(names) - 1; i > 0; i-- {
			j := int(r.next() % uint64(i+1))
			names[i], names[j] = names[j], names[i]
		}
		r.buf.WriteByte('{')
		for i, k := range names {
			if i > 0 {
				r.buf.WriteByte(',')
			}
			r.space()
			r.str(k)
			r.space()
			r.buf.WriteByte(':')
			r.write(t[k])
		}
		r.space()
		r.buf.WriteByte('}')
	case []any:
		r.buf.WriteByte('[')
		for i, e := range t {
			if i > 0 {
				r.buf.WriteByte(',')
			}
			r.write(e)
		}
		r.space()
		r.buf.WriteByte(']')
	case string:
		r.str(t)
	case json.Number:
		f, err := strconv.ParseFloat(string(t), 64)
		if err != nil || r.next()%2 == 0 {
			r.buf.WriteString(string(t))
			break
		}
		r.buf.WriteString(strconv.FormatFloat(f, 'E', 16, 64))
	case bool:
		r.buf.WriteString(strconv.FormatBool(t))
	case nil:
		r.buf.WriteString("null")
	}
	r.space()
}

func (r *respeller) str(s string) {
	r.buf.WriteByte('"')
	for _, c := range s {
		switch {
		case c == '"' || c == '\\':
			r.buf.WriteByte('\\')
			r.buf.WriteRune(c)
		case c < 0x20 || r.next()%3 == 0:
			if c > 0xffff {
				c1, c2 := utf16.EncodeRune(c)
				fmt.Fprintf(&r.buf, `\u%04x\u%04X`, c1, c2)
				continue
			}
			fmt.Fprintf(&r.buf, `\u%04x`, c)
		default:
			r.buf.WriteRune(c)
		}
	}
	r.buf.WriteByte('"')
}

func TestFingerprintRespellerSelfCheck(t *testing.T) {
	// The fuzz oracle must itself produce valid, equivalent JSON; check it
	// on a value with every kind of member.
	in := `{"s":"a\"b\\c\u0001😀€","n":[1.5,-0,1e21],"o":{"t":true,"f":false,"z":null}}`
	var v any
	dec := json.NewDecoder(strings.NewReader(in))
	dec.UseNumber()
	if err := dec.Decode(&v); err != nil {
		t.Fatal(err)
	}
	for seed := uint64(1); seed < 50; seed++ {
		r := respeller{state: seed}
		r.write(v)
		if !json.Valid(r.buf.Bytes()) {
			t.Fatalf("respeller(seed %d) wrote invalid JSON %s", seed, r.buf.Bytes())
		}
		if got, want := mustFingerprint(t, r.buf.String()), mustFingerprint(t, in); got != want {
			t.Fatalf("Fingerprint(%s) = %s; want %s", r.buf.Bytes(), got, want)
		}
	}
}

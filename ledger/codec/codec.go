// Package codec keeps a ledger's payloads (a record's arguments and its
// result) sealed at rest, the way Temporal's payload codec does for
// workflow data: the Store never sees the plain bytes, and replays get
// them back exactly.
//
//	keys, err := aesgcm.LoadKeyFile("/etc/mcpledger/ledger.keys")
//	st = codec.Wrap(st, keys)
//
// Rekey seals every record again with a codec's current key (key
// rotation); CheckKeys tells whether a process may write into a ledger
// that holds sealed payloads. ledger/codec/aesgcm is the codec mcpledger
// ships.
package codec

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
)

// A Codec turns the payloads a Store keeps (a record's arguments and its
// result) into their at-rest form and back: the Store never sees the
// plain bytes. ledger/codec/aesgcm is the one mcpledger ships (AES-256-GCM
// with a keyring).
//
// Encode must seal with the codec's current key; Decode must open what any
// of its keys sealed, and fail with an error wrapping ErrNoKey when it does
// not hold the key s names. Both get the record's identity and the field
// ("arguments" or "result") so a codec can bind the sealed bytes to them.
type Codec interface {
	Encode(ctx context.Context, id ledger.ID, field string, plain []byte) (Sealed, error)
	Decode(ctx context.Context, id ledger.ID, field string, s Sealed) ([]byte, error)
}

// Sealed is one payload in its at-rest form.
type Sealed struct {
	// Alg names the codec's scheme ("A256GCM").
	Alg string
	// KeyID names the key that sealed Data, so a keyring finds it after
	// rotation.
	KeyID string
	Data  []byte
}

// Payload fields, as passed to a Codec.
const (
	FieldArguments = "arguments"
	FieldResult    = "result"
)

// Encrypted is what List shows for a payload this process cannot decrypt.
const Encrypted = "[encrypted]"

// encryptedJSON is Encrypted as the JSON value List puts in its place.
var encryptedJSON = json.RawMessage(`"` + Encrypted + `"`)

// ErrNoKey: a payload is encrypted with a key this process does not hold
// (no key configured, or a keyring without that key id).
var ErrNoKey = errors.New("codec: no key for an encrypted payload")

// ErrKeyMismatch wraps ErrNoKey when a key is configured but is not the
// one the ledger's payloads name: the key file does not match the ledger.
var ErrKeyMismatch = fmt.Errorf("%w: the ledger key does not match", ErrNoKey)

// KeyRing is the optional part of a Codec that names the keys it holds
// (aesgcm.Keyring), so a key that does not match a ledger is told apart
// from a missing one.
type KeyRing interface {
	KeyIDs() []string
}

// CheckKeys reports whether a process with codec c (nil: no key) may
// write new payloads into st: a ledger that holds sealed payloads takes no
// plain ones, and none sealed with a key that does not match. The error
// wraps ErrNoKey (no key given) or ErrKeyMismatch and names the key id the
// ledger needs. A store without a ledger.SealedProbe is not checked.
func CheckKeys(ctx context.Context, st ledger.Store, c Codec) error {
	_, err := checkKeys(ctx, st, c)
	return err
}

// checkKeys is CheckKeys that also reports whether the answer lasts: the
// ledger holds a key c holds.
func checkKeys(ctx context.Context, st ledger.Store, c Codec) (lasting bool, err error) {
	probe, ok := ledger.Unwrap(st).(ledger.SealedProbe)
	if !ok {
		return true, nil
	}
	kid, err := probe.SealedKeyID(ctx)
	if err != nil {
		return false, fmt.Errorf("codec: look for encrypted records: %w", err)
	}
	if kid == "" {
		return false, nil
	}
	if c == nil {
		return true, fmt.Errorf("codec: this ledger holds records encrypted with key id %s, and no ledger key is given, so nothing is written in clear beside them; pass the key file that holds key %s (--ledger-key-file, MCPLEDGER_LEDGER_KEY_FILE): %w", kid, kid, ErrNoKey)
	}
	kr, ok := c.(KeyRing)
	if !ok {
		return true, nil
	}
	ids := kr.KeyIDs()
	for _, id := range ids {
		if id == kid {
			return true, nil
		}
	}
	return true, fmt.Errorf("codec: this ledger's records are encrypted with key id %s, and the ledger key file holds key id(s) %s instead; pass the key file that holds key %s: %w", kid, strings.Join(ids, ", "), kid, ErrKeyMismatch)
}

// envelope is the stored form of a sealed payload: versioned JSON, so a
// reader without the codec still gets valid JSON and can tell it apart
// from plain arguments.
type envelope struct {
	Version int    `json:"mcpledger/encrypted"`
	Alg     string `json:"alg"`
	KeyID   string `json:"kid"`
	Data    []byte `json:"data"` // base64
}

var envelopePrefix = []byte(ledger.SealedPrefix)

const envelopeVersion = 1

// IsEncrypted reports whether stored is a sealed payload (as a Store keeps
// it under Wrap), not plain JSON.
func IsEncrypted(stored []byte) bool { return bytes.HasPrefix(stored, envelopePrefix) }

// SealedOf parses a stored payload. ok is false for a plain one.
func SealedOf(stored []byte) (s Sealed, ok bool, err error) {
	if !IsEncrypted(stored) {
		return Sealed{}, false, nil
	}
	var e envelope
	if err := json.Unmarshal(stored, &e); err != nil {
		return Sealed{}, true, fmt.Errorf("codec: a stored payload has a damaged encryption envelope: %w", err)
	}
	if e.Version != envelopeVersion {
		return Sealed{}, true, fmt.Errorf("codec: a stored payload is sealed in envelope version %d; this build reads version %d, so upgrade it", e.Version, envelopeVersion)
	}
	return Sealed{Alg: e.Alg, KeyID: e.KeyID, Data: e.Data}, true, nil
}

// marshalSealed is the stored form of s.
func marshalSealed(s Sealed) (json.RawMessage, error) {
	return json.Marshal(envelope{Version: envelopeVersion, Alg: s.Alg, KeyID: s.KeyID, Data: s.Data})
}

// Wrap returns a Store that keeps arguments and results sealed by c and
// opens them on every read, so st (SQLite, PostgreSQL or any other) needs
// no change and replays get their bytes back exactly. Payloads stored
// before encryption was turned on are read as they are.
//
// A payload c cannot open fails the read (Get, Wait, FindRecent, and a
// Claim that finds the record) with an error naming the record; List,
// which serves people and the model, shows Encrypted in its place, and so
// do a Claim that won and a Transition, whose writes are done. With a nil
// c nothing is sealed and every sealed payload reads as Encrypted in List.
//
// The returned Store also implements ledger.EventLog when st does. Other
// optional interfaces of st are reached with ledger.Unwrap.
func Wrap(st ledger.Store, c Codec) ledger.Store {
	cs := &codecStore{Store: st, codec: c}
	if el, ok := st.(ledger.EventLog); ok {
		return &codecEventStore{codecStore: cs, EventLog: el}
	}
	return cs
}

type codecStore struct {
	ledger.Store
	codec Codec

	mu      sync.Mutex // guards refused and okUntil
	refused error      // CheckKeys' lasting refusal
	okUntil time.Time  // claims pass unchecked until then
}

// recheckKeys is how long a ledger found without a key this process can
// rely on is taken as such: another process may start encrypting it.
const recheckKeys = 10 * time.Second

// guard refuses a claim that would write a payload the ledger must not
// take from this process (CheckKeys). Only claims: a call already claimed
// records its outcome whatever happened meanwhile, since an outcome lost
// is worse than one written in clear.
func (s *codecStore) guard(ctx context.Context) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.refused != nil {
		return s.refused
	}
	if time.Now().Before(s.okUntil) {
		return nil
	}
	lasting, err := checkKeys(ctx, s.Store, s.codec)
	switch {
	case errors.Is(err, ErrNoKey):
		s.refused = err
		return err
	case err != nil:
		return err
	case lasting:
		s.okUntil = time.Now().Add(100 * 365 * 24 * time.Hour)
	default:
		s.okUntil = time.Now().Add(recheckKeys)
	}
	return nil
}

type codecEventStore struct {
	*codecStore
	ledger.EventLog
}

func (s *codecStore) Unwrap() ledger.Store { return s.Store }

func (s *codecStore) Claim(ctx context.Context, req ledger.ClaimRequest) (ledger.Claim, error) {
	if err := s.guard(ctx); err != nil {
		return ledger.Claim{}, err
	}
	plain := req.Arguments
	sealed, err := s.seal(ctx, req.ID, FieldArguments, req.Arguments)
	if err != nil {
		return ledger.Claim{}, err
	}
	req.Arguments = sealed
	c, err := s.Store.Claim(ctx, req)
	if c.Record != nil {
		if c.Won && bytes.Equal(c.Record.Arguments, sealed) {
			// A new record: its arguments are the ones just sealed.
			c.Record.Arguments = plain
		}
		if oerr := s.open(ctx, c.Record); oerr != nil {
			// A winner owns the operation now and runs it with its own
			// arguments; a follower needs the stored result.
			if err == nil && !c.Won {
				return ledger.Claim{}, oerr
			}
			s.openOr(ctx, c.Record)
		}
	}
	return c, err
}

func (s *codecStore) Transition(ctx context.Context, t ledger.Transition) (*ledger.Record, error) {
	plain := t.Result
	sealed, err := s.seal(ctx, t.ID, FieldResult, t.Result)
	if err != nil {
		return nil, err
	}
	t.Result = sealed
	r, err := s.Store.Transition(ctx, t)
	if r != nil {
		if len(plain) > 0 && bytes.Equal(r.Result, sealed) {
			r.Result = plain
		}
		if s.open(ctx, r) != nil {
			// The transition is written; what cannot be opened of the
			// record it returns is shown as Encrypted.
			s.openOr(ctx, r)
		}
	}
	return r, err
}

func (s *codecStore) Get(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	r, err := s.Store.Get(ctx, id)
	if err != nil {
		return r, err
	}
	if err := s.open(ctx, r); err != nil {
		return nil, err
	}
	return r, nil
}

func (s *codecStore) Wait(ctx context.Context, id ledger.ID) (*ledger.Record, error) {
	r, err := s.Store.Wait(ctx, id)
	if r != nil {
		if oerr := s.open(ctx, r); oerr != nil {
			if err == nil {
				return nil, oerr
			}
			s.openOr(ctx, r)
		}
	}
	return r, err
}

func (s *codecStore) FindRecent(ctx context.Context, q ledger.RecentQuery) ([]*ledger.Record, error) {
	recs, err := s.Store.FindRecent(ctx, q)
	if err != nil {
		return nil, err
	}
	for _, r := range recs {
		if err := s.open(ctx, r); err != nil {
			return nil, err
		}
	}
	return recs, nil
}

func (s *codecStore) List(ctx context.Context, f ledger.Filter) (ledger.Page, error) {
	p, err := s.Store.List(ctx, f)
	if err != nil {
		return p, err
	}
	for _, r := range p.Records {
		if err := s.open(ctx, r); err != nil {
			// Listing serves people and the model: they see that a
			// payload is there and sealed, not a failed page.
			s.openOr(ctx, r)
		}
	}
	return p, nil
}

// seal returns the stored form of plain; an empty payload stays empty (it
// means "keep the stored value" to Transition).
func (s *codecStore) seal(ctx context.Context, id ledger.ID, field string, plain json.RawMessage) (json.RawMessage, error) {
	if len(plain) == 0 || s.codec == nil {
		return plain, nil
	}
	sealed, err := s.codec.Encode(ctx, id, field, plain)
	if err != nil {
		return nil, fmt.Errorf("codec: encrypting the %s of %s key %s: %w", field, id.Tool, ledger.ShortHash(id.Key), err)
	}
	return marshalSealed(sealed)
}

// open replaces r's sealed payloads by their plain bytes.
func (s *codecStore) open(ctx context.Context, r *ledger.Record) error {
	args, err := s.openField(ctx, r.ID, FieldArguments, r.Arguments)
	if err != nil {
		return err
	}
	res, err := s.openField(ctx, r.ID, FieldResult, r.Result)
	if err != nil {
		return err
	}
	r.Arguments, r.Result = args, res
	return nil
}

// openOr opens what it can of r and puts Encrypted in place of the rest.
func (s *codecStore) openOr(ctx context.Context, r *ledger.Record) {
	if args, err := s.openField(ctx, r.ID, FieldArguments, r.Arguments); err == nil {
		r.Arguments = args
	} else {
		r.Arguments = encryptedJSON
	}
	if res, err := s.openField(ctx, r.ID, FieldResult, r.Result); err == nil {
		r.Result = res
	} else {
		r.Result = encryptedJSON
	}
}

func (s *codecStore) openField(ctx context.Context, id ledger.ID, field string, stored json.RawMessage) (json.RawMessage, error) {
	sealed, ok, err := SealedOf(stored)
	if !ok {
		return stored, nil
	}
	if err != nil {
		return nil, fmt.Errorf("codec: the %s of %s key %s: %w", field, id.Tool, ledger.ShortHash(id.Key), err)
	}
	if s.codec == nil {
		return nil, fmt.Errorf("codec: cannot read the %s of %s key %s: encrypted with key id %s, and no ledger key is configured; give the key file that holds that key: %w",
			field, id.Tool, ledger.ShortHash(id.Key), sealed.KeyID, ErrNoKey)
	}
	plain, err := s.codec.Decode(ctx, id, field, sealed)
	if errors.Is(err, ErrNoKey) && !errors.Is(err, ErrKeyMismatch) {
		held := ""
		if kr, ok := s.codec.(KeyRing); ok {
			held = " (it holds " + strings.Join(kr.KeyIDs(), ", ") + ")"
		}
		return nil, fmt.Errorf("codec: cannot read the %s of %s key %s: encrypted with key id %s, which the ledger key file does not hold%s; pass the key file that holds key %s: %w",
			field, id.Tool, ledger.ShortHash(id.Key), sealed.KeyID, held, sealed.KeyID, ErrKeyMismatch)
	}
	if err != nil {
		return nil, fmt.Errorf("codec: cannot read the %s of %s key %s: %w", field, id.Tool, ledger.ShortHash(id.Key), err)
	}
	return plain, nil
}

// Package aesgcm is a codec.Codec that encrypts stored arguments and
// results with AES-256-GCM under keys the operator supplies, so neither a
// copy of the SQLite file nor a read of the PostgreSQL rows shows them:
//
//	keys, err := aesgcm.LoadKeyFile("/etc/mcpledger/ledger.keys")
//	st = codec.Wrap(st, keys)
//
// A Keyring seals with its first key and opens with any of its keys, found
// by the key id every sealed payload carries, so keys rotate without a
// flag day: put a new key first, keep the old ones below it, run
// codec.Rekey (agentctl ledger rekey), then drop the old ones.
//
// Each payload gets a fresh random 96-bit nonce; the additional data binds
// it to its record (tenant, tool, key) and field, so a sealed result moved
// to another record or field does not open.
package aesgcm

import (
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
)

// Alg is the scheme name in sealed payloads.
const Alg = "A256GCM"

// KeySize is the size of a key in bytes.
const KeySize = 32

// ErrWrongKey: a payload names a key id the keyring holds, yet does not
// open with it: the payload was damaged or altered, or it belongs to
// another record.
var ErrWrongKey = errors.New("aesgcm: the payload does not open with its key")

var _ codec.Codec = (*Keyring)(nil)

// Keyring holds the keys. It is safe for concurrent use and never changes
// after New.
type Keyring struct {
	keys []key // keys[0] seals
}

type key struct {
	id   string
	aead cipher.AEAD
}

// New returns a Keyring: keys[0] seals new payloads, every key opens. Each
// key is KeySize random bytes.
func New(keys ...[]byte) (*Keyring, error) {
	if len(keys) == 0 {
		return nil, errors.New("aesgcm: no key given; make one with: head -c 32 /dev/urandom | base64")
	}
	k := &Keyring{}
	seen := map[string]bool{}
	for i, raw := range keys {
		if len(raw) != KeySize {
			return nil, fmt.Errorf("aesgcm: key %d is %d bytes; AES-256 needs %d random bytes (head -c 32 /dev/urandom | base64)", i+1, len(raw), KeySize)
		}
		id := KeyID(raw)
		if seen[id] {
			return nil, fmt.Errorf("aesgcm: key %d (id %s) is given twice; keep one copy", i+1, id)
		}
		seen[id] = true
		block, err := aes.NewCipher(raw)
		if err != nil {
			return nil, fmt.Errorf("aesgcm: key %d: %w", i+1, err)
		}
		aead, err := cipher.NewGCM(block)
		if err != nil {
			return nil, fmt.Errorf("aesgcm: key %d: %w", i+1, err)
		}
		k.keys = append(k.keys, key{id: id, aead: aead})
	}
	return k, nil
}

// KeyID is the id of a key as sealed payloads name it: the first 8 bytes
// of a SHA-256 of the key, in hex. It names the key without revealing it,
// and a different key can never pass for it.
func KeyID(raw []byte) string {
	h := sha256.New()
	h.Write([]byte("mcpledger aesgcm key id\x00"))
	h.Write(raw)
	return hex.EncodeToString(h.Sum(nil)[:8])
}

// CurrentKeyID is the id of the key that seals new payloads.
func (k *Keyring) CurrentKeyID() string { return k.keys[0].id }

// KeyIDs are the ids of all keys, the sealing one first.
func (k *Keyring) KeyIDs() []string {
	ids := make([]string, len(k.keys))
	for i, key := range k.keys {
		ids[i] = key.id
	}
	return ids
}

// Encode implements codec.Codec.
func (k *Keyring) Encode(_ context.Context, id ledger.ID, field string, plain []byte) (codec.Sealed, error) {
	cur := k.keys[0]
	nonce := make([]byte, cur.aead.NonceSize(), cur.aead.NonceSize()+len(plain)+cur.aead.Overhead())
	if _, err := rand.Read(nonce); err != nil {
		return codec.Sealed{}, fmt.Errorf("aesgcm: no random nonce: %w", err)
	}
	data := cur.aead.Seal(nonce, nonce, plain, additionalData(id, field))
	return codec.Sealed{Alg: Alg, KeyID: cur.id, Data: data}, nil
}

// Decode implements codec.Codec.
func (k *Keyring) Decode(_ context.Context, id ledger.ID, field string, s codec.Sealed) ([]byte, error) {
	if s.Alg != Alg {
		return nil, fmt.Errorf("aesgcm: the payload is sealed with %q, not %s; open this ledger with the codec that wrote it", s.Alg, Alg)
	}
	for _, key := range k.keys {
		if key.id != s.KeyID {
			continue
		}
		n := key.aead.NonceSize()
		if len(s.Data) < n+key.aead.Overhead() {
			return nil, fmt.Errorf("%w: it is %d bytes, shorter than a nonce and a tag", ErrWrongKey, len(s.Data))
		}
		plain, err := key.aead.Open(nil, s.Data[:n], s.Data[n:], additionalData(id, field))
		if err != nil {
			return nil, fmt.Errorf("%w (key id %s): it was altered, damaged or moved from another record; restore it from a backup", ErrWrongKey, s.KeyID)
		}
		return plain, nil
	}
	return nil, fmt.Errorf("key id %s is not in the keyring (it holds %v); add the key file line of the key that wrote it: %w", s.KeyID, k.KeyIDs(), codec.ErrNoKey)
}

// additionalData binds a sealed payload to its record and field.
func additionalData(id ledger.ID, field string) []byte {
	b := make([]byte, 0, 32+len(field)+len(id.Tenant)+len(id.Tool)+len(id.Key))
	b = append(b, "mcpledger/aesgcm/v1\x00"...)
	for _, s := range []string{field, id.Tenant, id.Tool, id.Key} {
		b = append(b, s...)
		b = append(b, 0)
	}
	return b
}

// Package aesgcm forwards to ledger/codec/aesgcm, where the AES-256-GCM
// payload codec now lives.
//
// Deprecated: import github.com/mcpledger/mcpledger/ledger/codec/aesgcm
// instead; this package is removed in the next release.
package aesgcm

import "github.com/mcpledger/mcpledger/ledger/codec/aesgcm"

// Alg is the scheme name in sealed payloads.
//
// Deprecated: use [aesgcm.Alg] of ledger/codec/aesgcm.
const Alg = aesgcm.Alg

// KeySize is the size of a key in bytes.
//
// Deprecated: use [aesgcm.KeySize] of ledger/codec/aesgcm.
const KeySize = aesgcm.KeySize

// ErrWrongKey: a payload names a key id the keyring holds, yet does not
// open with it.
//
// Deprecated: use [aesgcm.ErrWrongKey] of ledger/codec/aesgcm.
var ErrWrongKey = aesgcm.ErrWrongKey

// Keyring seals with its first key and opens with any of its keys.
//
// Deprecated: use [aesgcm.Keyring] of ledger/codec/aesgcm.
type Keyring = aesgcm.Keyring

var (
	// New returns a Keyring of keys, the first current.
	//
	// Deprecated: use [aesgcm.New] of ledger/codec/aesgcm.
	New = aesgcm.New
	// KeyID is the id of a raw key.
	//
	// Deprecated: use [aesgcm.KeyID] of ledger/codec/aesgcm.
	KeyID = aesgcm.KeyID
	// ParseKeyFile reads a Keyring from a key file's contents.
	//
	// Deprecated: use [aesgcm.ParseKeyFile] of ledger/codec/aesgcm.
	ParseKeyFile = aesgcm.ParseKeyFile
	// LoadKeyFile reads a Keyring from the key file at path.
	//
	// Deprecated: use [aesgcm.LoadKeyFile] of ledger/codec/aesgcm.
	LoadKeyFile = aesgcm.LoadKeyFile
)

package ledger

import "context"

// The optional parts of a Store that a payload codec (package codec)
// needs: they are the Store's contract, so an implementation imports
// ledger only.

// SealedProbe is the optional part of a Store that finds whether it holds
// sealed payloads (ledger/sqlite and ledger/postgres implement it; reach it
// under wrappers with Unwrap).
type SealedProbe interface {
	// SealedKeyID returns the key id that one sealed payload among the
	// store's newest SealedProbeWindow records names, of any tenant, or ""
	// when they hold none. A process with a key seals every record it
	// writes, so the newest records tell, at a cost that does not grow
	// with the ledger.
	SealedKeyID(ctx context.Context) (string, error)
}

// SealedProbeWindow is how many of the newest records a SealedProbe looks
// at.
const SealedProbeWindow = 1000

// SealedPrefix starts every stored sealed payload (json.Marshal writes the
// envelope's fields in order): a store's SealedProbe looks for it.
const SealedPrefix = `{"mcpledger/encrypted":`

// Unwrap returns the Store under every wrapper of st: codec.Wrap's, and any
// other with an Unwrap() Store method. It returns st itself when st wraps
// nothing.
func Unwrap(st Store) Store {
	for {
		u, ok := st.(interface{ Unwrap() Store })
		if !ok {
			return st
		}
		st = u.Unwrap()
	}
}

// PayloadRewriter is the optional part of a Store that rewrites stored
// payloads in place, across tenants: key rotation (codec.Rekey) needs it, and
// nothing else may change a record's arguments. ledger/sqlite and
// ledger/postgres implement it; reach it under codec.Wrap with Unwrap.
type PayloadRewriter interface {
	// RewritePayloads calls fn with the stored arguments and result of
	// every record, as stored. When fn reports changed, the record's
	// payloads become the returned ones, unless another writer changed
	// them meanwhile (that record is left as the other writer made it).
	// An error from fn stops the walk and is returned. It reports how
	// many records it rewrote.
	RewritePayloads(ctx context.Context, fn RewriteFunc) (int, error)
}

// RewriteFunc maps one record's stored payloads to new ones.
type RewriteFunc func(id ID, args, result []byte) (newArgs, newResult []byte, changed bool, err error)

// Package args reads a tool call's JSON arguments the one way every layer
// of mcpledger reads them: [Decode] parses them for a handler, [CheckNames]
// refuses a member name given twice or a lone surrogate escape, and
// [Fingerprint] hashes their RFC 8785 canonical form ([Canonical]), less
// the fields in [DefaultExcluded] that carry no business meaning.
//
// Two spellings of the same value (other key order, whitespace, number or
// string spelling) have one fingerprint; what Decode accepts Fingerprint
// accepts too. Every refusal wraps [ErrInvalid], which every door answers as
// JSON-RPC -32602 (invalid params); a repeated name is also a
// [*DuplicateNameError].
//
// The package depends on no other package of mcpledger; the ledger stores
// the fingerprint in each record (ledger.ClaimRequest's Fingerprint).
package args

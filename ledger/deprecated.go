package ledger

import (
	"github.com/mcpledger/mcpledger/ledger/args"
	"github.com/mcpledger/mcpledger/ledger/compact"
	"github.com/mcpledger/mcpledger/ledger/process"
	"github.com/mcpledger/mcpledger/ledger/redact"
)

// The names below moved out of the root package; they forward to their new
// home for one release and are then removed.

// Owner names the process that holds a lease.
//
// Deprecated: use [process.Owner].
type Owner = process.Owner

var (
	// ParseOwner reads an Owner from its String form.
	//
	// Deprecated: use [process.Parse].
	ParseOwner = process.Parse
	// Self is the Owner of this process with the given label.
	//
	// Deprecated: use [process.Self].
	Self = process.Self
	// OwnerOf is the Owner of process pid of this host.
	//
	// Deprecated: use [process.Of].
	OwnerOf = process.Of
	// NewOwner is the owner string for leases this process takes.
	//
	// Deprecated: use [process.NewOwner].
	NewOwner = process.NewOwner
	// OwnerGone reports whether owner is a process of this host that no
	// longer runs.
	//
	// Deprecated: use [process.Gone].
	OwnerGone = process.Gone
)

// Compactor shrinks a result past the size limit.
//
// Deprecated: use [compact.Func].
type Compactor = compact.Func

// MetaCompacted is the _meta key of a compacted result.
//
// Deprecated: use [compact.MetaKey].
const MetaCompacted = compact.MetaKey

var (
	// Compact is the default Compactor.
	//
	// Deprecated: use [compact.Result].
	Compact = compact.Result
	// Stored is a result as the ledger keeps it.
	//
	// Deprecated: use [compact.Stored].
	Stored = compact.Stored
)

// Redactor adds a tool's own secret names and patterns to the built-in
// rules.
//
// Deprecated: use [redact.Redactor].
type Redactor = redact.Redactor

// Redacted replaces the value of a secret-looking field.
//
// Deprecated: use [redact.Placeholder].
const Redacted = redact.Placeholder

var (
	// Redact returns args with secrets replaced by Redacted.
	//
	// Deprecated: use [redact.JSON].
	Redact = redact.JSON
	// RedactText returns s with the secrets in it replaced.
	//
	// Deprecated: use [redact.Text].
	RedactText = redact.Text
	// RedactMap returns a redacted copy of a decoded argument map.
	//
	// Deprecated: use [redact.Map].
	RedactMap = redact.Map
	// IsSecretName reports whether a field name looks like it holds a
	// secret.
	//
	// Deprecated: use [redact.IsSecretName].
	IsSecretName = redact.IsSecretName
)

// ErrInvalidArguments: a call's arguments are not a JSON object the ledger
// can fingerprint. It is the same value as args.ErrInvalid, so errors.Is
// matches either.
//
// Deprecated: use [args.ErrInvalid].
var ErrInvalidArguments = args.ErrInvalid

// DuplicateNameError: an object in the arguments gives one member name
// twice.
//
// Deprecated: use [args.DuplicateNameError].
type DuplicateNameError = args.DuplicateNameError

var (
	// DefaultExcluded are the top-level argument fields that never change a
	// fingerprint.
	//
	// Deprecated: use [args.DefaultExcluded].
	DefaultExcluded = args.DefaultExcluded
	// Fingerprint is the hex SHA-256 of the canonical JSON of arguments.
	//
	// Deprecated: use [args.Fingerprint].
	Fingerprint = args.Fingerprint
	// Canonical returns the RFC 8785 canonical form of arguments.
	//
	// Deprecated: use [args.Canonical].
	Canonical = args.Canonical
	// DecodeArguments parses a tool call's arguments.
	//
	// Deprecated: use [args.Decode].
	DecodeArguments = args.Decode
	// CheckNames refuses a member name given twice or a lone surrogate.
	//
	// Deprecated: use [args.CheckNames].
	CheckNames = args.CheckNames
)

// Package audit writes the ledger's records as a tamper-evident export and
// checks one: JSON Lines, one record a line, each line carrying the SHA-256
// of the line before it, so changing, removing or reordering any line
// breaks the chain at that point.
//
//	n, err := audit.Export(ctx, store, os.Stdout, audit.Options{Tenant: "acme"})
//	...
//	rep, err := audit.Verify(file) // errors.As(err, new(*audit.Broken)) names the line
//
// The first line is a header (format, tenant, period, time of export), the
// last an end line with the number of records, so a file cut short is told
// from an intact one. Arguments and results are redacted (redact.JSON)
// whatever the store kept.
package audit

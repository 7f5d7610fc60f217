// Package redact finds secrets in a call's arguments, results and messages
// and replaces them before anything is stored in clear, shown or logged:
//
//	safe, err := redact.JSON(args)      // {"api_key":"[REDACTED]","amount":5}
//	line := redact.Text(err.Error())    // "... Bearer [REDACTED] ..."
//
// Secrets are found by the name of the field that holds them
// (IsSecretName) and by the shape of the value itself, wherever it sits:
// PEM private keys, Bearer and Basic credentials, JWTs, a URL's password,
// name=value pairs, and gitleaks' rules. A Redactor adds a tool's own names
// and patterns to the built-in rules. The package knows nothing of the
// ledger; ledger.RedactRecord applies it to a record.
package redact

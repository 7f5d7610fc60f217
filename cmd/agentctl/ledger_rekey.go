package main

import (
	"context"
	"errors"
	"os"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/codec"
	"github.com/mcpledger/mcpledger/ledger/codec/aesgcm"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerRekeyCmd) }

// keep makes st the run's ledger, sealed with the keys of
// --ledger-key-file when one is given. Without one nothing new is
// encrypted, and records encrypted earlier show as [encrypted] in listings
// and fail a read that needs them with a message asking for the key file.
// Commands that only show records (readOnly) see them redacted.
func (a *app) keep(st ledger.Store, mode access) (ledger.Store, error) {
	var keyring codec.Codec
	if a.ledgerKeyFile != "" {
		keys, err := aesgcm.LoadKeyFile(a.ledgerKeyFile)
		if err != nil {
			return nil, errors.Join(exitf(exitUsage, "--ledger-key-file: %v", err), st.Close())
		}
		if info, err := os.Stat(a.ledgerKeyFile); err == nil && info.Mode().Perm()&0o077 != 0 {
			a.eprintf("agentctl: warning: the key file %s may be read by other users (mode %04o); chmod 600 it\n", a.ledgerKeyFile, info.Mode().Perm())
		}
		keyring = keys
	}
	if mode == readWrite {
		// A ledger that holds encrypted records takes no call written in
		// clear beside them, nor one sealed with a key that does not
		// match: say so before anything is sent.
		if err := codec.CheckKeys(context.Background(), st, keyring); err != nil {
			return nil, errors.Join(exitf(exitUsage, "%v", err), st.Close())
		}
	}
	sealed := codec.Wrap(st, keyring)
	if mode == readOnly {
		sealed = inspect(sealed)
	}
	a.store, a.closeStore = sealed, st.Close
	return sealed, nil
}

// Unwrap reaches the store the CLI's wrapper wraps (codec.Rekey looks
// through wrappers for the store that rewrites payloads).
func (s *cliStore) Unwrap() ledger.Store { return s.Store }

func newLedgerRekeyCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "rekey",
		Short: "Encrypt every record's arguments and result with the key file's first key",
		Long: `rekey seals the stored arguments and result of every record, of every
tenant, with the first key of --ledger-key-file (MCPLEDGER_LEDGER_KEY_FILE):
records sealed with an older key of the file are opened and sealed again,
records stored in clear are sealed for the first time.

It first opens every sealed record; if one needs a key the file does not hold,
it stops with that record's key id and changes nothing. A record a running
process writes meanwhile is left as that process wrote it.

The key file holds one key per line, each the base64 of 32 random bytes
(head -c 32 /dev/urandom | base64); '#' starts a comment line, and text after
a key on its line is a note. The first key seals, every key opens. To rotate:
put a new key on the first line and keep the old ones below it, give every
process the new file, run rekey, then remove the old lines.

On PostgreSQL the replaced row versions stay in the table's files until
VACUUM; run VACUUM on the records table after encrypting records that were
stored in clear.`,
		Example: `  agentctl ledger rekey --ledger-key-file ledger.keys`,
		Args:    usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			if a.ledgerKeyFile == "" {
				return exitf(exitUsage, "rekey needs the keys: pass --ledger-key-file FILE or set MCPLEDGER_LEDGER_KEY_FILE")
			}
			keys, err := aesgcm.LoadKeyFile(a.ledgerKeyFile)
			if err != nil {
				return exitf(exitUsage, "--ledger-key-file: %v", err)
			}
			st, err := a.ledger(c.Context(), existing)
			if err != nil {
				return err
			}
			rw, ok := ledger.Unwrap(st).(ledger.PayloadRewriter)
			if !ok {
				return exitf(exitUsage, "this ledger backend cannot rewrite records; rekey works on SQLite and PostgreSQL ledgers")
			}
			rep, err := codec.Rekey(c.Context(), rw, keys)
			if errors.Is(err, codec.ErrNoKey) || errors.Is(err, aesgcm.ErrWrongKey) {
				return exitf(exitUsage, "%v", err)
			}
			if err != nil {
				return exitf(exitUnreachable, "rekey stopped after %d records: %v; run it again once the ledger is reachable", rep.Rewritten, err)
			}
			if a.json {
				if err := a.printJSON(map[string]any{
					"keyId": keys.CurrentKeyID(), "records": rep.Records, "rewritten": rep.Rewritten,
					"plain": rep.Plain, "current": rep.Current, "skipped": rep.Skipped,
				}); err != nil {
					return err
				}
			} else {
				a.printf("sealed %d of %d records with key %s (%d payloads were in clear; %d already had the key)\n",
					rep.Rewritten, rep.Records, keys.CurrentKeyID(), rep.Plain, rep.Current)
			}
			if rep.Skipped > 0 {
				return exitf(exitFailed, "%d records kept changing while rekey ran and are not sealed with key %s yet; run agentctl ledger rekey again", rep.Skipped, keys.CurrentKeyID())
			}
			if !a.json && len(keys.KeyIDs()) > 1 && rep.Records > 0 {
				a.printf("older keys in %s may go once every process reading this ledger has the new first key\n", a.ledgerKeyFile)
			}
			return nil
		}),
	}
}

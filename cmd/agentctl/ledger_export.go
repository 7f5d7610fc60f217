package main

import (
	"crypto/ed25519"
	"errors"
	"fmt"
	"os"
	"runtime/debug"
	"time"

	"github.com/spf13/cobra"

	"github.com/mcpledger/mcpledger/internal/audit"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

func init() { ledgerCommands = append(ledgerCommands, newLedgerExportCmd, newLedgerKeygenCmd) }

// exportVerified is the --json shape of export --verify. Intact is true
// only for a signature checked with --pub; Chain says whether the hash
// chain is consistent, which an editor who re-chained the lines keeps.
type exportVerified struct {
	File    string `json:"file"`
	Intact  bool   `json:"intact"`
	Chain   bool   `json:"chainConsistent"`
	Signed  bool   `json:"signed"`
	KeyID   string `json:"keyId,omitempty"`
	Tenant  string `json:"tenant,omitempty"`
	Records int64  `json:"records"`
	Lines   int64  `json:"lines"`
	Head    string `json:"head,omitempty"`
	Line    int64  `json:"line,omitempty"` // the first line that does not hold
	Problem string `json:"problem,omitempty"`
}

// exportGCPercent is the GOGC of an export; see RunE.
const exportGCPercent = 400

func newLedgerExportCmd(a *app) *cobra.Command {
	var since, format, verify, sign, pub string
	c := &cobra.Command{
		Use:   "export [--since DURATION] [--format jsonl] [--sign KEYFILE] | export --verify FILE [--pub PUBFILE]",
		Short: "Write the tenant's records as a hash-chained, signed audit file, or check one",
		Long: `export writes the tenant's records to stdout as JSON Lines, newest first: a
header line, one line per record (with its timeline) and an end line. Every
line carries the SHA-256 of the line before it, so a changed, removed, added
or reordered line breaks the chain where it happened. Arguments and results
are redacted.

A chain alone proves nothing against someone who edits a line and computes
the chain again. --sign KEYFILE (an ed25519 private key, made with agentctl
ledger keygen) adds a last line that signs the chain's end; keep the key
away from the exports and hand the .pub file to whoever checks them.

export --verify FILE --pub PUBFILE checks such a file: it says it is intact
(exit 0) only when the chain holds and the signature holds for that key, and
otherwise names the first line that does not hold (exit 1). Without --pub
it checks the chain and says "chain consistent", signed or unsigned, never
intact.`,
		Example: `  agentctl ledger keygen audit.key          # audit.key (0600) and audit.key.pub
  agentctl ledger export --since 7d --sign audit.key > audit.jsonl
  agentctl ledger export --verify audit.jsonl --pub audit.key.pub`,
		Args: usageArgs(0, 0),
		RunE: runE(func(c *cobra.Command, _ []string) error {
			if verify != "" {
				if c.Flags().Changed("since") || c.Flags().Changed("format") || sign != "" {
					return exitf(exitUsage, "--verify checks a file and takes no --since, --format or --sign; run them apart")
				}
				return a.verifyExport(verify, pub)
			}
			if pub != "" {
				return exitf(exitUsage, "--pub names the public key that --verify FILE checks a signature with; add --verify FILE, or sign an export with --sign KEYFILE")
			}
			var key ed25519.PrivateKey
			if sign != "" {
				k, err := audit.LoadSigningKey(sign)
				if err != nil {
					return exitf(exitUsage, "--sign: %v", err)
				}
				key = k
			}
			if format != "jsonl" {
				return exitf(exitUsage, "--format %q: the only format is jsonl", format)
			}
			var from time.Time
			if since != "" {
				period, err := parsePeriod(since)
				if err != nil {
					return err
				}
				from = time.Now().Add(-period).UTC()
			}
			st, err := a.ledger(c.Context(), readOnly)
			if err != nil {
				return err
			}
			// An export holds one page of records, a few MB, and allocates
			// as it goes: at the default GOGC the collector runs every few
			// MB and takes a fifth of the CPU. Four times the live heap
			// between collections keeps the process well under 100 MB.
			defer debug.SetGCPercent(debug.SetGCPercent(exportGCPercent))
			n, err := audit.Export(c.Context(), st, a.io.Out, audit.Options{Tenant: a.tenant, Layer: a.layer, Since: from, Sign: key})
			if errors.Is(err, sqlite.ErrDamaged) {
				// Running it again would meet the same damage.
				return storeFault(err)
			}
			if err != nil {
				return withCode(exitUnreachable, fmt.Errorf("%w; the output is incomplete (no end line): run the export again", err))
			}
			if key != nil {
				a.eprintf("exported %d record(s) of tenant %s, signed by key %s; check the file with agentctl ledger export --verify FILE --pub %s.pub\n",
					n, a.tenant, audit.KeyID(key.Public().(ed25519.PublicKey)), sign)
			} else {
				a.eprintf("exported %d record(s) of tenant %s, unsigned (--sign KEYFILE signs it); check the file with agentctl ledger export --verify FILE\n", n, a.tenant)
			}
			return nil
		}),
	}
	fl := c.Flags()
	fl.StringVar(&since, "since", "", "only records created in this period back from now: a Go `DURATION` (90m, 24h) or days (7d); default all")
	fl.StringVar(&format, "format", "jsonl", "the output `FORMAT`: jsonl")
	completeWords(c, "format", "jsonl")
	fl.StringVar(&verify, "verify", "", "check the export `FILE` instead of writing one")
	fl.StringVar(&sign, "sign", "", "sign the export with this ed25519 private `KEYFILE` (agentctl ledger keygen makes one)")
	fl.StringVar(&pub, "pub", "", "with --verify: the public `PUBFILE` the signature must hold for")
	return c
}

func (a *app) verifyExport(path, pubPath string) error {
	var pub ed25519.PublicKey
	if pubPath != "" {
		k, err := audit.LoadPublicKey(pubPath)
		if err != nil {
			return exitf(exitUsage, "--pub: %v", err)
		}
		pub = k
	}
	f, err := os.Open(path)
	if err != nil {
		return exitf(exitUsage, "cannot read %s: %v; pass the file agentctl ledger export wrote", path, err)
	}
	defer func() { _ = f.Close() }() // read only
	var rep audit.Report
	if pub != nil {
		rep, err = audit.VerifySigned(f, pub)
	} else {
		rep, err = audit.Verify(f)
	}
	out := exportVerified{File: path, Intact: err == nil && rep.Verified, Chain: err == nil, Signed: rep.Signature != nil,
		Tenant: rep.Header.Tenant, Records: rep.Records, Lines: rep.Lines, Head: rep.Head}
	if rep.Signature != nil {
		out.KeyID = rep.Signature.KeyID
	}
	var broken *audit.Broken
	switch {
	case errors.As(err, &broken):
		out.Chain = broken.Signature // the chain held; its signature did not
		out.Line, out.Problem, out.Head = broken.Line, broken.Why, ""
	case errors.Is(err, audit.ErrUnsigned):
		out.Chain, out.Problem = true, err.Error()
	case err != nil:
		return exitf(exitUsage, "cannot read %s: %v; pass the file agentctl ledger export wrote", path, err)
	}
	if a.json {
		if err := a.printJSON(out); err != nil {
			return err
		}
	}
	switch {
	case broken != nil:
		return exitf(exitFailed, "%s is not intact: line %d: %s; compare it with the ledger (agentctl ledger show KEY) or a copy kept elsewhere", path, broken.Line, broken.Why)
	case errors.Is(err, audit.ErrUnsigned):
		return exitf(exitFailed, "%s is not intact: %v; only a signed export can be checked against --pub", path, err)
	case a.json:
	case out.Intact:
		a.printf("%s: intact: signed by key %s, the signature holds; %d record(s) of tenant %s in %d lines; end line's hash %s\n",
			path, rep.Signature.KeyID, rep.Records, rep.Header.Tenant, rep.Lines, rep.Head)
	case rep.Signature != nil:
		a.printf("%s: chain consistent, signed by key %s (signature not checked: pass --pub PUBFILE); %d record(s) of tenant %s in %d lines; end line's hash %s\n",
			path, rep.Signature.KeyID, rep.Records, rep.Header.Tenant, rep.Lines, rep.Head)
	default:
		a.printf("%s: chain consistent, unsigned: %d record(s) of tenant %s in %d lines; end line's hash %s; anyone can edit and re-chain an unsigned export: sign exports with --sign KEYFILE, or keep this hash elsewhere\n",
			path, rep.Records, rep.Header.Tenant, rep.Lines, rep.Head)
	}
	return nil
}

func newLedgerKeygenCmd(a *app) *cobra.Command {
	return &cobra.Command{
		Use:   "keygen FILE",
		Short: "Make an ed25519 key pair for signing exports: FILE (private, 0600) and FILE.pub",
		Long: `keygen writes a new ed25519 key pair for signed exports: the private key to
FILE (PEM PKCS #8, mode 0600) and the public key to FILE.pub (PEM). Sign with
agentctl ledger export --sign FILE; check with agentctl ledger export
--verify EXPORT --pub FILE.pub. Keep FILE where the exports are not: whoever
holds it can sign a forged export. The files are the ones openssl genpkey
-algorithm ed25519 and openssl pkey -pubout make, and either may be used.`,
		Example: `  agentctl ledger keygen audit.key`,
		Args:    usageArgs(1, 1),
		RunE: runE(func(c *cobra.Command, args []string) error {
			pub, err := audit.NewKeyPair(args[0])
			if err != nil {
				return exitf(exitUsage, "%v; pick a FILE that does not exist yet", err)
			}
			if a.json {
				return a.printJSON(map[string]string{"private": args[0], "public": args[0] + ".pub", "keyId": audit.KeyID(pub)})
			}
			a.printf("key %s: private key %s (keep it away from the exports), public key %s.pub\n", audit.KeyID(pub), args[0], args[0])
			return nil
		}),
	}
}

// Package sqlite is the default ledger.Store: one embedded SQLite file,
// durable before a side effect runs, safe for many goroutines and for
// several processes sharing the file.
//
//	st, err := sqlite.Open(ctx, "ledger.db", nil) // durable defaults
//	if err != nil {
//		return err
//	}
//	defer st.Close()
//	c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: fp, Owner: "worker-1"})
//
// The file runs in WAL mode with synchronous=FULL unless Options say
// otherwise, so a won claim is on disk when Claim returns. A write that
// finds no other in flight runs at once on its caller's goroutine, a new
// claim or a completion as one autocommitted statement; writes that arrive
// meanwhile are gathered by a writer goroutine into shared transactions
// (group commit), so concurrent callers share fsyncs while each gets its
// own result. Writes wait up to the busy timeout for another process's
// lock, then fail with ErrBusy.
//
// The schema is versioned and migrated from embedded SQL files, each in its
// own transaction. A file that is not an mcpledger database, or one with a
// newer schema, is refused with ErrNotDatabase or ErrSchemaTooNew and left
// untouched; a ledger whose pages SQLite cannot read (cut short,
// overwritten) fails with ErrDamaged, at Open or at the read that meets the
// damage. New files are created with mode 0600 in a 0700 folder.
//
// Every write by a lease holder (Transition from PROCESSING or
// PENDING_APPROVAL, Renew) is one UPDATE conditional on the state, the
// owner and the fence, so a stale owner's write matches no row and changes
// nothing; each claim that wins raises the key's fence in the same
// statement that claims it.
//
// Wait wakes immediately on changes made through the same Store and polls
// with a bounded backoff for changes made by other processes.
//
// The driver is github.com/mattn/go-sqlite3 in a build with cgo, and the
// pure-Go github.com/ncruces/go-sqlite3 in one without (CGO_ENABLED=0,
// Windows and cross builds without a C compiler), which a program brings in
// by importing github.com/mcpledger/mcpledger/ledger/sqlite/purego (a
// module of its own, so that cgo builds do not carry it): the same SQLite
// and the same file, so a ledger moves between the two. Driver names the
// one this build uses. A build without cgo that imported no driver gets an
// error from Open that says so.
package sqlite

package sqlite_test

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// Tests in this file run real child processes: the test binary re-executed
// with childRole set, which TestMain hands to runChild.
const (
	childRole  = "MCPLEDGER_SQLITE_CHILD"
	childPath  = "MCPLEDGER_SQLITE_CHILD_PATH"
	childOwner = "MCPLEDGER_SQLITE_CHILD_OWNER"
)

func TestMain(m *testing.M) {
	if role := os.Getenv(childRole); role != "" {
		if err := runChild(role, os.Getenv(childPath), os.Getenv(childOwner)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

// child is a running child process with line-oriented pipes.
type child struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	lines *bufio.Scanner
}

func startChild(t *testing.T, ctx context.Context, role, path, owner string) *child {
	t.Helper()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childRole+"="+role, childPath+"="+path, childOwner+"="+owner)
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatalf("start child %s: %v", role, err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill() //nolint:errcheck // it may have exited already
			cmd.Wait()         //nolint:errcheck // only reaping
		}
	})
	return &child{cmd: cmd, stdin: stdin, lines: bufio.NewScanner(stdout)}
}

// expect reads lines until one starts with prefix and returns the rest.
func (c *child) expect(t *testing.T, prefix string) string {
	t.Helper()
	for c.lines.Scan() {
		if rest, ok := strings.CutPrefix(c.lines.Text(), prefix); ok {
			return rest
		}
	}
	t.Fatalf("child ended without printing %q (%v)", prefix, c.lines.Err())
	return ""
}

// raceReport is what a racing child prints.
type raceReport struct {
	Won        bool   `json:"won"`
	ClaimOwner string `json:"claimOwner"`
	FinalState string `json:"finalState"`
	FinalOwner string `json:"finalOwner"`
	Result     string `json:"result"`
}

func runChild(role, path, owner string) error {
	ctx := context.Background()
	in := bufio.NewScanner(os.Stdin)
	switch role {
	case "get":
		// Reads the record keyed owner once and prints its state.
		st, err := sqlite.Open(ctx, path, &sqlite.Options{ReadOnly: true})
		if err != nil {
			return err
		}
		defer st.Close()
		r, err := st.Get(ctx, claimReq(owner, "").ID)
		if err != nil {
			return err
		}
		fmt.Printf("state %s %s\n", r.State, r.Result)
		return nil

	case "race":
		st, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			return err
		}
		defer st.Close()
		fmt.Println("ready")
		in.Scan() // "go"
		req := claimReq("race", owner)
		c, err := st.Claim(ctx, req)
		if err != nil {
			return err
		}
		if c.Won {
			result := json.RawMessage(fmt.Sprintf(`{"by":%q}`, owner))
			if _, err := st.Transition(ctx, ledger.Transition{ID: req.ID, From: ledger.StateProcessing, To: ledger.StateSucceeded,
				Owner: owner, Fence: c.Record.Fence, Result: result, AddAttempts: 1}); err != nil {
				return err
			}
		}
		final, err := st.Wait(ctx, req.ID)
		if err != nil {
			return err
		}
		b, err := json.Marshal(raceReport{Won: c.Won, ClaimOwner: c.Record.Owner, FinalState: string(final.State),
			FinalOwner: final.Owner, Result: string(final.Result)})
		if err != nil {
			return err
		}
		fmt.Printf("report %s\n", b)
		return nil

	case "hold":
		st, err := sqlite.Open(ctx, path, nil)
		if err != nil {
			return err
		}
		complete := func(key string) error {
			c, err := st.Claim(ctx, claimReq(key, owner))
			if err != nil {
				return err
			}
			_, err = st.Transition(ctx, ledger.Transition{ID: c.Record.ID, From: ledger.StateProcessing,
				To: ledger.StateSucceeded, Owner: owner, Fence: c.Record.Fence, Result: json.RawMessage(fmt.Sprintf(`{"key":%q}`, key))})
			if err == nil {
				fmt.Printf("done %s\n", key) // printed only once committed
			}
			return err
		}
		for i := range 20 {
			if err := complete(fmt.Sprintf("before-%d", i)); err != nil {
				return err
			}
		}
		victim := claimReq("victim", owner)
		victim.Lease = time.Hour
		if _, err := st.Claim(ctx, victim); err != nil {
			return err
		}
		fmt.Println("holding")
		// Keep writing until killed, so the kill lands mid-transaction.
		for i := 0; ; i++ {
			if err := complete(fmt.Sprintf("during-%d", i)); err != nil {
				return err
			}
		}

	case "lock":
		db, err := sql.Open(sqlite.DriverName, "file:"+path+"?_txlock=immediate")
		if err != nil {
			return err
		}
		defer db.Close()
		tx, err := db.Begin()
		if err != nil {
			return err
		}
		fmt.Println("locked")
		io.Copy(io.Discard, os.Stdin) //nolint:errcheck // EOF is the signal to let go
		return tx.Rollback()
	}
	return fmt.Errorf("unknown role %q", role)
}

func TestEightProcessesRaceOneKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	const n = 8
	var children []*child
	for i := range n {
		c := startChild(t, ctx, "race", path, fmt.Sprintf("process-%d", i))
		c.expect(t, "ready")
		children = append(children, c)
	}
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	var reports []raceReport
	for i, c := range children {
		var r raceReport
		if err := json.Unmarshal([]byte(c.expect(t, "report ")), &r); err != nil {
			t.Fatalf("child %d report: %v", i, err)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
		reports = append(reports, r)
	}
	var winners []string
	for i, r := range reports {
		if r.Won {
			winners = append(winners, fmt.Sprintf("process-%d", i))
		}
	}
	if len(winners) != 1 {
		t.Fatalf("%d processes racing one key produced winners %v; want exactly one", n, winners)
	}
	wantResult := fmt.Sprintf(`{"by":%q}`, winners[0])
	for i, r := range reports {
		if r.ClaimOwner != winners[0] || r.FinalOwner != winners[0] || r.FinalState != "SUCCEEDED" || r.Result != wantResult {
			t.Errorf("process-%d saw claim owner %q, final %s by %q result %s; want the winner %s's record and result %s",
				i, r.ClaimOwner, r.FinalState, r.FinalOwner, r.Result, winners[0], wantResult)
		}
	}
}

func TestKilledOwnerBecomesUnknown(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	c := startChild(t, ctx, "hold", path, "doomed")
	var done []string
	for len(done) < 50 { // 20 before the victim, the rest during
		line := c.expect(t, "")
		if key, ok := strings.CutPrefix(line, "done "); ok {
			done = append(done, key)
		}
	}
	if err := c.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	for c.lines.Scan() { // lines printed before the kill were committed
		if key, ok := strings.CutPrefix(c.lines.Text(), "done "); ok {
			done = append(done, key)
		}
	}
	err := c.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.Sys().(syscall.WaitStatus).Signal() != syscall.SIGKILL {
		t.Fatalf("child ended with %v; want killed by SIGKILL", err)
	}

	// An hour and a bit later, the victim's lease has ended.
	later := time.Now().Add(time.Hour + time.Minute)
	st := openPath(t, path, &sqlite.Options{Now: func() time.Time { return later }})
	victim := claimReq("victim", "").ID
	if r, err := st.Get(ctx, victim); err != nil || r.State != ledger.StateProcessing || r.Owner != "doomed" {
		t.Fatalf("victim before expiry = %v, %v; want PROCESSING owned by the killed process", r, err)
	}
	n, err := st.ExpireLeases(ctx)
	// The kill may also have caught one "during" claim before its completion.
	if err != nil || n < 1 || n > 2 {
		t.Fatalf("ExpireLeases() = %d, %v; want the victim (and at most one in-flight claim)", n, err)
	}
	if r, err := st.Get(ctx, victim); err != nil || r.State != ledger.StateUnknown || r.ErrorKind != ledger.KindLeaseExpired {
		t.Errorf("victim after expiry = %v, %v; want UNKNOWN (lease_expired), never re-executed", r, err)
	}
	for _, key := range done {
		r, err := st.Get(ctx, claimReq(key, "").ID)
		if err != nil || r.State != ledger.StateSucceeded || string(r.Result) != fmt.Sprintf(`{"key":%q}`, key) {
			t.Errorf("committed record %q after the kill = %v, %v; want SUCCEEDED with its result", key, r, err)
		}
	}
	db, err := sql.Open(sqlite.DriverName, path)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var check string
	if err := db.QueryRow("PRAGMA integrity_check").Scan(&check); err != nil || check != "ok" {
		t.Errorf("PRAGMA integrity_check = %q, %v; want ok", check, err)
	}
	t.Logf("%d committed records survived the kill", len(done))
}

func TestLockedByAnotherProcess(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	path := filepath.Join(t.TempDir(), "ledger.db")
	const busy = 300 * time.Millisecond
	st := openPath(t, path, &sqlite.Options{BusyTimeout: busy})
	if _, err := st.Claim(ctx, claimReq("before", "owner-1")); err != nil {
		t.Fatal(err)
	}
	c := startChild(t, ctx, "lock", path, "")
	c.expect(t, "locked")

	start := time.Now()
	_, err := st.Claim(ctx, claimReq("k1", "owner-1"))
	waited := time.Since(start)
	if !errors.Is(err, sqlite.ErrBusy) {
		t.Fatalf("Claim on a locked database = %v; want ErrBusy", err)
	}
	if waited < busy*9/10 {
		t.Errorf("Claim gave up after %v; want it to wait the busy timeout %v", waited, busy)
	}
	if !strings.Contains(err.Error(), "locked") {
		t.Errorf("error %q does not say the database is locked", err)
	}
	// Readers are not blocked by a writer, duplicates are answered by a
	// read, and an up-to-date file opens.
	if _, err := st.Get(ctx, claimReq("before", "").ID); err != nil {
		t.Errorf("Get while another process writes = %v; want the record", err)
	}
	if cl, err := st.Claim(ctx, claimReq("before", "owner-2")); err != nil || cl.Won || cl.Record.Owner != "owner-1" {
		t.Errorf("duplicate Claim while another process writes = {Won: %v}, %v; want a follower of owner-1", cl.Won, err)
	}
	other := openPath(t, path, &sqlite.Options{BusyTimeout: busy})
	if _, err := other.Get(ctx, claimReq("before", "").ID); err != nil {
		t.Errorf("Open and Get while another process writes = %v", err)
	}

	c.stdin.Close()
	if err := c.cmd.Wait(); err != nil {
		t.Fatalf("lock holder: %v", err)
	}
	if cl, err := st.Claim(ctx, claimReq("k1", "owner-1")); err != nil || !cl.Won {
		t.Errorf("Claim after the lock is released = {Won: %v}, %v; want it won", cl.Won, err)
	}
}

func openPath(t *testing.T, path string, opts *sqlite.Options) *sqlite.Store {
	t.Helper()
	st, err := sqlite.Open(context.Background(), path, opts)
	if err != nil {
		t.Fatalf("Open(%q) = %v", path, err)
	}
	t.Cleanup(func() {
		if err := st.Close(); err != nil {
			t.Errorf("Close = %v", err)
		}
	})
	return st
}

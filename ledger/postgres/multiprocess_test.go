package postgres_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
)

// Child processes are this test binary re-executed with these variables.
const (
	childEnv = "MCPLEDGER_PG_CHILD" // which child to run
	childURL = "MCPLEDGER_PG_CHILD_URL"
	childID  = "MCPLEDGER_PG_CHILD_ID"
)

func TestMain(m *testing.M) {
	switch os.Getenv(childEnv) {
	case "":
		os.Exit(m.Run())
	case "claim":
		os.Exit(claimChild())
	case "replica":
		os.Exit(replicaChild())
	default:
		fmt.Fprintf(os.Stderr, "unknown %s=%q\n", childEnv, os.Getenv(childEnv))
		os.Exit(2)
	}
}

const (
	raceProcs      = 8
	raceGoroutines = 32
	raceKeys       = 100
)

// childReport is one child's stdout: the keys it won and, for every key,
// the result it saw once the record settled.
type childReport struct {
	Won  []string          `json:"won"`
	Seen map[string]string `json:"seen"`
	Errs []string          `json:"errs"`
}

// TestMultiProcessClaim: 8 OS processes x 32 goroutines claim the same 100
// keys. Exactly one claim wins each key, and every process sees the
// winner's result. The children also open (and so migrate) the fresh schema
// at the same moment, which the advisory lock must serialize.
func TestMultiProcessClaim(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()

	type child struct {
		cmd   *exec.Cmd
		stdin io.WriteCloser
		out   *bufio.Reader
	}
	begin := time.Now()
	children := make([]*child, raceProcs)
	for i := range children {
		cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=claim", childURL+"="+url, fmt.Sprintf("%s=%d", childID, i))
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
			t.Fatalf("start child %d: %v", i, err)
		}
		children[i] = &child{cmd: cmd, stdin: stdin, out: bufio.NewReader(stdout)}
	}
	// Barrier: every child has opened the store before any claims, so the
	// claims overlap as much as the machine allows.
	for i, c := range children {
		line, err := c.out.ReadString('\n')
		if err != nil || strings.TrimSpace(line) != "ready" {
			t.Fatalf("child %d: got %q, %v; want ready", i, line, err)
		}
	}
	t.Logf("children ready after %v", time.Since(begin))
	begin = time.Now()
	for _, c := range children {
		if _, err := io.WriteString(c.stdin, "go\n"); err != nil {
			t.Fatal(err)
		}
	}
	reports := make([]childReport, raceProcs)
	for i, c := range children {
		if err := json.NewDecoder(c.out).Decode(&reports[i]); err != nil {
			t.Fatalf("child %d report: %v", i, err)
		}
		if err := c.cmd.Wait(); err != nil {
			t.Fatalf("child %d: %v", i, err)
		}
	}

	t.Logf("claims took %v", time.Since(begin))
	winners := map[string][]string{} // key -> owners that won it
	for i, r := range reports {
		for _, e := range r.Errs {
			t.Errorf("child %d: %s", i, e)
		}
		for _, k := range r.Won {
			winners[k] = append(winners[k], fmt.Sprintf("p%d", i))
		}
	}
	for k := range raceKeys {
		key := fmt.Sprintf("key-%03d", k)
		if len(winners[key]) != 1 {
			t.Errorf("Claim(%q) won by %v; want exactly one winner", key, winners[key])
		}
	}
	st := open(t, url, nil)
	for k := range raceKeys {
		key := fmt.Sprintf("key-%03d", k)
		rec, err := st.Get(ctx, ledger.ID{Tenant: "t", Tool: "pay", Key: key})
		if err != nil {
			t.Fatalf("Get(%q) = %v", key, err)
		}
		if rec.State != ledger.StateSucceeded {
			t.Errorf("Get(%q).State = %s; want SUCCEEDED", key, rec.State)
		}
		for i, r := range reports {
			if got := r.Seen[key]; got != string(rec.Result) {
				t.Errorf("child %d saw %q for %q; want the winner's %s", i, got, key, rec.Result)
			}
		}
	}
}

// claimChild is one process of TestMultiProcessClaim.
func claimChild() int {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	proc := os.Getenv(childID)
	st, err := postgres.Open(ctx, os.Getenv(childURL), &postgres.Options{MaxConns: 4})
	if err != nil {
		fmt.Fprintln(os.Stderr, "child open:", err)
		return 1
	}
	defer st.Close()
	fmt.Println("ready")
	if _, err := bufio.NewReader(os.Stdin).ReadString('\n'); err != nil {
		fmt.Fprintln(os.Stderr, "child barrier:", err)
		return 1
	}

	var (
		mu  sync.Mutex // guards rep
		rep = childReport{Seen: map[string]string{}}
		wg  sync.WaitGroup
	)
	fail := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		rep.Errs = append(rep.Errs, fmt.Sprintf(format, args...))
	}
	for g := range raceGoroutines {
		wg.Add(1)
		go func() {
			defer wg.Done()
			owner := fmt.Sprintf("p%s-g%d", proc, g)
			for _, k := range rand.Perm(raceKeys) {
				key := fmt.Sprintf("key-%03d", k)
				id := ledger.ID{Tenant: "t", Tool: "pay", Key: key}
				c, err := st.Claim(ctx, ledger.ClaimRequest{ID: id, Fingerprint: "fp", Owner: owner})
				if err != nil {
					fail("Claim(%q) = %v", key, err)
					continue
				}
				rec := c.Record
				if c.Won {
					mu.Lock()
					rep.Won = append(rep.Won, key)
					mu.Unlock()
					rec, err = st.Transition(ctx, ledger.Transition{ID: id, From: ledger.StateProcessing,
						To: ledger.StateSucceeded, Owner: owner, Fence: rec.Fence, AddAttempts: 1,
						Result: json.RawMessage(fmt.Sprintf(`{"by":%q}`, owner))})
					if err != nil {
						fail("Transition(%q) = %v", key, err)
						continue
					}
				} else if rec.State.Waiting() {
					wctx, wcancel := context.WithTimeout(ctx, 30*time.Second)
					rec, err = st.Wait(wctx, id)
					wcancel()
					if err != nil {
						fail("Wait(%q) = %v", key, err)
						continue
					}
				}
				mu.Lock()
				if prev, ok := rep.Seen[key]; ok && prev != string(rec.Result) {
					rep.Errs = append(rep.Errs, fmt.Sprintf("key %q: saw %s, then %s", key, prev, rec.Result))
				}
				rep.Seen[key] = string(rec.Result)
				mu.Unlock()
			}
		}()
	}
	wg.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(rep); err != nil && !errors.Is(err, io.ErrClosedPipe) {
		fmt.Fprintln(os.Stderr, "child report:", err)
		return 1
	}
	return 0
}

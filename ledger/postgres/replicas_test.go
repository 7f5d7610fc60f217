package postgres_test

import (
	"bufio"
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger/postgres"
	"github.com/mcpledger/mcpledger/ledger/postgres/pgtest"
	"github.com/mcpledger/mcpledger/server"
	"github.com/mcpledger/mcpledger/wire"
)

// TestReplicasShareLedger: two replicas of an MCP server, separate OS
// processes guarded by server/ over one PostgreSQL ledger, take calls from
// clients spread across both. Each key runs its handler once (counted in a
// table both replicas write, so a second run anywhere would show), and every
// call of a key, on either replica, returns the same result. The handler's
// result carries a random payment id, so a second execution could not
// produce an equal result by chance.
func TestReplicasShareLedger(t *testing.T) {
	t.Parallel()
	url := pgtest.Schema(t)
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, url)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close(context.Background())
	if _, err := conn.Exec(ctx, `CREATE TABLE payments_made (key text NOT NULL, replica text NOT NULL, payment_id text NOT NULL)`); err != nil {
		t.Fatal(err)
	}

	var endpoints []string
	for i := range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), childEnv+"=replica", childURL+"="+url, fmt.Sprintf("%s=%d", childID, i))
		cmd.Stderr = os.Stderr
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		stdin, err := cmd.StdinPipe() // closing it stops the replica
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			stdin.Close()
			done := make(chan error, 1)
			go func() { done <- cmd.Wait() }()
			select {
			case err := <-done:
				if err != nil {
					t.Errorf("replica %d: %v", i, err)
				}
			case <-time.After(30 * time.Second):
				cmd.Process.Kill()
				t.Errorf("replica %d did not stop within 30s of its stdin closing", i)
				<-done
			}
		})
		line, err := bufio.NewReader(out).ReadString('\n')
		if err != nil || !strings.HasPrefix(line, "http://") {
			t.Fatalf("replica %d said %q, %v; want its URL", i, line, err)
		}
		endpoints = append(endpoints, strings.TrimSpace(line))
	}

	const (
		keys     = 30
		perKey   = 4 // calls of each key, alternating between the replicas
		sessions = 4 // client sessions per replica
	)
	var clients [2][]*mcp.ClientSession
	for r, ep := range endpoints {
		for range sessions {
			c := mcp.NewClient(&mcp.Implementation{Name: "replicas-test", Version: "v1"}, nil)
			cs, err := c.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: ep}, nil)
			if err != nil {
				t.Fatalf("connect to replica %d: %v", r, err)
			}
			t.Cleanup(func() { cs.Close() })
			clients[r] = append(clients[r], cs)
		}
	}

	type answer struct {
		replica int
		text    string
		replay  bool
	}
	answers := make([][]answer, keys)
	var (
		mu sync.Mutex // guards answers
		wg sync.WaitGroup
	)
	for k := range keys {
		for n := range perKey {
			wg.Add(1)
			go func() {
				defer wg.Done()
				r := n % 2
				cs := clients[r][(k+n/2)%sessions]
				key := fmt.Sprintf("order-%03d", k)
				res, err := cs.CallTool(ctx, &mcp.CallToolParams{
					Meta:      mcp.Meta{wire.MetaKey: key},
					Name:      "create_payment",
					Arguments: map[string]any{"amount_cents": 100 + k, "payee": "acme"},
				})
				if err != nil {
					t.Errorf("CallTool(%q) on replica %d = %v", key, r, err)
					return
				}
				if res.IsError || len(res.Content) != 1 {
					t.Errorf("CallTool(%q) on replica %d = %+v; want one text result", key, r, res)
					return
				}
				text, ok := res.Content[0].(*mcp.TextContent)
				if !ok {
					t.Errorf("CallTool(%q) on replica %d: content %T; want text", key, r, res.Content[0])
					return
				}
				_, replay := res.Meta["io.github.mcpledger/replay"]
				mu.Lock()
				answers[k] = append(answers[k], answer{r, text.Text, replay})
				mu.Unlock()
			}()
		}
	}
	wg.Wait()
	if t.Failed() {
		return
	}

	rows, err := conn.Query(ctx, `SELECT key, count(*), string_agg(replica, ',') FROM payments_made GROUP BY key`)
	if err != nil {
		t.Fatal(err)
	}
	made := map[string]string{}
	for rows.Next() {
		var (
			key, where string
			n          int
		)
		if err := rows.Scan(&key, &n, &where); err != nil {
			t.Fatal(err)
		}
		if n != 1 {
			t.Errorf("key %q executed %d times (on replicas %s); want once", key, n, where)
		}
		made[key] = where
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	replays := [2]int{}
	for k, as := range answers {
		key := fmt.Sprintf("order-%03d", k)
		if made[key] == "" {
			t.Errorf("key %q never executed", key)
		}
		fresh := 0
		for _, a := range as {
			if a.text != as[0].text {
				t.Errorf("key %q: replica %d answered %q, another call got %q; want equal answers", key, a.replica, a.text, as[0].text)
			}
			if a.replay {
				replays[a.replica]++
			} else {
				fresh++
			}
		}
		if fresh != 1 {
			t.Errorf("key %q: %d answers were fresh executions; want exactly 1, the rest replays", key, fresh)
		}
	}
	if replays[0] == 0 || replays[1] == 0 {
		t.Errorf("replays by replica = %v; want both replicas to replay", replays)
	}
}

// replicaChild is one replica of TestReplicasShareLedger: an MCP server
// over streamable HTTP whose create_payment runs behind server/'s guard on
// the shared ledger. It prints its URL and serves until stdin closes.
func replicaChild() int {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	url, name := os.Getenv(childURL), "replica-"+os.Getenv(childID)
	st, err := postgres.Open(ctx, url, &postgres.Options{MaxConns: 8})
	if err != nil {
		fmt.Fprintln(os.Stderr, name, err)
		return 1
	}
	defer st.Close()
	db, err := pgx.Connect(ctx, url)
	if err != nil {
		fmt.Fprintln(os.Stderr, name, err)
		return 1
	}
	defer db.Close(context.Background())
	var dbMu sync.Mutex // guards db: one pgx.Conn serves one statement at a time

	type in struct {
		AmountCents int    `json:"amount_cents"`
		Payee       string `json:"payee"`
	}
	s := mcp.NewServer(&mcp.Implementation{Name: "payments-replica", Version: "v1"}, nil)
	mcp.AddTool(s, &mcp.Tool{Name: "create_payment", Description: "moves money"},
		func(ctx context.Context, req *mcp.CallToolRequest, args in) (*mcp.CallToolResult, any, error) {
			key, _ := server.KeyFromContext(ctx)
			var b [8]byte
			if _, err := rand.Read(b[:]); err != nil {
				return nil, nil, err
			}
			id := "pay_" + hex.EncodeToString(b[:])
			dbMu.Lock()
			_, err := db.Exec(ctx, `INSERT INTO payments_made (key, replica, payment_id) VALUES ($1, $2, $3)`, key, name, id)
			dbMu.Unlock()
			if err != nil {
				return nil, nil, err
			}
			return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: fmt.Sprintf("%s: %d cents to %s", id, args.AmountCents, args.Payee)}}}, nil, nil
		})
	g := server.New(st, &server.Options{Owner: name, InProgressWait: 60 * time.Second})
	s.AddReceivingMiddleware(g.Middleware())

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, name, err)
		return 1
	}
	h := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server { return s }, nil)
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
	go func() {
		// The parent closes stdin to stop the replica: the copy ends.
		io.Copy(io.Discard, os.Stdin)
		srv.Close()
	}()
	fmt.Printf("http://%s/\n", ln.Addr())
	if err := srv.Serve(ln); err != nil && err != http.ErrServerClosed {
		fmt.Fprintln(os.Stderr, name, err)
		return 1
	}
	return 0
}

package verify

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// Status is how a guarantee ended.
type Status string

// The statuses. Skip always comes with the reason.
const (
	Pass Status = "pass"
	Fail Status = "fail"
	Skip Status = "skip"
)

// Result is one guarantee's outcome, as the table row and the --json line
// show it.
type Result struct {
	ID     string `json:"id"`
	Name   string `json:"name"`
	Does   string `json:"does"`
	Status Status `json:"status"`
	// Figure is what was measured ("20 concurrent callers, 1 execution").
	Figure string `json:"figure,omitempty"`
	// Reason says why it failed or was skipped.
	Reason string `json:"reason,omitempty"`
	Millis int64  `json:"ms"`
}

// Counter returns how many times the tool executed under the key the
// server saw (the wire key).
type Counter func(ctx context.Context, key string) (int, error)

// Target is what Run checks.
type Target struct {
	// Store is the ledger. Run writes only its scratch tenants, and erases
	// them at the end when the store is a ledger.TenantEraser.
	Store ledger.Store
	// Dial returns the transport of a new session to the server: a new
	// stdio child, a new HTTP session, a new in-memory pipe.
	Dial func(ctx context.Context) (mcp.Transport, error)
	// Kill, when set, kills the server behind a transport Dial returned
	// (for a stdio child, its process group). Nil: the server is not ours
	// to kill (--url).
	Kill func(t mcp.Transport) error
	// Tool is the side-effect tool to exercise, Args its arguments.
	Tool string
	Args map[string]any
	// Count counts executions; nil when there is no way to (the
	// guarantees that need a count then say so). CountBy names it.
	Count   Counter
	CountBy string
	// Files are the ledger's files (SQLite: the database, its -wal and
	// -shm), searched byte for byte for a secret in clear.
	Files []string
	// Callers is how many concurrent callers G1 starts (20 when zero).
	Callers int
	// Logger gets the clients' and the lifecycle's logs (discarded when
	// nil).
	Logger *slog.Logger
}

// guarantee is one numbered check.
type guarantee struct {
	id, name, does string
	run            func(ctx context.Context, r *runner) outcome
}

// outcome is what a check found; Run adds the identity and the time.
type outcome struct {
	status         Status
	figure, reason string
}

func pass(format string, args ...any) outcome {
	return outcome{status: Pass, figure: fmt.Sprintf(format, args...)}
}

func fail(figure, format string, args ...any) outcome {
	return outcome{status: Fail, figure: figure, reason: fmt.Sprintf(format, args...)}
}

func skip(format string, args ...any) outcome {
	return outcome{status: Skip, reason: fmt.Sprintf(format, args...)}
}

// Guarantees lists the IDs and names of every guarantee, in order.
func Guarantees() [][2]string {
	var out [][2]string
	for _, g := range all {
		out = append(out, [2]string{g.id, g.name})
	}
	return out
}

// ErrUnknownGuarantee: --only named a guarantee that does not exist.
var ErrUnknownGuarantee = errors.New("verify: no such guarantee")

// checkTimeout bounds one guarantee: a hung server fails the guarantee it
// hangs instead of the whole run.
const checkTimeout = 60 * time.Second

// Run checks the guarantees named in only (all when empty), reports each
// result as it ends, and returns them all. Its error is a failure to start
// (the server cannot be reached, the tool does not exist) or to remove the
// scratch tenants afterwards; a guarantee that does not hold is a Result
// with Status Fail, not an error.
func Run(ctx context.Context, t Target, only []string, report func(Result)) (results []Result, err error) {
	var picked []guarantee
	for _, id := range only {
		i := slices.IndexFunc(all, func(g guarantee) bool { return strings.EqualFold(g.id, id) })
		if i < 0 {
			return nil, fmt.Errorf("%w: %s; the guarantees are G1 to G%d", ErrUnknownGuarantee, id, len(all))
		}
		picked = append(picked, all[i])
	}
	if len(picked) == 0 {
		picked = all
	}
	r, err := newRunner(ctx, t)
	if err != nil {
		return nil, err
	}
	defer func() {
		if cerr := r.cleanup(context.WithoutCancel(ctx)); cerr != nil && err == nil {
			err = cerr
		}
	}()
	for _, g := range picked {
		start := time.Now()
		gctx, cancel := context.WithTimeout(ctx, checkTimeout)
		o := g.run(gctx, r)
		cancel()
		if ctx.Err() != nil {
			return results, ctx.Err()
		}
		res := Result{ID: g.id, Name: g.name, Does: g.does, Status: o.status, Figure: o.figure,
			Reason: o.reason, Millis: time.Since(start).Milliseconds()}
		results = append(results, res)
		if report != nil {
			report(res)
		}
	}
	return results, nil
}

// runner is one run's scratch space and what it learnt about the server.
type runner struct {
	t      Target
	id     string // random, names this run's tenants, keys and session
	tenant string // the scratch tenant
	other  string // the second scratch tenant (G8)
	layer  string
	log    *slog.Logger
	seq    atomic.Int64

	tool       *mcp.Tool
	keyAware   bool  // the server advertises the capability
	tenantKeys bool  // ... and keeps keys per tenant itself
	retention  int64 // its advertised retentionSeconds
}

// Layer is the layer of every record Run writes.
const Layer = "verify"

func newRunner(ctx context.Context, t Target) (*runner, error) {
	if t.Store == nil || t.Dial == nil || t.Tool == "" {
		return nil, errors.New("verify: a store, a server and a tool are required")
	}
	if t.Callers <= 0 {
		t.Callers = 20
	}
	var b [4]byte
	if _, err := rand.Read(b[:]); err != nil {
		return nil, fmt.Errorf("verify: random run id: %w", err)
	}
	id := hex.EncodeToString(b[:])
	r := &runner{t: t, id: id, tenant: "verify-" + id, other: "verify-" + id + "-b", layer: Layer, log: t.Logger}
	if r.log == nil {
		r.log = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	cs, err := r.session(ctx, nil)
	if err != nil {
		return nil, err
	}
	defer closeAfterCheck(cs)
	if ir := cs.InitializeResult(); ir != nil && ir.Capabilities != nil {
		if v, ok := ir.Capabilities.Experimental[wire.Capability]; ok {
			r.keyAware = true
			r.tenantKeys = wire.TenantAware(ir.Capabilities.Experimental)
			if m, ok := v.(map[string]any); ok {
				if n, ok := m["retentionSeconds"].(float64); ok {
					r.retention = int64(n)
				}
			}
		}
	}
	var names []string
	for tool, err := range cs.Tools(ctx, nil) {
		if err != nil {
			return nil, fmt.Errorf("verify: listing the server's tools: %w", err)
		}
		if tool.Name == t.Tool {
			r.tool = tool
		}
		names = append(names, tool.Name)
	}
	if r.tool == nil {
		return nil, fmt.Errorf("verify: the server has no tool %s; its tools are: %s", t.Tool, strings.Join(names, ", "))
	}
	return r, nil
}

// key returns a new key of this run.
func (r *runner) key(what string) string {
	return fmt.Sprintf("verify-%s-%s-%d", r.id, what, r.seq.Add(1))
}

// wireKey is the key the server sees for a client call in tenant.
func (r *runner) wireKey(tenant, key string) string {
	if r.tenantKeys {
		return key
	}
	return wire.TenantKey(tenant, key)
}

// count returns the executions under the wire key, and false when there
// is no counter.
func (r *runner) count(ctx context.Context, key string) (int, bool, error) {
	if r.t.Count == nil {
		return 0, false, nil
	}
	n, err := r.t.Count(ctx, key)
	if err != nil {
		return 0, true, fmt.Errorf("counting the executions of key %s (%s): %w", key, r.t.CountBy, err)
	}
	return n, true, nil
}

// cleanup erases the scratch tenants.
func (r *runner) cleanup(ctx context.Context) error {
	er, ok := ledger.Unwrap(r.t.Store).(ledger.TenantEraser)
	if !ok {
		return fmt.Errorf("verify: the ledger cannot erase a tenant; remove the records of tenants %s and %s by hand", r.tenant, r.other)
	}
	var errs []error
	for _, tn := range []string{r.tenant, r.other} {
		if _, err := er.EraseTenant(ctx, tn); err != nil {
			errs = append(errs, fmt.Errorf("verify: removing the scratch tenant %s: %w", tn, err))
		}
	}
	return errors.Join(errs...)
}

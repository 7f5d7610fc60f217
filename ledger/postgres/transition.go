package postgres

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/mcpledger/mcpledger/ledger"
)

// transitionShape is what one transition statement writes: the edge, and
// whether it sets the result, the error text and the approval. It decides
// the statement, its parameters and the columns it returns.
type transitionShape struct {
	from, to  ledger.State
	result    bool // sets result and compacted
	errorText bool // sets error_kind and error_message
	approval  bool
	// fenced checks the fence: always when leaving a leased state (with the
	// owner), and for the late result of an owner from UNKNOWN.
	fenced bool
	// bump raises the fence: a take-over (ledger.Rule.BumpFence).
	bump bool
	// finding records a reconciler's finding, by compare-and-set on the
	// finding count too (ledger.Rule.CheckFindings); keepUpdated leaves
	// updated_at as it was (ledger.Rule.KeepUpdated).
	finding, keepUpdated bool
}

func shapeOf(t ledger.Transition, errorText, approval bool) transitionShape {
	r := t.Rule()
	return transitionShape{from: t.From, to: t.To, result: t.Result != nil, errorText: errorText, approval: approval,
		fenced: r.CheckFence, bump: r.BumpFence, finding: r.CheckFindings, keepUpdated: r.KeepUpdated}
}

// ownerKnown: the owner after the transition is the transition's own, the
// new lease holder entering a leased state or the checked one leaving it.
func (sh transitionShape) ownerKnown() bool {
	return sh.from.Waiting() || sh.to.Waiting()
}

// bumpsFence: the transition is a take-over, under a new fence.
func (sh transitionShape) bumpsFence() bool { return sh.bump }

// transitionSQLs caches transitionSQL's statements by shape.
var transitionSQLs sync.Map // transitionShape -> string

// transitionSQL is the compare-and-set for one edge of the state table:
// the WHERE clause holds the expected state (and, leaving a leased state,
// the lease owner and fence; from UNKNOWN, the fence of a late result). It
// sets only what the transition writes: the owner changes only when the
// record enters a leased state, and a transition that says nothing about
// the result, error or approval leaves them as they were. Its parameters
// are $1-$4 the ID, $5 lease_until, $6 the attempts to add, $7 the write
// token, $8 updated_at, then in this order those the shape has: the new
// owner, result and compacted, error kind and message, approval, the owner
// checked and the fence checked; transitionArgs lists them.
//
// The states are written into the statement, not passed as parameters:
// with "state = $n" PostgreSQL plans the update about twice as slowly, and
// there are only a few dozen shapes, each one cached prepared statement.
//
// It returns only the columns the caller does not already know: a result
// the transition writes (up to megabytes) is not sent back, nor is the
// identity, state, lease, owner or error text it just set.
func transitionSQL(sh transitionShape) string {
	if q, ok := transitionSQLs.Load(sh); ok {
		return q.(string)
	}
	set, where, _ := transitionParts(sh, func(i int) string { return "$" + strconv.Itoa(i) })
	q := `UPDATE records SET ` + strings.Join(set, ", ") + `
	WHERE ` + where + `
	RETURNING ` + strings.Join(sh.returning(), ", ")
	transitionSQLs.Store(sh, q)
	return q
}

// transitionParts builds the SET list and the WHERE clause of the
// transition of shape sh, naming parameter i (from 1) ref(i), and lists
// the parameters' types.
func transitionParts(sh transitionShape, ref func(int) string) (set []string, where string, types []string) {
	types = []string{"text", "text", "text", "text", "timestamptz", "integer", "bytea", "timestamptz"}
	param := func(typ string) string {
		types = append(types, typ)
		return ref(len(types))
	}
	updated := "updated_at = " + ref(8)
	if sh.keepUpdated {
		// updated_at is never NULL: this keeps it, while the parameter
		// stays in the statement with its type.
		updated = "updated_at = coalesce(updated_at, " + ref(8) + ")"
	}
	set = []string{"state = '" + string(sh.to) + "'", "lease_until = " + ref(5), "attempts = attempts + " + ref(6),
		"op_token = " + ref(7), updated}
	if sh.to.Waiting() {
		set = append(set, "owner = "+param("text"))
	}
	if sh.bumpsFence() {
		set = append(set, "fence = fence + 1")
	}
	if sh.result {
		set = append(set, "result = "+param("bytea"), "compacted = "+param("boolean"))
	}
	if sh.errorText {
		set = append(set, "error_kind = "+param("text"), "error_message = "+param("text"))
	}
	if sh.approval {
		set = append(set, "approval = "+param("jsonb"))
	}
	if sh.finding {
		set = append(set, "reconciled = coalesce("+param("jsonb")+", reconciled)", "findings = "+param("jsonb"),
			"reconcile_at = coalesce("+param("timestamptz")+", reconcile_at)", "finding_count = finding_count + 1")
	}
	where = "tenant = " + ref(1) + " AND layer = " + ref(2) + " AND tool = " + ref(3) + " AND key = " + ref(4) + " AND NOT tombstone\n\t\tAND state = '" + string(sh.from) + "'"
	if sh.from.Waiting() {
		where += " AND owner = " + param("text")
	}
	if sh.fenced {
		where += " AND fence = " + param("bigint")
	}
	if sh.finding {
		where += " AND finding_count = " + param("integer")
	}
	return set, where, types
}

// mergedSQLs caches mergedTransitionSQL's statements by shape.
var mergedSQLs sync.Map // transitionShape -> string

// mergedTransitionSQL is transitionSQL(sh) for many records at once (a
// batch, see batch.go): its parameters are transitionSQL's as arrays, one
// element per transition, and it returns each record it changed: its
// identity, then what transitionSQL returns. Each record's
// compare-and-set is its own: a record whose state, owner or fence
// differs is simply not among the rows.
func mergedTransitionSQL(sh transitionShape) string {
	if q, ok := mergedSQLs.Load(sh); ok {
		return q.(string)
	}
	set, where, types := transitionParts(sh, func(i int) string { return "u.p" + strconv.Itoa(i) })
	arrays := make([]string, len(types))
	names := make([]string, len(types))
	for i, typ := range types {
		arrays[i] = "$" + strconv.Itoa(i+1) + "::" + typ + "[]"
		names[i] = "p" + strconv.Itoa(i+1)
	}
	q := `UPDATE records SET ` + strings.Join(set, ", ") + `
	FROM unnest(` + strings.Join(arrays, ", ") + `) AS u(` + strings.Join(names, ", ") + `)
	WHERE ` + where + `
	RETURNING tenant, layer, tool, key, ` + strings.Join(sh.returning(), ", ")
	mergedSQLs.Store(sh, q)
	return q
}

// mergeTransitions is the transition batchers' merge: the transitions of
// ws share a shape, so mergedTransitionSQL(shape) with their parameters
// as arrays.
func mergeTransitions(ws []*write) (string, []any, bool) {
	sh, ok := ws[0].row.(transitionShape)
	if !ok {
		return "", nil, false
	}
	args := make([]any, len(ws[0].args))
	for j := range args {
		if args[j], ok = column(ws, j); !ok {
			return "", nil, false
		}
	}
	return mergedTransitionSQL(sh), args, true
}

// column collects parameter j of every write into one array parameter,
// when all of them have one of the types transitionArgs uses.
func column(ws []*write, j int) (any, bool) {
	switch ws[0].args[j].(type) {
	case string:
		return collect[string](ws, j)
	case []byte:
		return collect[[]byte](ws, j)
	case *time.Time:
		return collect[*time.Time](ws, j)
	case time.Time:
		return collect[time.Time](ws, j)
	case int:
		return collect[int](ws, j)
	case int64:
		return collect[int64](ws, j)
	case bool:
		return collect[bool](ws, j)
	}
	return nil, false
}

func collect[T any](ws []*write, j int) (any, bool) {
	out := make([]T, len(ws))
	for i, w := range ws {
		v, ok := w.args[j].(T)
		if !ok {
			return nil, false
		}
		out[i] = v
	}
	return out, true
}

// encodedFinding is what a transition with a finding writes
// (ledger.FindingWrite.Encode at the transition's now).
type encodedFinding struct {
	reconciled *ledger.Resolution
	findings   []ledger.Resolution
	raw        rawFindings
}

func encodeFinding(w *ledger.FindingWrite, now time.Time) (*encodedFinding, error) {
	if w == nil {
		return nil, nil
	}
	rec, fs, rawRec, rawFs, due, err := w.Encode(now)
	if err != nil {
		return nil, fmt.Errorf("postgres: %w", err)
	}
	return &encodedFinding{reconciled: rec, findings: fs, raw: rawFindings{reconciled: rawRec, findings: rawFs, due: due}}, nil
}

// transitionArgs lists the parameters of transitionSQL(sh) for t.
func transitionArgs(sh transitionShape, t ledger.Transition, leaseUntil *time.Time, token []byte, now time.Time,
	kind, msg *string, approval []byte, fw *encodedFinding) []any {
	args := []any{t.Tenant, t.Layer, t.Tool, t.Key, leaseUntil, t.AddAttempts, token, now}
	if sh.to.Waiting() {
		args = append(args, t.Rule().Owner)
	}
	if sh.result {
		args = append(args, []byte(t.Result), t.Compacted)
	}
	if sh.errorText {
		args = append(args, *kind, *msg)
	}
	if sh.approval {
		args = append(args, approval)
	}
	if sh.finding {
		var due *time.Time
		if !fw.raw.due.IsZero() {
			due = &fw.raw.due
		}
		args = append(args, fw.raw.reconciled, fw.raw.findings, due)
	}
	if sh.from.Waiting() {
		args = append(args, t.Owner)
	}
	if sh.fenced {
		args = append(args, t.Fence)
	}
	if sh.finding {
		args = append(args, t.Finding.Count)
	}
	return args
}

// returning lists the columns transitionSQL returns, in the order
// scanTransitioned reads them.
func (sh transitionShape) returning() []string {
	cols := []string{"session", "fingerprint", "arguments", "attempts", "approval", "trace_id", "span_id",
		"reuse_policy", "created_at", "expires_at", "watched"}
	if !sh.ownerKnown() {
		cols = append(cols, "owner")
	}
	if !sh.fenced {
		cols = append(cols, "fence")
	}
	if !sh.result {
		cols = append(cols, "result", "compacted")
	}
	if !sh.errorText {
		cols = append(cols, "error_kind", "error_message")
	}
	if !sh.finding {
		cols = append(cols, findingCols)
	}
	if sh.keepUpdated {
		cols = append(cols, "updated_at")
	}
	return cols
}

// scanTransitioned reads the row transitionSQL(sh) returns and completes
// the record with what transition t wrote: exactly the record a read of
// the row would return.
func scanTransitioned(row pgx.Row, sh transitionShape, t ledger.Transition, kind, msg *string,
	leaseUntil *time.Time, now time.Time, token []byte, fw *encodedFinding) (*ledger.Record, rowMeta, error) {
	r := &ledger.Record{ID: t.ID, State: t.To, UpdatedAt: now}
	var (
		policy   string
		approval []byte
		meta     = rowMeta{token: token}
		rf       rawFindings
	)
	dest := []any{&r.Session, &r.Fingerprint, &r.Arguments, &r.Attempts, &approval, &r.TraceID, &r.SpanID,
		&policy, &r.CreatedAt, &r.ExpiresAt, &meta.watched}
	if sh.ownerKnown() {
		r.Owner = t.Owner
		if sh.to.Waiting() {
			r.Owner = t.Rule().Owner
		}
	} else {
		dest = append(dest, &r.Owner)
	}
	if sh.fenced {
		r.Fence = t.Fence
		if sh.bumpsFence() {
			r.Fence++
		}
	} else {
		dest = append(dest, &r.Fence)
	}
	if sh.result {
		r.Result, r.Compacted = bytes.Clone(t.Result), t.Compacted
	} else {
		dest = append(dest, &r.Result, &r.Compacted)
	}
	if sh.errorText {
		r.ErrorKind, r.ErrorMessage = *kind, *msg
	} else {
		dest = append(dest, &r.ErrorKind, &r.ErrorMessage)
	}
	if sh.finding {
		r.FindingCount = t.Finding.Count + 1
		r.Findings = fw.findings
		if fw.reconciled != nil {
			r.Reconciled = fw.reconciled
		}
		if !fw.raw.due.IsZero() {
			r.ReconcileAt = fw.raw.due
		}
	} else {
		dest = append(dest, &rf.reconciled, &rf.findings, &r.FindingCount, &rf.due)
	}
	if sh.keepUpdated {
		dest = append(dest, &r.UpdatedAt)
	}
	if err := row.Scan(dest...); err != nil {
		return nil, meta, err
	}
	if !sh.finding {
		if err := rf.decode(r); err != nil {
			return nil, meta, err
		}
	}
	r.UpdatedAt = r.UpdatedAt.UTC()
	if leaseUntil != nil {
		r.LeaseUntil = *leaseUntil
	}
	r.ReusePolicy = ledger.ReusePolicy(policy)
	r.CreatedAt = r.CreatedAt.UTC()
	r.ExpiresAt = r.ExpiresAt.UTC()
	var err error
	if r.Approval, err = decodeApproval(r.Tool, approval); err != nil {
		return nil, meta, err
	}
	return r, meta, nil
}

// Transition moves a record from t.From to t.To with compare-and-set.
func (s *Store) Transition(ctx context.Context, t ledger.Transition) (*ledger.Record, error) {
	if err := t.ID.Validate(); err != nil {
		return nil, err
	}
	if err := ledger.CheckTransition(t.From, t.To); err != nil {
		return nil, err
	}
	if t.To.Waiting() && t.Owner == "" {
		return nil, fmt.Errorf("postgres: transition to %s needs an owner for its lease (see process.NewOwner)", t.To)
	}
	token := newToken()
	var (
		out  *ledger.Record
		meta rowMeta
		sent bool // an earlier attempt may have committed
	)
	err := s.retry(ctx, func() error {
		var err error
		if !sent {
			out, meta, err = s.transitionOnce(ctx, t, token)
			var le *lostError
			if errors.As(err, &le) && !le.unsent {
				sent = true
			}
			if !errors.Is(err, pgx.ErrNoRows) {
				return err
			}
		}
		// The update matched nothing, or its fate is unknown: the current
		// row says which. Our own token means an earlier attempt committed.
		cur, got, err := s.get(ctx, t.ID)
		if err != nil {
			return err
		}
		out, meta = cur, got
		switch {
		case bytes.Equal(got.token, token):
			return nil
		case sent && expected(t, cur):
			// The lost attempt did not commit (or has not yet: then this
			// retry loses the compare-and-set and reports it).
			sent = false
			return &lostError{err: errors.New("retrying after a lost connection"), unsent: true}
		}
		return ledger.Mismatch("postgres", t, cur)
	})
	if err != nil {
		if errors.Is(err, ledger.ErrLeaseLost) || errors.Is(err, ledger.ErrStateChanged) {
			return out, err
		}
		var le *lostError
		if sent && errors.As(err, &le) {
			return nil, fmt.Errorf("postgres: transition %s -> %s of %s key %s: the connection was lost after the transition was sent, and whether it was recorded could not be read back: %w", t.From, t.To, t.Tool, ledger.ShortHash(t.Key), err)
		}
		return nil, fmt.Errorf("postgres: transition %s -> %s of %s key %s: %w", t.From, t.To, t.Tool, ledger.ShortHash(t.Key), err)
	}
	if t.From.Waiting() {
		s.settled(t.ID, meta.watched)
	}
	return out, nil
}

// expected reports whether cur still passes t's compare-and-set
// (ledger.Transition.Holds).
func expected(t ledger.Transition, cur *ledger.Record) bool { return t.Holds(cur) }

func (s *Store) transitionOnce(ctx context.Context, t ledger.Transition, token []byte) (*ledger.Record, rowMeta, error) {
	now := s.clock()
	var leaseUntil *time.Time
	if t.To.Waiting() {
		l := now.Add(orDefault(t.Lease, ledger.DefaultLease))
		leaseUntil = &l
	}
	var kind, msg *string
	if t.Rule().ClearError {
		empty := ""
		kind, msg = &empty, &empty
	}
	if t.ErrorKind != "" || t.ErrorMessage != "" {
		kind, msg = &t.ErrorKind, &t.ErrorMessage
	}
	var approval []byte
	if t.Approval != nil {
		var err error
		if approval, err = json.Marshal(t.Approval); err != nil {
			return nil, rowMeta{}, fmt.Errorf("postgres: encode approval: %w", err)
		}
	}
	fw, err := encodeFinding(t.Finding, now)
	if err != nil {
		return nil, rowMeta{}, err
	}
	sh := shapeOf(t, kind != nil, approval != nil)
	query, args := transitionSQL(sh), transitionArgs(sh, t, leaseUntil, token, now, kind, msg, approval, fw)
	var (
		out  *ledger.Record
		meta rowMeta
	)
	scan := func(row pgx.Row) error {
		var err error
		out, meta, err = scanTransitioned(row, sh, t, kind, msg, leaseUntil, now, token, fw)
		return err
	}
	b := s.transitions
	w := &write{id: t.ID, query: query, args: args, row: sh, scan: scan}
	w.alone = func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error { return scan(c.QueryRow(ctx, query, args...)) })
	}
	if !s.portable && ledger.Deferrable(max(s.durability, ledger.DurabilityOf(ctx)), t) {
		b = s.behind
		w.alone = func() error {
			return s.with(ctx, func(c *pgxpool.Conn) error {
				var err error
				out, meta, err = writeBehind(ctx, c, query, args, func(row pgx.Row) (*ledger.Record, rowMeta, error) {
					return scanTransitioned(row, sh, t, kind, msg, leaseUntil, now, token, fw)
				})
				return err
			})
		}
	}
	err = b.do(ctx, w)
	return out, meta, err
}

// Renew extends the lease l (PROCESSING or PENDING_APPROVAL, its owner
// and fence) to now+d. Renewing twice is harmless, so a renewal lost with
// its connection is simply sent again.
func (s *Store) Renew(ctx context.Context, l ledger.Lease, d time.Duration) error {
	if err := l.ID.Validate(); err != nil {
		return err
	}
	var n int64
	err := s.retry(ctx, func() error {
		return s.with(ctx, func(c *pgxpool.Conn) error {
			now := s.clock()
			tag, err := c.Exec(ctx, `UPDATE records SET lease_until = $7, updated_at = $8
				WHERE tenant = $1 AND layer = $2 AND tool = $3 AND key = $4 AND NOT tombstone
					AND state IN ('PROCESSING', 'PENDING_APPROVAL') AND owner = $5 AND fence = $6`,
				l.Tenant, l.Layer, l.Tool, l.Key, l.Owner, l.Fence, now.Add(orDefault(d, ledger.DefaultLease)), now)
			n = tag.RowsAffected()
			return err
		})
	})
	if err != nil {
		return fmt.Errorf("postgres: renew %s key %s: %w", l.Tool, ledger.ShortHash(l.Key), err)
	}
	if n == 1 {
		return nil
	}
	cur, _, err := s.get(ctx, l.ID)
	if errors.Is(err, ledger.ErrNotFound) {
		return fmt.Errorf("postgres: renew %s key %s: no such record: %w", l.Tool, ledger.ShortHash(l.Key), ledger.ErrLeaseLost)
	}
	if err != nil {
		return fmt.Errorf("postgres: renew %s key %s: %w", l.Tool, ledger.ShortHash(l.Key), err)
	}
	return fmt.Errorf("postgres: renew %s key %s: the record is %s, owner %q at fence %d, not %q at fence %d: %w",
		l.Tool, ledger.ShortHash(l.Key), cur.State, cur.Owner, cur.Fence, l.Owner, l.Fence, ledger.ErrLeaseLost)
}

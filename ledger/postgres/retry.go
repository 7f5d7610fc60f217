package postgres

import (
	"context"
	"crypto/rand"
	"errors"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// lostError marks a failure of the connection or the server rather than of
// the statement: the server restarted, the network dropped, or no
// connection could be made. Unsent reports that nothing reached the server,
// so the statement certainly did not run.
type lostError struct {
	err    error
	unsent bool
}

func (e *lostError) Error() string { return e.err.Error() }
func (e *lostError) Unwrap() error { return e.err }

// isLost reports whether err (from a statement on c) means the connection
// or server went away. ctx errors never count: the caller gave up.
func isLost(ctx context.Context, c *pgxpool.Conn, err error) bool {
	if err == nil || ctx.Err() != nil {
		return false
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		// 08: connection exception; 57P01-03: admin or crash shutdown, the
		// server is starting up. Everything else is the statement's fault.
		return strings.HasPrefix(pe.Code, "08") || pe.Code == "57P01" || pe.Code == "57P02" || pe.Code == "57P03"
	}
	var ce *pgconn.ConnectError
	var ne net.Error
	switch {
	case errors.As(err, &ce), errors.As(err, &ne), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF):
		return true
	case c != nil && c.Conn().IsClosed():
		return true
	}
	return pgconn.SafeToRetry(err)
}

// with runs f on a pooled connection and marks connection failures as
// *lostError. A connection that failed is closed, not returned to the pool.
func (s *Store) with(ctx context.Context, f func(c *pgxpool.Conn) error) error {
	c, err := s.conn(ctx)
	if err != nil {
		var le *lostError
		if !errors.As(err, &le) && isLost(ctx, nil, err) {
			return &lostError{err: err, unsent: true}
		}
		return err
	}
	err = f(c)
	if s.portable {
		err = portableErr(err)
	}
	if isLost(ctx, c, err) {
		unsent := pgconn.SafeToRetry(err)
		// A closed connection is destroyed by Release rather than pooled.
		cctx, cancel := context.WithTimeout(context.Background(), time.Second)
		_ = c.Conn().Close(cctx) // it is lost already: f's error is the news
		cancel()
		c.Release()
		return &lostError{err: err, unsent: unsent}
	}
	c.Release()
	return err
}

// retry calls attempt until it returns anything but a *lostError, while the
// server stays unreachable for at most reconnectFor (wall-clock time: this
// is about real waiting, not ledger time). The backoff is bounded and ends
// at once when ctx does.
func (s *Store) retry(ctx context.Context, attempt func() error) error {
	deadline := time.Now().Add(s.reconnectFor)
	delay := 25 * time.Millisecond
	for {
		err := attempt()
		var le *lostError
		if !errors.As(err, &le) || !time.Now().Before(deadline) {
			return err
		}
		t := time.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return err
		case <-t.C:
		}
		delay = min(2*delay, time.Second)
	}
}

// newToken returns the random token a write stores in op_token so that,
// when the connection dies after the write was sent, the writer can read
// the row back and know whether its own write committed.
func newToken() []byte {
	b := make([]byte, 16)
	if _, err := rand.Read(b); err != nil {
		// crypto/rand does not fail on supported platforms; a zero token
		// would only make ambiguous writes report failure.
		return b
	}
	return b
}

// IsUnreachable reports whether err, from Open or an operation, means that
// no server took the connection or the connection was lost (the server
// stopped, restarted or failed over), rather than that the database
// refused the statement. A command can wait and try again.
func IsUnreachable(err error) bool {
	var le *lostError
	return errors.As(err, &le) || isLost(context.Background(), nil, err)
}

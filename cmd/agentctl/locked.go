package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"runtime"
	"strings"
	"time"

	"github.com/mcpledger/mcpledger/ledger/sqlite"
)

// defaultLedgerWait is how long a command waits for a ledger that another
// process holds locked, unless --wait says otherwise.
const defaultLedgerWait = 5 * time.Second

// lockedError explains a ledger that stayed locked: how long this command
// really waited, which process holds the lock when that can be found, and
// the fix.
func (a *app) lockedError(err error) error {
	waited := a.busy.waited()
	path := "the ledger"
	if be, ok := errors.AsType[*sqlite.BusyError](err); ok {
		path = be.Path
		waited = max(waited, be.Timeout)
	}
	holder := "another process"
	if be, ok := errors.AsType[*sqlite.BusyError](err); ok {
		if pid, perr := sqlite.LockHolder(be.Path); perr == nil && pid > 0 {
			holder = "process " + processText(pid)
		}
	}
	return &exitError{reason: reasonLedgerLocked, err: fmt.Errorf(
		"%s is locked by %s, and stayed locked for the %s this command waited; nothing was recorded; let that process finish (or stop it), then run the same command again, or pass --wait %s to wait longer",
		path, holder, waited.Round(100*time.Millisecond), suggestWait(waited))}
}

// suggestWait proposes a --wait well past the wait that was too short, in
// whole minutes.
func suggestWait(waited time.Duration) string {
	m := max(time.Minute, (4 * waited).Round(time.Minute))
	return fmt.Sprintf("%dm", m/time.Minute)
}

// processText names a process: its pid and, where /proc tells, its
// command line, shortened.
func processText(pid int) string {
	if runtime.GOOS != "linux" {
		return fmt.Sprintf("%d", pid)
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil || len(b) == 0 {
		return fmt.Sprintf("%d", pid)
	}
	cmd := strings.TrimSpace(strings.ReplaceAll(string(b), "\x00", " "))
	return fmt.Sprintf("%d (%s)", pid, clip(printable(cmd, false), 60))
}

// explainLedger turns an error that the ledger's lock caused, wherever it
// surfaced, into the locked-ledger error.
func (a *app) explainLedger(err error) error {
	if e, ok := errors.AsType[*exitError](err); ok && e.reason == reasonLedgerLocked {
		return err
	}
	if errors.Is(err, sqlite.ErrBusy) {
		return a.lockedError(err)
	}
	return err
}

// warnLogger prints the ledger's warnings (a file others can read) as
// one "agentctl: warning:" line each on stderr.
func (a *app) warnLogger() *slog.Logger {
	return slog.New(&warnHandler{a: a})
}

// warnHandler is a slog.Handler that prints a record's message, from
// Warn up, on stderr.
type warnHandler struct{ a *app }

func (h *warnHandler) Enabled(_ context.Context, l slog.Level) bool { return l >= slog.LevelWarn }

func (h *warnHandler) Handle(_ context.Context, r slog.Record) error {
	h.a.status.clear()
	_, err := fmt.Fprintf(h.a.io.Err, "agentctl: warning: %s\n", oneLine(r.Message))
	return err
}

func (h *warnHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h *warnHandler) WithGroup(string) slog.Handler      { return h }

package mcptest

import (
	"fmt"
	"time"
)

// FaultKind names what a Fault does to the call it meets.
type FaultKind string

// The fault kinds. Their constructors below say what each one does.
const (
	KindFailTransient     FaultKind = "fail_transient"
	KindDropAfterExecute  FaultKind = "drop_after_execute"
	KindStallAfterExecute FaultKind = "stall_after_execute"
	KindExitAfterCommit   FaultKind = "exit_after_commit"
	KindToolError         FaultKind = "tool_error"
	KindProtocolError     FaultKind = "protocol_error"
	KindHTTPStatus        FaultKind = "http_status"
)

// DefaultRetryAfter is the retryAfterMs a FailTransient fault sends when the
// fault names none: short, so tests on real timers stay fast.
const DefaultRetryAfter = 5 * time.Millisecond

// ExitCode is the status a child process exits with on ExitAfterCommit.
const ExitCode = 17

// A Fault changes what the server does for one upcoming call of a write tool
// ("write" or "write_nokey"); faults are used in the order scripted. The
// fields are exported so that a fault crosses process boundaries as JSON (the
// state file, the "mcptest_fault" tool); build faults with the constructors.
type Fault struct {
	Kind FaultKind `json:"kind"`
	// Times repeats the fault for that many consecutive calls (0 means 1).
	Times int `json:"times,omitempty"`
	// RetryAfterMs is the data.retryAfterMs of a FailTransient answer.
	RetryAfterMs int64 `json:"retryAfterMs,omitempty"`
	// StallMs bounds a StallAfterExecute; 0 stalls until the call's context
	// ends (the client cancels or the connection closes).
	StallMs int64 `json:"stallMs,omitempty"`
	// Code is the JSON-RPC code of a ProtocolError.
	Code int64 `json:"code,omitempty"`
	// Status is the HTTP status of an HTTPStatus fault.
	Status int `json:"status,omitempty"`
	// AfterExecute makes an HTTPStatus fault run the call before the HTTP
	// layer answers with Status; otherwise the call never reaches the tool.
	AfterExecute bool `json:"afterExecute,omitempty"`
}

// FailTransient answers the next n calls with -31002 in_progress carrying
// data.retryAfterMs (DefaultRetryAfter), without executing them.
func FailTransient(n int) Fault {
	return Fault{Kind: KindFailTransient, Times: n, RetryAfterMs: DefaultRetryAfter.Milliseconds()}
}

// WithRetryAfter returns f answering with retryAfterMs d.
func (f Fault) WithRetryAfter(d time.Duration) Fault {
	f.RetryAfterMs = d.Milliseconds()
	return f
}

// DropAfterExecute executes the call, then closes the connection without
// answering: the in-memory pipe or the stdio pipes are closed (the session
// is dead), and over HTTP the TCP connection of that request is dropped (the
// session survives).
func DropAfterExecute() Fault { return Fault{Kind: KindDropAfterExecute} }

// StallAfterExecute executes the call, then withholds the answer for d, or,
// when d is 0, until the call's context ends: past the client's deadline.
func StallAfterExecute(d time.Duration) Fault {
	return Fault{Kind: KindStallAfterExecute, StallMs: d.Milliseconds()}
}

// ExitAfterCommit executes the call, persists it to the state file, and exits
// the child process with ExitCode without answering. In the test process
// itself, which must not exit, it acts as DropAfterExecute.
func ExitAfterCommit() Fault { return Fault{Kind: KindExitAfterCommit} }

// ToolError executes the call and answers with an isError result: the tool
// ran and said no. It counts as an execution.
func ToolError() Fault { return Fault{Kind: KindToolError} }

// ProtocolError answers the call with a JSON-RPC error of the given code
// without executing it. Our server codes (-31001..-31004) carry their
// data.reason.
func ProtocolError(code int64) Fault { return Fault{Kind: KindProtocolError, Code: code} }

// HTTPStatus makes the HTTP layer answer the call's POST with status (429,
// 503, ...) before the call reaches the MCP server: nothing executes.
// Outside HTTP the call fails with -32603.
func HTTPStatus(status int) Fault { return Fault{Kind: KindHTTPStatus, Status: status} }

// HTTPStatusAfterExecute executes the call, then the HTTP layer discards the
// answer and replies with status instead, as an overloaded proxy in front of
// a server might. Outside HTTP the call fails with -32603 unexecuted.
func HTTPStatusAfterExecute(status int) Fault {
	return Fault{Kind: KindHTTPStatus, Status: status, AfterExecute: true}
}

func (f Fault) String() string {
	s := string(f.Kind)
	switch f.Kind {
	case KindFailTransient:
		s += fmt.Sprintf("(retryAfter=%dms)", f.RetryAfterMs)
	case KindStallAfterExecute:
		s += fmt.Sprintf("(%dms)", f.StallMs)
	case KindProtocolError:
		s += fmt.Sprintf("(%d)", f.Code)
	case KindHTTPStatus:
		s += fmt.Sprintf("(%d, afterExecute=%v)", f.Status, f.AfterExecute)
	}
	if f.Times > 1 {
		s += fmt.Sprintf("×%d", f.Times)
	}
	return s
}

// expand turns f into one fault per call it applies to.
func (f Fault) expand() []Fault {
	n := f.Times
	if n < 1 {
		n = 1
	}
	one := f
	one.Times = 0
	out := make([]Fault, n)
	for i := range out {
		out[i] = one
	}
	return out
}

// preExecute reports whether the fault answers before the tool runs.
func (f Fault) preExecute() bool {
	switch f.Kind {
	case KindFailTransient, KindProtocolError:
		return true
	case KindHTTPStatus:
		return !f.AfterExecute
	}
	return false
}

package mcptest

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
	"slices"
	"time"
)

// update runs fn on the current state (caught up with the state file) and
// applies and persists the events it returns, all under s.mu and the file
// lock, so decisions and their records are atomic across processes.
func (s *Server) update(fn func(st *state) []event) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jl != nil {
		if err := s.jl.lock(s.st); err != nil {
			return err
		}
		defer s.jl.unlock()
	}
	before := s.st.total
	events := fn(s.st)
	if s.jl != nil && len(events) > 0 {
		if err := s.jl.append(events); err != nil {
			return err
		}
	}
	for _, e := range events {
		s.st.apply(e)
	}
	if s.st.total != before {
		close(s.changed)
		s.changed = make(chan struct{})
	}
	return nil
}

// view runs fn on the current state, caught up with the state file. It
// panics on a state file error: a broken fixture, not a test outcome.
func (s *Server) view(fn func(st *state)) {
	if err := s.update(func(st *state) []event { fn(st); return nil }); err != nil {
		panic(err)
	}
}

// Script appends faults to the script; each applies to one upcoming write
// call (FailTransient(n) to n of them), in order. With a StateFile the
// script is shared with every process serving from that file.
func (s *Server) Script(faults ...Fault) {
	if err := s.script(faults); err != nil {
		panic(err)
	}
}

func (s *Server) script(faults []Fault) error {
	if len(faults) == 0 {
		return nil
	}
	return s.update(func(*state) []event { return []event{{Script: faults}} })
}

// Pending returns the faults not yet used, one per call.
func (s *Server) Pending() []Fault {
	var out []Fault
	s.view(func(st *state) { out = slices.Clone(st.faults) })
	return out
}

// Executions returns how many times a write executed under key ("" for
// calls without a key). Replays by an Idempotent server do not count.
func (s *Server) Executions(key string) int {
	var n int
	s.view(func(st *state) { n = st.execs[key] })
	return n
}

// TotalExecutions returns the executions over all keys.
func (s *Server) TotalExecutions() int {
	var n int
	s.view(func(st *state) { n = st.total })
	return n
}

// KeysSeen returns the key of every write attempt that reached the tool with
// valid arguments, in arrival order, faulted ones included ("" for an
// attempt without a key). Attempts rejected as -32602 are not recorded.
func (s *Server) KeysSeen() []string {
	var out []string
	s.view(func(st *state) { out = slices.Clone(st.seen) })
	return out
}

// Stalled receives the key of each call that enters a StallAfterExecute
// (after it executed). Sends never block; the buffer holds 64.
func (s *Server) Stalled() <-chan string { return s.stalled }

// statePoll is how often WaitExecutions reads a state file that another
// process writes: the file has no change notification.
const statePoll = 5 * time.Millisecond

// WaitExecutions blocks until at least n executions happened in total, or
// ctx ends. In one process it is woken by each execution; with a StateFile
// written by another process it re-reads the file every few milliseconds.
func (s *Server) WaitExecutions(ctx context.Context, n int) error {
	for {
		var total int
		var changed chan struct{}
		s.view(func(st *state) { total, changed = st.total, s.changed })
		if total >= n {
			return nil
		}
		var poll *time.Timer
		var polled <-chan time.Time
		if s.jl != nil {
			poll = time.NewTimer(statePoll)
			polled = poll.C
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-changed:
		case <-polled:
		}
		if poll != nil {
			poll.Stop()
		}
	}
}

// Close releases the state file. Connected sessions are closed by their
// own cleanups.
func (s *Server) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.jl == nil {
		return nil
	}
	err := s.jl.close()
	s.jl = nil
	return err
}

func (s *Server) setOutcome(httpID string, f Fault) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.outcomes[httpID] = f
}

func (s *Server) takeOutcome(httpID string) (Fault, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	f, ok := s.outcomes[httpID]
	delete(s.outcomes, httpID)
	return f, ok
}

// stallRelease returns a channel closed when a stalled HTTP call must end
// although its context has not: go-sdk sends notifications/cancelled
// asynchronously and a client closing right after giving up can overtake
// it, while the server's session close (the client's DELETE) waits for the
// stalled handler. Calls on other transports end with their pipe instead.
func (s *Server) stallRelease(req *mcp.CallToolRequest, httpID string) <-chan struct{} {
	if httpID == "" {
		return nil
	}
	sid := req.Extra.Header.Get(sessionIDHeader)
	s.mu.Lock()
	defer s.mu.Unlock()
	ch, ok := s.releases[sid]
	if !ok {
		ch = make(chan struct{})
		s.releases[sid] = ch
		if s.released {
			close(ch)
		}
	}
	return ch
}

// releaseStalls ends the HTTP stalls of one session, or of all sessions
// (and every later one) when all is set.
func (s *Server) releaseStalls(sid string, all bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if all {
		s.released = true
	}
	for id, ch := range s.releases {
		if all || id == sid {
			close(ch)
			delete(s.releases, id)
		}
	}
}

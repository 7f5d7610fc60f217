package client

import (
	"errors"
	"os/exec"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Exited reports whether the server process of the session an attempt
// went out on (via) has exited: the server is a child process
// (Options.ChildProcess) and the session was closed, which for go-sdk's
// CommandTransport waits for the process to exit. A probe then believes
// an absent answer about a call sent on it at once (caller.Exiter).
func (cn *conn) Exited(via any) bool {
	s, ok := via.(*mcp.ClientSession)
	return ok && (*Client)(cn).ended.has(s)
}

// endedSessions remembers the last sessions closed with their server
// process gone. The zero value is ready to use.
type endedSessions struct {
	// mu guards list.
	mu   sync.Mutex
	list []*mcp.ClientSession
}

// maxEnded bounds the sessions remembered: a call sent on an older one
// waits for its quiet period instead.
const maxEnded = 16

// closed notes that s was closed with err. Closing a CommandTransport
// session waits for its process: a nil error or the process's own exit
// status (killed, or a non-zero exit) means it exited; any other error
// (it did not exit even after SIGKILL) means it may still run.
func (e *endedSessions) closed(s *mcp.ClientSession, err error, child bool) {
	if !child {
		return
	}
	if _, exited := errors.AsType[*exec.ExitError](err); err != nil && !exited {
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if len(e.list) >= maxEnded {
		e.list = append(e.list[:0], e.list[1:]...)
	}
	e.list = append(e.list, s)
}

func (e *endedSessions) has(s *mcp.ClientSession) bool {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, x := range e.list {
		if x == s {
			return true
		}
	}
	return false
}

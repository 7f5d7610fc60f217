package mcptest

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// Transport connects a new server session to one end of an in-memory pipe
// and returns the other end, for a client to Connect to; closing the
// client's session closes the pipe. Unlike ClientTransport it needs no
// test: agentctl verify serves its built-in server this way.
func (s *Server) Transport(ctx context.Context) (mcp.Transport, error) {
	tr, _, err := s.pipe(ctx)
	return tr, err
}

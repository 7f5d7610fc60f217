package server

import (
	"context"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/telemetry"
)

// Close writes the call events still queued and stops their background
// writer. The store is the caller's to close, after the Guard. Calls that
// end after Close still work but leave no event.
func (g *Guard) Close(ctx context.Context) error {
	if err := g.core.Close(ctx); err != nil {
		return fmt.Errorf("server: %w", err)
	}
	return nil
}

// peerOf is the network.transport of a request where the request says:
// one that came over HTTP carries its headers. Over stdio and in-memory
// transports alike it carries nothing, so it reports nothing.
func peerOf(req *mcp.CallToolRequest) telemetry.Peer {
	if req.Extra != nil && req.Extra.Header != nil {
		return telemetry.Peer{Transport: telemetry.TransportTCP}
	}
	return telemetry.Peer{}
}

// sessionOf is what telemetry reports of the session a request came
// through: its id and the negotiated protocol version.
func sessionOf(req *mcp.CallToolRequest) (id, protocolVersion string) {
	if req.Session != nil {
		id = req.Session.ID()
	}
	return id, req.ProtocolVersion()
}

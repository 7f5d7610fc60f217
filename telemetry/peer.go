package telemetry

import (
	"net/url"
	"strconv"

	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/mcpconv"

	"github.com/mcpledger/mcpledger/ledger"
)

// Peer is where a call's requests go, as the MCP semantic conventions
// name it: network.transport on both sides, server.address and
// server.port on the client's. The zero value is "not known" and emits
// nothing; so does each field left empty.
//
// They go on the call's span and its operation duration: a client talks
// to few servers, so they keep the metric's cardinality low.
type Peer struct {
	// Transport is network.transport: TransportPipe for a server on the
	// other end of stdio, TransportTCP for streamable HTTP.
	Transport string
	// Address and Port are server.address and server.port, the server as
	// the client addresses it (a host name, not a resolved IP).
	Address string
	Port    int
}

// The values of network.transport that MCP's transports have, from the
// conventions' (mcpconv declares them as variables).
var (
	TransportPipe = string(mcpconv.NetworkTransportPipe)
	TransportTCP  = string(mcpconv.NetworkTransportTCP)
)

// Attribute keys of a Peer.
const (
	AttrNetworkTransport = semconv.NetworkTransportKey
	AttrServerAddress    = semconv.ServerAddressKey
	AttrServerPort       = semconv.ServerPortKey
)

// PeerOfURL is the Peer of a streamable HTTP endpoint: TCP, the URL's
// host, and its port (the scheme's, 80 or 443, when the URL names none).
// An endpoint that does not parse has only the transport.
func PeerOfURL(endpoint string) Peer {
	p := Peer{Transport: TransportTCP}
	u, err := url.Parse(endpoint)
	if err != nil || u.Host == "" {
		return p
	}
	p.Address = u.Hostname()
	if port, err := strconv.Atoi(u.Port()); err == nil {
		p.Port = port
	} else if u.Port() == "" {
		switch u.Scheme {
		case "http":
			p.Port = 80
		case "https":
			p.Port = 443
		}
	}
	return p
}

// PeerOfStdio is the Peer of a server run as a command and spoken to
// over its stdin and stdout.
func PeerOfStdio() Peer { return Peer{Transport: TransportPipe} }

// attrs are p's attributes on side: the server's address and port only
// where the conventions have them, on the client.
func (p Peer) attrs(side ledger.Side) []attribute.KeyValue {
	var kvs []attribute.KeyValue
	if p.Transport != "" {
		kvs = append(kvs, AttrNetworkTransport.String(p.Transport))
	}
	if side != ledger.SideClient {
		return kvs
	}
	if p.Address != "" {
		kvs = append(kvs, AttrServerAddress.String(p.Address))
	}
	if p.Port > 0 {
		kvs = append(kvs, AttrServerPort.Int(p.Port))
	}
	return kvs
}

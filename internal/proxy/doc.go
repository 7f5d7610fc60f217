// Package proxy puts the mcpledger ledger between an MCP host and an
// upstream MCP server that knows nothing about it. To the host the proxy is
// an MCP server with the upstream's tools plus ledger_status and
// ledger_list; to the upstream it is an MCP client. Every tools/call goes
// through package client (keys, claim, retries, replay, confirmation);
// everything else is relayed unchanged.
//
//	p, err := proxy.New(ctx, &proxy.Options{
//		Transport: func(context.Context) (mcp.Transport, error) {
//			return &mcp.CommandTransport{Command: exec.Command("payments")}, nil
//		},
//		Store:   store,
//		Session: "desktop",
//	})
//	if err != nil {
//		return err
//	}
//	defer p.Close()
//	return p.Server().Run(ctx, &mcp.StdioTransport{})
//
// What is relayed, host to upstream: resources (list, templates, read,
// subscribe, unsubscribe), prompts (list, get), completion/complete,
// logging/setLevel, progress notifications, and cancellation (a cancelled
// host request cancels the upstream request it caused). Upstream to host:
// sampling/createMessage, elicitation/create, notifications/elicitation/complete,
// log messages, progress, resources/updated, and the list-changed
// notifications of tools, prompts and resources. A tools/list_changed from
// the upstream also refreshes the proxy's copy of the tool list.
//
// What is not relayed: roots (deprecated in MCP; the upstream sees a client
// without the roots capability), custom methods, and the upstream's
// experimental capabilities (the proxy cannot relay what it does not know).
// The proxy advertises the idempotency capability itself: it honours a key
// the host sends in _meta["io.github.mcpledger/idempotency-key"], or in the
// idempotency_key argument of a tool whose input schema declares one (two
// different keys: -32602). A request the host cancels gets no response
// over stdio, and every error the proxy answers has a JSON-RPC code.
//
// Protocol versions: the proxy speaks MCP up to 2025-11-25 on both sides.
// From 2026-07-28 a server may not send requests of its own while it serves
// a call; the upstream's elicitation and sampling and the proxy's own
// confirmation questions would then have to travel as multi-round-trip
// results, which a relay cannot hold open across the host's retries; and
// requests change shape (no logging/setLevel, per-request capabilities).
// Speaking the same version to both keeps every relayed message one for
// one. An upstream that speaks only 2026-07-28 is not supported.
//
// Sessions: every host session gets its own upstream session (for a
// command, its own process), so the upstream's requests and notifications
// reach the host session whose call caused them; over streamable HTTP,
// what the upstream sends while it serves a host request goes on that
// request's stream (progress by its token; log lines and questions with
// the host's request in flight, the latest when it runs several at once),
// and the rest on the host's stream for messages outside requests. Over
// stdio there is one. The tool list is shared: it is the upstream's, as the
// latest refresh saw it. Elicitation requests reach the host as the
// upstream sent them, whatever their schema, and the host's answer goes
// back as given: go-sdk's client checks and completes both, and the proxy
// leaves that to the two ends.
//
// Ledger sessions (the scope of the re-planning guard and of "approve for
// this session"): Options.Session, when set, is every host session's, on
// purpose: one agent behind several connections. Unset, each host session
// is a ledger session of its own, so two conversations calling the same
// tool with the same arguments never get each other's replays. A host may
// name its ledger session in the _meta of initialize (MetaSession).
//
// Resources: every host session holds an upstream session, and over
// streamable HTTP their calls share one pool of upstream connections
// (UpstreamTransport). What does not belong to one host session is the
// proxy's, once: the go-sdk client of the upstream sessions, the ledger
// clients' telemetry (one event writer, one set of metric attributes) and
// their memory of finished records, which answers a repeat without a
// ledger read. Once host requests stop for Options.IdleRelease the proxy
// closes the idle upstream connections, forgets those records, has the
// ledger drop its caches (ledger.MemoryReleaser) and returns the memory of
// the burst to the operating system.
package proxy

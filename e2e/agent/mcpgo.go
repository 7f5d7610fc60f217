package main

import (
	"context"
	"encoding/json"
	"errors"
	"io"

	mgclient "github.com/mark3labs/mcp-go/client"
	"github.com/mark3labs/mcp-go/client/transport"
	mgmcp "github.com/mark3labs/mcp-go/mcp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/caller"
	"github.com/mcpledger/mcpledger/client"
	"github.com/mcpledger/mcpledger/e2e/internal/journal"
	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcpgo"
)

// dialMCPGo is the agent on github.com/mark3labs/mcp-go (-sdk mcpgo):
// package mcpgo's Client with the settings of the go-sdk agent.
func dialMCPGo(ctx context.Context, cfg config, store ledger.Store, stderr io.Writer) (*mcpgo.Client, error) {
	return mcpgo.Dial(ctx, mcpgoConnector(cfg, stderr), store, &mcpgo.ClientOptions{
		Tenant: cfg.tenant, Session: "kill-suite", Policy: payAll,
		Lease: cfg.lease, InProgressWait: cfg.wait, AttemptTimeout: cfg.attempt,
		Retry: cfg.retry(), Logger: warnings(stderr),
	})
}

// callMCPGo pays once with key through c and describes the answer as the
// go-sdk agent does (the result is decoded into go-sdk's type for that).
func callMCPGo(ctx context.Context, c *mcpgo.Client, key string) journal.Entry {
	req := mgmcp.CallToolRequest{}
	req.Params.Name = "create_payment"
	req.Params.Arguments = journal.Arguments(key)
	out, err := c.Call(caller.WithKey(ctx, key), req)
	if err != nil {
		return describe(key, nil, err)
	}
	raw, err := json.Marshal(out.Result)
	res := new(mcp.CallToolResult)
	if err == nil {
		err = res.UnmarshalJSON(raw)
	}
	if err != nil {
		return journal.Entry{Event: journal.EventAnswer, Key: key, Outcome: journal.OutcomeError, Error: "decode the result: " + err.Error()}
	}
	return describe(key, &client.Outcome{Result: res, Key: out.Key, Replayed: out.Replayed, Record: out.Record, Attempts: out.Attempts}, nil)
}

// mcpgoConnector opens an initialized mcp-go client on a wrapped
// transport: a new child process for a stdio command, or a new HTTP
// session.
func mcpgoConnector(cfg config, stderr io.Writer) mcpgo.ConnectFunc {
	return func(ctx context.Context) (*mgclient.Client, error) {
		var t transport.Interface
		if cfg.url != "" {
			h, err := transport.NewStreamableHTTP(cfg.url)
			if err != nil {
				return nil, err
			}
			t = h
		} else {
			t = transport.NewStdioWithOptions(cfg.command[0], nil, cfg.command[1:], transport.WithCommandStderrWriter(stderr))
		}
		mc := mgclient.NewClient(mcpgo.Transport(t))
		// The child lives as long as the client, not the call that started
		// it.
		if err := mc.Start(context.WithoutCancel(ctx)); err != nil {
			return nil, err
		}
		init := mgmcp.InitializeRequest{}
		init.Params.ProtocolVersion = mgmcp.LATEST_LEGACY_PROTOCOL_VERSION
		init.Params.ClientInfo = mgmcp.Implementation{Name: "kill-suite-agent-mcpgo", Version: "v1"}
		if _, err := mc.Initialize(ctx, init); err != nil {
			return nil, errors.Join(err, mc.Close())
		}
		return mc, nil
	}
}

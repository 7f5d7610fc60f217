// Package orders is the test world of package mcpgo: one create_order
// tool with a side effect that is counted, served by a go-sdk server (with
// package server's guard or without) or by an mcp-go server (with
// package mcpgo's guard or without), in process or as a child process
// (ordersd).
package orders

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"sync"
	"sync/atomic"

	gomcp "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mark3labs/mcp-go/mcp"
	mgserver "github.com/mark3labs/mcp-go/server"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/mcpgo"
	"github.com/mcpledger/mcpledger/server"
)

// Tool is the name of the counted tool.
const Tool = "create_order"

// Counter counts executions of the tool: in memory, and, when File is
// set, one line per execution appended to File (so executions by child
// processes that come and go add up).
type Counter struct {
	File string
	n    atomic.Int64
	mu   sync.Mutex // guards writes to File
}

// Add counts one execution and returns the in-memory count.
func (c *Counter) Add() (int64, error) {
	n := c.n.Add(1)
	if c.File == "" {
		return n, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	f, err := os.OpenFile(c.File, os.O_APPEND|os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return n, err
	}
	if _, err := f.WriteString("run\n"); err != nil {
		_ = f.Close() // the write's error is the one to report
		return n, err
	}
	return n, f.Close()
}

// Runs is the in-memory count.
func (c *Counter) Runs() int64 { return c.n.Load() }

// FileRuns counts the executions recorded in file (0 when it is absent).
func FileRuns(file string) (int64, error) {
	b, err := os.ReadFile(file)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return int64(bytes.Count(b, []byte("\n"))), nil
}

func text(item string, run int64) string {
	return fmt.Sprintf("ord-%s (run %d)", item, run)
}

type orderIn struct {
	Item string `json:"item"`
	Qty  int    `json:"qty"`
}

// GoSDK is a go-sdk server with create_order, guarded by package server
// when store is not nil.
func GoSDK(store ledger.Store, c *Counter) *gomcp.Server {
	s := gomcp.NewServer(&gomcp.Implementation{Name: "orders-gosdk", Version: "v1"}, nil)
	gomcp.AddTool(s, &gomcp.Tool{Name: Tool}, func(ctx context.Context, _ *gomcp.CallToolRequest, in orderIn) (*gomcp.CallToolResult, any, error) {
		n, err := c.Add()
		if err != nil {
			return nil, nil, err
		}
		return &gomcp.CallToolResult{Content: []gomcp.Content{&gomcp.TextContent{Text: text(in.Item, n)}}}, nil, nil
	})
	if store != nil {
		s.AddReceivingMiddleware(server.New(store, &server.Options{}).Middleware())
	}
	return s
}

// MCPGo is an mcp-go server with create_order, guarded by package mcpgo
// when store is not nil (the Guard is nil otherwise).
func MCPGo(store ledger.Store, c *Counter) (*mgserver.MCPServer, *mcpgo.Guard) {
	var (
		g    *mcpgo.Guard
		opts []mgserver.ServerOption
	)
	if store != nil {
		g = mcpgo.NewGuard(store, nil)
		opts = g.ServerOptions()
	}
	s := mgserver.NewMCPServer("orders-mcpgo", "v1", opts...)
	s.AddTool(mcp.NewTool(Tool, mcp.WithString("item"), mcp.WithNumber("qty")),
		func(ctx context.Context, req mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			n, err := c.Add()
			if err != nil {
				return nil, err
			}
			return mcp.NewToolResultText(text(req.GetString("item", ""), n)), nil
		})
	return s, g
}

// DropWriter writes to W until a create_order result is about to be
// written while the file Drop exists: then it removes Drop and ends the
// process before the write, so the call ran and its response is lost.
type DropWriter struct {
	W    io.Writer
	Drop string
}

func (d *DropWriter) Write(p []byte) (int, error) {
	if d.Drop != "" && bytes.Contains(p, []byte("ord-")) && os.Remove(d.Drop) == nil {
		os.Exit(3)
	}
	return d.W.Write(p)
}

// Close is a no-op: the process's stdout stays open.
func (d *DropWriter) Close() error { return nil }

package client

import (
	"errors"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/retry"
)

// Neutral returns err, the failure of a go-sdk session call, with what it
// says in package retry's terms attached (retry.Wrap): each *jsonrpc.Error
// in it as a *retry.RPCError, and go-sdk's mcp.ErrConnectionClosed and
// mcp.ErrSessionMissing as retry.ErrConnectionClosed and
// retry.ErrSessionMissing. The Client does this for every attempt; call it
// to classify the error of a bare session:
//
//	_, err := session.CallTool(ctx, params)
//	if retry.Classify(client.Neutral(err)) == retry.Transient { ... }
//
// err's message and chain are kept, so errors.As still finds the
// *jsonrpc.Error. An error that is neutral already is returned as it is.
func Neutral(err error) error {
	if err == nil || errors.As(err, new(*retry.RPCError)) ||
		errors.Is(err, retry.ErrConnectionClosed) || errors.Is(err, retry.ErrSessionMissing) {
		return err
	}
	var facts []error
	visit(err, func(e error) {
		if je, ok := e.(*jsonrpc.Error); ok && je != nil {
			facts = append(facts, &retry.RPCError{Code: je.Code, Message: je.Message, Data: je.Data})
		}
	})
	if errors.Is(err, mcp.ErrConnectionClosed) {
		facts = append(facts, retry.ErrConnectionClosed)
	}
	if errors.Is(err, mcp.ErrSessionMissing) {
		facts = append(facts, retry.ErrSessionMissing)
	}
	return retry.Wrap(err, facts...)
}

// visit calls f for err and every error it wraps, depth first, outermost
// first: the order errors.As looks in.
func visit(err error, f func(error)) {
	for err != nil {
		f(err)
		switch u := err.(type) {
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				visit(c, f)
			}
			return
		case interface{ Unwrap() error }:
			err = u.Unwrap()
		default:
			return
		}
	}
}

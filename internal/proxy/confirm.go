package proxy

import (
	"context"
	"errors"
	"fmt"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcpledger/mcpledger/confirm"
	"github.com/mcpledger/mcpledger/confirm/elicit"
)

type requestKey struct{}

// withRequest carries the host's tools/call to the confirmer: an
// elicitation must go to the host session that made the call.
func withRequest(ctx context.Context, req *mcp.CallToolRequest) context.Context {
	return context.WithValue(ctx, requestKey{}, req)
}

func requestFrom(ctx context.Context) *mcp.CallToolRequest {
	req, _ := ctx.Value(requestKey{}).(*mcp.CallToolRequest)
	return req
}

// hostConfirmer asks the host through elicitation when it can answer one,
// else the terminal, else no one (the client then records the call
// REJECTED: nothing ran, and no one said no).
type hostConfirmer struct {
	terminal   confirm.Confirmer
	policyFile string
}

func (h *hostConfirmer) Confirm(ctx context.Context, req confirm.Request) (confirm.Answer, error) {
	var host confirm.Confirmer
	if r := requestFrom(ctx); r != nil {
		host = elicit.For(r)
	}
	a, err := confirm.Chain(host, h.terminal).Confirm(ctx, req)
	if errors.Is(err, confirm.ErrNoConfirmer) {
		return a, &noConfirmerError{tool: req.Tool, policyFile: h.policyFile}
	}
	return a, err
}

// noConfirmerError is confirm.ErrNoConfirmer with the proxy's way out: the
// proxy has no --yes, so the message names the policy file. It becomes
// the denial's reason, which the model reads.
type noConfirmerError struct {
	tool, policyFile string
}

func (e *noConfirmerError) Error() string {
	where := "a policy file passed with --policy"
	if e.policyFile != "" {
		where = "the policy file " + e.policyFile
	}
	return fmt.Sprintf("no one to ask: the host cannot answer elicitations and there is no terminal; allow %s in %s to let it through the proxy",
		e.tool, where)
}

func (e *noConfirmerError) Is(target error) bool { return target == confirm.ErrNoConfirmer }

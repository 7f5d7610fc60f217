package caller

import (
	"errors"

	"github.com/mcpledger/mcpledger/ledger"
	"github.com/mcpledger/mcpledger/wire"
)

// upstreamState is the state an upstream ledger (agentctl proxy) named on
// an error result instead of the tool's answer (_meta MetaError), if any.
func (c *Caller[P, R]) upstreamState(res R) (ledger.State, bool) {
	var zero R
	if res == zero || !c.codec.IsError(res) {
		return "", false
	}
	m, ok := c.codec.Meta(res)[wire.MetaError].(map[string]any)
	if !ok {
		return "", false
	}
	s, ok := m["state"].(string)
	if !ok || s == "" {
		return "", false
	}
	return ledger.State(s), true
}

// upstreamSaid is the error of a call whose upstream ledger answered with
// its record's state: the text it gave, which says what happened there.
func (c *Caller[P, R]) upstreamSaid(res R) error {
	st, _ := c.upstreamState(res)
	text := ledger.OneLine(c.codec.Text(res), 500)
	if text == "" {
		text = "the upstream ledger answered " + string(st)
	}
	return errors.New("upstream: " + text)
}

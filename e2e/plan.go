package e2e

import (
	"fmt"
	"math/rand/v2"
	"time"
)

// victim is the process an iteration kills.
type victim int

const (
	victimAgent victim = iota
	victimProxy
	victimPayments
	victims
)

func (v victim) String() string {
	switch v {
	case victimAgent:
		return "agent"
	case victimProxy:
		return "proxy"
	case victimPayments:
		return "payments"
	}
	return fmt.Sprintf("victim(%d)", int(v))
}

// plan is one iteration of the kill suite, drawn from the seeded RNG so
// that a failing seed replays the same choices.
type plan struct {
	N int
	// AgentHTTP: the agent reaches the proxy over HTTP (--listen), else it
	// starts the proxy as its stdio child.
	AgentHTTP bool
	// UpstreamHTTP: the proxy reaches payments over HTTP (--url), else it
	// starts payments as its stdio child.
	UpstreamHTTP bool
	// AgentSDK is the agent's MCP SDK: "gosdk" (package client) or, every
	// other iteration, "mcpgo" (package mcpgo). It follows N, not the RNG,
	// so a seed drawn before it existed replays the same other choices.
	AgentSDK string
	// WriteBehind: the agent and the proxy write each call's outcome
	// behind (ledger.WriteBehind; agentctl --durability write-behind),
	// every third iteration. Like AgentSDK it follows N.
	WriteBehind bool
	Victim      victim
	// Fault, when set, is the payments fault point that kills the server
	// (PAYMENTS_FAULT point=kill); only with UpstreamHTTP, where the suite
	// starts payments and can restart it without the fault.
	Fault string
	// When Fault is empty, the victim is killed Delay after the agent
	// issued Keys[After]: timed from the agent's own progress, the kill
	// lands inside the run however fast the machine is.
	After int
	Delay time.Duration
	Keys  []string
}

// agentSDKs are the SDKs the agent runs on (its -sdk flag).
var agentSDKs = []string{"gosdk", "mcpgo"}

// writeBehindEvery: one iteration in so many runs with write-behind.
const writeBehindEvery = 3

// durability is the -durability value of the agent and the proxy of p.
func (p plan) durability() string {
	if p.WriteBehind {
		return "write-behind"
	}
	return "durable"
}

// faultPoints are the payments fault hooks an iteration may kill at.
var faultPoints = []string{"handler", "handler-committed", "deliver-applied"}

// makePlans draws n iterations. window bounds the random kill delay; tag
// makes the keys of one run unique in ledgers that outlive it (a shared
// PostgreSQL schema, say).
func makePlans(seed uint64, n int, window time.Duration, tag string) []plan {
	rng := rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
	plans := make([]plan, n)
	for i := range plans {
		p := plan{
			N:            i,
			AgentHTTP:    rng.IntN(2) == 0,
			UpstreamHTTP: rng.IntN(2) == 0,
			AgentSDK:     agentSDKs[i%len(agentSDKs)],
			WriteBehind:  i%writeBehindEvery == writeBehindEvery-1,
			Victim:       victim(rng.IntN(int(victims))),
		}
		// A third of the payments kills over HTTP land on a fault hook:
		// the exact points where a crash is most likely to double-pay.
		keys := 2 + rng.IntN(3)
		if p.Victim == victimPayments && p.UpstreamHTTP && rng.IntN(3) == 0 {
			p.Fault = faultPoints[rng.IntN(len(faultPoints))]
		} else {
			p.After = rng.IntN(keys)
			p.Delay = time.Duration(rng.Int64N(int64(window)))
		}
		for k := range keys {
			p.Keys = append(p.Keys, fmt.Sprintf("kill.%s.i%03d.k%d", tag, i, k))
		}
		plans[i] = p
	}
	return plans
}

func (p plan) String() string {
	hop := func(http bool) string {
		if http {
			return "http"
		}
		return "stdio"
	}
	at := fmt.Sprintf("%v after key %d", p.Delay.Round(time.Millisecond), p.After)
	if p.Fault != "" {
		at = "fault " + p.Fault
	}
	agent := "agent"
	if p.AgentSDK == "mcpgo" {
		agent = "mcpgo-agent"
	}
	mode := ""
	if p.WriteBehind {
		mode = " (write-behind)"
	}
	return fmt.Sprintf("#%03d %s-%s->proxy-%s->payments%s kill %s at %s, %d keys",
		p.N, agent, hop(p.AgentHTTP), hop(p.UpstreamHTTP), mode, p.Victim, at, len(p.Keys))
}

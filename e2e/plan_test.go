package e2e

import (
	"fmt"
	"reflect"
	"testing"
	"time"
)

func Example() {
	// The suite draws every iteration from one seed, printed at the start
	// of a run; MCPLEDGER_KILL_SEED replays it.
	for _, p := range makePlans(7, 4, killWindow, "doc") {
		fmt.Println(p)
	}
	// Output:
	// #000 agent-http->proxy-http->payments kill proxy at 20ms after key 1, 4 keys
	// #001 mcpgo-agent-http->proxy-http->payments kill payments at 11ms after key 0, 3 keys
	// #002 agent-stdio->proxy-stdio->payments (write-behind) kill agent at 6ms after key 2, 3 keys
	// #003 mcpgo-agent-http->proxy-http->payments kill payments at 11ms after key 1, 2 keys
}

func TestMakePlans(t *testing.T) {
	const n = 400
	a := makePlans(42, n, 40*time.Millisecond, "x")
	if b := makePlans(42, n, 40*time.Millisecond, "x"); !reflect.DeepEqual(a, b) {
		t.Fatalf("makePlans(42) differs between two calls; want the same plans for the same seed")
	}
	seen := map[string]bool{}
	var topologies [2][2]int
	var kills [victims]int
	// Write-behind iterations by victim and by agent SDK.
	var behind [victims]int
	var behindSDK [2]int
	faults := 0
	for _, p := range a {
		topologies[b2i(p.AgentHTTP)][b2i(p.UpstreamHTTP)]++
		kills[p.Victim]++
		if p.WriteBehind {
			behind[p.Victim]++
			behindSDK[b2i(p.AgentSDK == "mcpgo")]++
		}
		if p.Fault != "" {
			faults++
			if p.Victim != victimPayments || !p.UpstreamHTTP || p.Delay != 0 {
				t.Errorf("plan %v: a fault hook kills only payments over HTTP", p)
			}
		}
		if p.Delay < 0 || p.Delay >= 40*time.Millisecond {
			t.Errorf("plan %v: delay %v outside [0, 40ms)", p, p.Delay)
		}
		if p.After < 0 || p.After >= len(p.Keys) {
			t.Errorf("plan %v: kill after key %d of %d", p, p.After, len(p.Keys))
		}
		if len(p.Keys) < 2 || len(p.Keys) > 4 {
			t.Errorf("plan %v: %d keys; want 2 to 4", p, len(p.Keys))
		}
		for _, k := range p.Keys {
			if seen[k] {
				t.Errorf("key %s drawn twice", k)
			}
			seen[k] = true
		}
	}
	// Every combination is exercised in a run of this length.
	for i := range topologies {
		for j := range topologies[i] {
			if topologies[i][j] == 0 {
				t.Errorf("no plan with agent-http=%v upstream-http=%v in %d", i == 1, j == 1, n)
			}
		}
	}
	for v, k := range kills {
		if k == 0 {
			t.Errorf("no plan kills %v in %d", victim(v), n)
		}
	}
	if faults == 0 {
		t.Errorf("no plan kills at a fault hook in %d", n)
	}
	for v, k := range behind {
		if k == 0 {
			t.Errorf("no write-behind plan kills %v in %d", victim(v), n)
		}
	}
	if behindSDK[0] == 0 || behindSDK[1] == 0 {
		t.Errorf("write-behind plans by SDK (gosdk, mcpgo) = %v in %d; want both", behindSDK, n)
	}
	if got, want := behind[0]+behind[1]+behind[2], n/writeBehindEvery; got < want-1 || got > want+1 {
		t.Errorf("%d write-behind plans in %d; want about %d", got, n, want)
	}
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

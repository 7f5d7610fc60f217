package verify

import (
	"strings"
	"testing"

	"github.com/mcpledger/mcpledger/ledger"
)

func TestJudgeReplication(t *testing.T) {
	sb := func(name, sync string) ledger.Standby {
		return ledger.Standby{Name: name, State: "streaming", SyncState: sync}
	}
	for _, tc := range []struct {
		name string
		rep  ledger.Replication
		want Status
		says string
	}{
		{"single server", ledger.Replication{SynchronousCommit: "on"}, Pass, "single server"},
		{"single server, commits not flushed", ledger.Replication{SynchronousCommit: "off"}, Fail, "synchronous_commit = on"},
		{"sync standby", ledger.Replication{SynchronousCommit: "on", SynchronousStandbyNames: "node2", Standbys: []ledger.Standby{sb("node2", "sync")}}, Pass, "node2 sync"},
		{"quorum", ledger.Replication{SynchronousCommit: "remote_apply", SynchronousStandbyNames: "ANY 1 (a, b)", Standbys: []ledger.Standby{sb("a", "quorum"), sb("b", "quorum")}}, Pass, "a quorum"},
		{"async standby", ledger.Replication{SynchronousCommit: "on", Standbys: []ledger.Standby{sb("node2", "async")}}, Fail, "synchronous_mode: true"},
		{"named but only potential", ledger.Replication{SynchronousCommit: "on", SynchronousStandbyNames: "FIRST 1 (a, b)", Standbys: []ledger.Standby{sb("c", "potential")}}, Fail, "asynchronous"},
		{"sync standby, commits local", ledger.Replication{SynchronousCommit: "local", SynchronousStandbyNames: "node2", Standbys: []ledger.Standby{sb("node2", "sync")}}, Fail, "synchronous_commit = local"},
		{"sync and async standbys", ledger.Replication{SynchronousCommit: "on", SynchronousStandbyNames: "a", Standbys: []ledger.Standby{sb("a", "sync"), sb("b", "async")}}, Pass, "must never be promoted"},
		{"named standby absent", ledger.Replication{SynchronousCommit: "on", SynchronousStandbyNames: "node2"}, Fail, "none streams"},
		{"states hidden", ledger.Replication{SynchronousCommit: "on", Standbys: []ledger.Standby{{Name: "node2"}}}, Skip, "GRANT pg_monitor"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			o := judgeReplication(tc.rep)
			if o.status != tc.want || !strings.Contains(o.figure+" "+o.reason, tc.says) {
				t.Errorf("judgeReplication(%+v) = %+v; want %s saying %q", tc.rep, o, tc.want, tc.says)
			}
		})
	}
}

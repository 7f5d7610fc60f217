package verify

import (
	"context"
	"fmt"
	"strings"

	"github.com/mcpledger/mcpledger/ledger"
)

// syncRemedy is what makes a PostgreSQL ledger's commits outlive its primary.
const syncRemedy = "set synchronous_standby_names to the standbys (Patroni: synchronous_mode: true) and synchronous_commit = on, so that a claim is acknowledged only once a standby has it"

// ledgerDurability reads how the ledger's server keeps a commit through the
// loss of that server. With asynchronous standbys a failover can lose a
// claim the old primary acknowledged: the key is free again and the call
// runs twice.
func ledgerDurability(ctx context.Context, r *runner) outcome {
	rr, ok := ledger.Unwrap(r.t.Store).(ledger.ReplicationReporter)
	if !ok {
		return skip("the ledger is not on a database server (a SQLite file): no failover can lose its writes, its disk can")
	}
	rep, err := rr.Replication(ctx)
	if err != nil {
		return fail("", "%v", err)
	}
	return judgeReplication(rep)
}

// judgeReplication is ledgerDurability's verdict on what the server said.
func judgeReplication(rep ledger.Replication) outcome {
	figure := fmt.Sprintf("synchronous_commit=%s, synchronous_standby_names=%q, %s", rep.SynchronousCommit, rep.SynchronousStandbyNames, standbysText(rep.Standbys))
	switch rep.SynchronousCommit {
	case "off":
		return fail(figure, "synchronous_commit = off: an acknowledged claim can be lost in a crash of the server itself; set synchronous_commit = on")
	}
	if len(rep.Standbys) == 0 {
		if rep.SynchronousStandbyNames != "" {
			return fail(figure, "synchronous_standby_names names standbys but none streams: every commit waits for one; start the standby, or let Patroni drop it from the list")
		}
		return pass("%s; a single server: no failover to lose a commit to (a standby added later must be synchronous)", figure)
	}
	var sync, async, hidden []string
	for _, s := range rep.Standbys {
		switch s.SyncState {
		case "sync", "quorum":
			sync = append(sync, s.Name)
		case "":
			hidden = append(hidden, s.Name)
		default: // async, potential
			async = append(async, s.Name)
		}
	}
	if len(hidden) > 0 {
		return skip("%s; the ledger's role may not read the standbys' sync_state: GRANT pg_monitor TO it and run verify again", figure)
	}
	if rep.SynchronousStandbyNames == "" || len(sync) == 0 {
		return fail(figure, "the standbys %s are asynchronous: a failover can lose claims the primary acknowledged, and their keys then run twice; %s", strings.Join(async, ", "), syncRemedy)
	}
	if rep.SynchronousCommit == "local" {
		return fail(figure, "synchronous_commit = local: commits do not wait for the synchronous standby %s; set synchronous_commit = on", strings.Join(sync, ", "))
	}
	if len(async) > 0 {
		return pass("%s; the asynchronous standbys %s must never be promoted (Patroni promotes only a synchronous one in synchronous_mode)", figure, strings.Join(async, ", "))
	}
	return pass("%s", figure)
}

func standbysText(ss []ledger.Standby) string {
	if len(ss) == 0 {
		return "no standby"
	}
	parts := make([]string, len(ss))
	for i, s := range ss {
		st := s.SyncState
		if st == "" {
			st = "state hidden"
		}
		parts[i] = s.Name + " " + st
	}
	return "standbys: " + strings.Join(parts, ", ")
}

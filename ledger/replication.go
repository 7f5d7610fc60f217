package ledger

import "context"

// Replication is what a shared store's server says about how a commit
// outlives the loss of that server: whether commits wait for a standby,
// and the standbys it streams to now. agentctl verify reads it (the ledger
// durability guarantee): with asynchronous standbys a failover can lose an
// acknowledged claim, and the key then runs twice.
type Replication struct {
	// SynchronousCommit is the server's synchronous_commit for the store's
	// sessions (on, remote_apply, remote_write, local, off).
	SynchronousCommit string `json:"synchronousCommit"`
	// SynchronousStandbyNames is the server's synchronous_standby_names;
	// empty: no commit waits for a standby.
	SynchronousStandbyNames string `json:"synchronousStandbyNames"`
	// Standbys are the standbys streaming from the server now.
	Standbys []Standby `json:"standbys"`
}

// Standby is one row of the server's pg_stat_replication.
type Standby struct {
	Name string `json:"name"`
	// State is the WAL sender's state (streaming, catchup, ...); SyncState
	// is sync, quorum, potential or async. Both are empty when the
	// store's role may not read them (it lacks pg_monitor).
	State     string `json:"state"`
	SyncState string `json:"syncState"`
}

// ReplicationReporter is a store whose server can report its replication
// (the PostgreSQL store). Callers find it with a type assertion on
// Unwrap(store).
type ReplicationReporter interface {
	Replication(ctx context.Context) (Replication, error)
}

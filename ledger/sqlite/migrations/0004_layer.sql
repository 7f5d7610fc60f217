-- Every record names its layer: whose record it is (a client, a proxy, a
-- server guard). A client and a server guard that share one ledger file
-- each keep their own record of one key, so the identity becomes
-- (tenant, layer, tool, key). SQLite cannot change a UNIQUE constraint in
-- place, so the table is rebuilt; rows keep their ids.
--
-- Records written before layers get one from their owner: the server
-- guard labels its owners server-… (mcpgo-server-… for the mcp-go guard);
-- every other record was written by a client (agentctl call and proxy
-- alike).
CREATE TABLE records_new (
	id            INTEGER PRIMARY KEY,
	tenant        TEXT    NOT NULL,
	layer         TEXT    NOT NULL DEFAULT '',
	tool          TEXT    NOT NULL,
	key           TEXT    NOT NULL,
	session       TEXT    NOT NULL DEFAULT '',
	fingerprint   TEXT    NOT NULL,
	arguments     BLOB,
	state         TEXT    NOT NULL CHECK (state IN ('PENDING_APPROVAL', 'PROCESSING', 'SUCCEEDED', 'FAILED', 'RETRYABLE', 'REJECTED', 'UNKNOWN', 'DENIED')),
	attempts      INTEGER NOT NULL DEFAULT 0,
	fence         INTEGER NOT NULL DEFAULT 1 CHECK (fence > 0),
	result        BLOB,
	compacted     INTEGER NOT NULL DEFAULT 0,
	error_kind    TEXT    NOT NULL DEFAULT '',
	error_message TEXT    NOT NULL DEFAULT '',
	owner         TEXT    NOT NULL DEFAULT '',
	lease_until   INTEGER NOT NULL DEFAULT 0,
	approval      TEXT,
	trace_id      TEXT    NOT NULL DEFAULT '',
	span_id       TEXT    NOT NULL DEFAULT '',
	reuse_policy  TEXT    NOT NULL DEFAULT 'reexecute',
	tombstone     INTEGER NOT NULL DEFAULT 0,
	created_at    INTEGER NOT NULL,
	updated_at    INTEGER NOT NULL,
	expires_at    INTEGER NOT NULL,
	UNIQUE (tenant, layer, tool, key)
);

INSERT INTO records_new (id, tenant, layer, tool, key, session, fingerprint,
	arguments, state, attempts, fence, result, compacted, error_kind,
	error_message, owner, lease_until, approval, trace_id, span_id,
	reuse_policy, tombstone, created_at, updated_at, expires_at)
SELECT id, tenant,
	CASE WHEN owner LIKE 'server-%' OR owner LIKE 'mcpgo-server-%' THEN 'server' ELSE 'client' END,
	tool, key, session, fingerprint,
	arguments, state, attempts, fence, result, compacted, error_kind,
	error_message, owner, lease_until, approval, trace_id, span_id,
	reuse_policy, tombstone, created_at, updated_at, expires_at
FROM records;

DROP TABLE records;
ALTER TABLE records_new RENAME TO records;

-- The indexes of 0001 to 0003, dropped with the old table. List orders by
-- (created_at, tool, key, layer); FindRecent reads one layer's window.
CREATE INDEX records_list ON records (tenant, created_at, tool, key, layer);
CREATE INDEX records_recent ON records (tenant, layer, session, tool, fingerprint, created_at);
CREATE INDEX records_expiry ON records (expires_at);
CREATE INDEX records_updated ON records (updated_at);
CREATE INDEX records_unknown ON records (tenant, updated_at) WHERE state = 'UNKNOWN';
CREATE INDEX records_lease ON records (lease_until) WHERE state IN ('PROCESSING', 'PENDING_APPROVAL');

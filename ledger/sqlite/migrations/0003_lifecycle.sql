-- REJECTED joins the states, PENDING_APPROVAL holds a lease like
-- PROCESSING, and every record carries a fencing token that grows at each
-- claim and take-over of its key. SQLite cannot change a CHECK constraint in
-- place, so the table is rebuilt; rows keep their ids. Existing records get
-- fence 1: the next claim or take-over of their key writes 2.
CREATE TABLE records_new (
	id            INTEGER PRIMARY KEY,
	tenant        TEXT    NOT NULL,
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
	UNIQUE (tenant, tool, key)
);

INSERT INTO records_new (id, tenant, tool, key, session, fingerprint, arguments,
	state, attempts, fence, result, compacted, error_kind, error_message, owner,
	lease_until, approval, trace_id, span_id, reuse_policy, tombstone,
	created_at, updated_at, expires_at)
SELECT id, tenant, tool, key, session, fingerprint, arguments,
	state, attempts, 1, result, compacted, error_kind, error_message, owner,
	lease_until, approval, trace_id, span_id, reuse_policy, tombstone,
	created_at, updated_at, expires_at
FROM records;

DROP TABLE records;
ALTER TABLE records_new RENAME TO records;

-- The indexes of 0001 and 0002, dropped with the old table.
CREATE INDEX records_list ON records (tenant, created_at, tool, key);
CREATE INDEX records_recent ON records (tenant, session, tool, fingerprint, created_at);
CREATE INDEX records_expiry ON records (expires_at);
CREATE INDEX records_updated ON records (updated_at);
CREATE INDEX records_unknown ON records (tenant, updated_at) WHERE state = 'UNKNOWN';

-- ExpireLeases scans only leased records. A PENDING_APPROVAL record written
-- before leases existed has lease_until 0: the first sweep rejects it
-- (nothing ran), which frees a key whose prompt died with its process.
CREATE INDEX records_lease ON records (lease_until) WHERE state IN ('PROCESSING', 'PENDING_APPROVAL');

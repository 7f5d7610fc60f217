-- One row per operation, identified by (tenant, tool, key).
--
-- Times are Unix nanoseconds (UTC); 0 stands for "not set". Arguments and
-- results are stored as BLOBs so they round-trip byte for byte.
CREATE TABLE records (
	id            INTEGER PRIMARY KEY,
	tenant        TEXT    NOT NULL,
	tool          TEXT    NOT NULL,
	key           TEXT    NOT NULL,
	session       TEXT    NOT NULL DEFAULT '',
	fingerprint   TEXT    NOT NULL,
	arguments     BLOB,
	state         TEXT    NOT NULL CHECK (state IN ('PENDING_APPROVAL', 'PROCESSING', 'SUCCEEDED', 'FAILED', 'RETRYABLE', 'UNKNOWN', 'DENIED')),
	attempts      INTEGER NOT NULL DEFAULT 0,
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

-- List: a tenant's records newest first, (created_at, tool, key) descending.
CREATE INDEX records_list ON records (tenant, created_at, tool, key);

-- FindRecent: the re-planning window of one (tenant, session, tool, fingerprint).
CREATE INDEX records_recent ON records (tenant, session, tool, fingerprint, created_at);

-- ExpireLeases scans only PROCESSING records.
CREATE INDEX records_lease ON records (lease_until) WHERE state = 'PROCESSING';

-- Purge scans by retention.
CREATE INDEX records_expiry ON records (expires_at);
CREATE INDEX records_updated ON records (updated_at);

-- One row per finished call and side: what "agentctl ledger stats" counts
-- for a period, since metrics live only as long as their process. No key
-- and no arguments: events are statistics, not records.
--
-- at is Unix nanoseconds (UTC) from the writer's clock; latency_ns is the
-- call's duration.
CREATE TABLE events (
	id         INTEGER PRIMARY KEY,
	tenant     TEXT    NOT NULL,
	tool       TEXT    NOT NULL,
	side       TEXT    NOT NULL CHECK (side IN ('client', 'server')),
	outcome    TEXT    NOT NULL,
	duplicate  INTEGER NOT NULL DEFAULT 0,
	waited     INTEGER NOT NULL DEFAULT 0,
	attempts   INTEGER NOT NULL DEFAULT 0,
	latency_ns INTEGER NOT NULL DEFAULT 0,
	at         INTEGER NOT NULL
);

-- Stats: one tenant's period.
CREATE INDEX events_period ON events (tenant, at);

-- PurgeEvents: by age alone.
CREATE INDEX events_at ON events (at);

-- Stats counts UNKNOWN records by when they turned UNKNOWN.
CREATE INDEX records_unknown ON records (tenant, updated_at) WHERE state = 'UNKNOWN';

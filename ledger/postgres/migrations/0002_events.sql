-- One row per finished call and side: what "agentctl ledger stats" counts
-- for a period, since metrics live only as long as their process. No key
-- and no arguments: events are statistics, not records.
CREATE TABLE events (
    id          bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    tenant      text COLLATE "C" NOT NULL,
    tool        text NOT NULL,
    side        text NOT NULL CHECK (side IN ('client', 'server')),
    outcome     text NOT NULL,
    duplicate   boolean NOT NULL DEFAULT false,
    waited      boolean NOT NULL DEFAULT false,
    attempts    integer NOT NULL DEFAULT 0,
    -- The call's duration in nanoseconds.
    latency_ns  bigint NOT NULL DEFAULT 0,
    -- The writer's clock, like every time in the ledger.
    at          timestamptz NOT NULL
);

-- Stats: one tenant's period.
CREATE INDEX events_period ON events (tenant, at);
-- PurgeEvents: by age alone.
CREATE INDEX events_at ON events (at);
-- Stats counts UNKNOWN records by when they turned UNKNOWN.
CREATE INDEX records_unknown ON records (tenant, updated_at) WHERE state = 'UNKNOWN';

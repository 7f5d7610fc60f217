-- Records of tool-call operations. (tenant, tool, key) is the identity the
-- whole ledger rests on: the primary key is the unique constraint that decides
-- every claim race. Identity columns use the "C" collation so List orders by
-- bytes, the same on every server and every Store.
CREATE TABLE records (
    tenant            text COLLATE "C" NOT NULL,
    tool              text COLLATE "C" NOT NULL,
    key               text COLLATE "C" NOT NULL,
    session           text NOT NULL DEFAULT '',
    fingerprint       text NOT NULL,
    -- bytea, not jsonb: arguments and results come back byte for byte.
    arguments         bytea,
    state             text NOT NULL CHECK (state IN ('PENDING_APPROVAL', 'PROCESSING',
                          'SUCCEEDED', 'FAILED', 'RETRYABLE', 'UNKNOWN', 'DENIED')),
    attempts          integer NOT NULL DEFAULT 0,
    result            bytea,
    compacted         boolean NOT NULL DEFAULT false,
    error_kind        text NOT NULL DEFAULT '',
    error_message     text NOT NULL DEFAULT '',
    owner             text NOT NULL DEFAULT '',
    lease_until       timestamptz,
    -- ledger.Approval as JSON: decision, by, at, reason.
    approval          jsonb,
    trace_id          text NOT NULL DEFAULT '',
    span_id           text NOT NULL DEFAULT '',
    reuse_policy      text NOT NULL DEFAULT 'reexecute',
    tombstone         boolean NOT NULL DEFAULT false,
    -- Random token of the last write. When a connection dies after a write
    -- was sent, the writer reads it back to learn whether its write committed.
    op_token          bytea,
    -- A follower in another process waits for this record: its writer
    -- sends a notification when the record settles. Without followers
    -- elsewhere no notification is sent, which keeps NOTIFY's commit-time
    -- lock off the common path.
    watched           boolean NOT NULL DEFAULT false,
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    expires_at        timestamptz NOT NULL,
    PRIMARY KEY (tenant, tool, key)
);

-- List: newest first with a (created_at, tool, key) cursor.
CREATE INDEX records_list ON records (tenant, created_at DESC, tool DESC, key DESC);
-- FindRecent: the re-planning window.
CREATE INDEX records_recent ON records (tenant, session, tool, fingerprint, created_at DESC);
-- ExpireLeases scans only live leases.
CREATE INDEX records_lease ON records (lease_until) WHERE state = 'PROCESSING';
-- Purge scans only settled records.
CREATE INDEX records_expiry ON records (expires_at)
    WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE');
CREATE INDEX records_updated ON records (updated_at)
    WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE');

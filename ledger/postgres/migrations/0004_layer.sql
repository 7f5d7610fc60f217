-- Every record names its layer: whose record it is (a client, a proxy, a
-- server guard). A client and a server guard that share one ledger each
-- keep their own record of one key, so the identity becomes
-- (tenant, layer, tool, key), and the primary key with it. The layer is an
-- identity column, in the "C" collation like the others.
--
-- Records written before layers get one from their owner: the server
-- guard labels its owners server-… (mcpgo-server-… for the mcp-go guard);
-- every other record was written by a client (agentctl call and a proxy's
-- client alike). Most records are a client's, so the column is added with
-- the constant default 'client', which labels every existing row without
-- rewriting the table; only the server guard's rows are then updated, and
-- new records default to the empty layer, the one a ledger used by a
-- single layer may keep.
ALTER TABLE records ADD COLUMN layer text COLLATE "C" NOT NULL DEFAULT 'client';
ALTER TABLE records ALTER COLUMN layer SET DEFAULT '';
UPDATE records SET layer = 'server' WHERE owner LIKE 'server-%' OR owner LIKE 'mcpgo-server-%';

-- The primary key is the unique constraint that decides every claim race:
-- one record per (tenant, layer, tool, key).
ALTER TABLE records DROP CONSTRAINT records_pkey,
    ADD PRIMARY KEY (tenant, layer, tool, key);

-- List: newest first with a (created_at, tool, key, layer) cursor, so two
-- layers' records of one key each get a page position of their own.
DROP INDEX records_list;
CREATE INDEX records_list ON records (tenant, created_at DESC, tool DESC, key DESC, layer DESC);
-- FindRecent: the re-planning window of one layer.
DROP INDEX records_recent;
CREATE INDEX records_recent ON records (tenant, layer, session, tool, fingerprint, created_at DESC);

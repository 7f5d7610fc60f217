-- Reconciliation (DESIGN.md, "Reconciliation"): how an UNKNOWN record was
-- settled, its history of findings, and when its next background attempt
-- is due. reconciled is the finding that settled the record and findings
-- the latest findings, each a ledger.Resolution as JSON; finding_count
-- counts every finding ever recorded (a finding is a compare-and-set on it).
-- reconcile_at is when the next attempt is due: the Unix epoch, at once,
-- until an inconclusive finding sets it, so that "due" is one range of
-- the index. Constant defaults add the columns without rewriting the table.
ALTER TABLE records ADD COLUMN reconciled jsonb,
    ADD COLUMN findings jsonb,
    ADD COLUMN finding_count integer NOT NULL DEFAULT 0,
    ADD COLUMN reconcile_at timestamptz NOT NULL DEFAULT '1970-01-01 00:00:00+00';

-- The UNKNOWN records due for a reconciliation, earliest due first, then
-- those UNKNOWN longest: of one tenant, and of every tenant (a sweep).
CREATE INDEX records_reconcile ON records (tenant, reconcile_at, updated_at) WHERE state = 'UNKNOWN';
CREATE INDEX records_reconcile_all ON records (reconcile_at, updated_at) WHERE state = 'UNKNOWN';

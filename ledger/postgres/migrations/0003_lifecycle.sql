-- REJECTED joins the states, PENDING_APPROVAL holds a lease like
-- PROCESSING, and every record carries a fencing token that grows at each
-- claim and take-over of its key. Existing records get fence 1: the next
-- claim or take-over of their key writes 2. A constant default adds the
-- column without rewriting the table.
ALTER TABLE records ADD COLUMN fence bigint NOT NULL DEFAULT 1 CHECK (fence > 0);

ALTER TABLE records DROP CONSTRAINT records_state_check;
ALTER TABLE records ADD CONSTRAINT records_state_check CHECK (state IN ('PENDING_APPROVAL', 'PROCESSING',
    'SUCCEEDED', 'FAILED', 'RETRYABLE', 'REJECTED', 'UNKNOWN', 'DENIED'));

-- ExpireLeases scans only leased records. A PENDING_APPROVAL record written
-- before leases existed gets a lease that has already ended: the first
-- sweep rejects it (nothing ran), which frees a key whose prompt died with
-- its process.
UPDATE records SET lease_until = updated_at WHERE state = 'PENDING_APPROVAL' AND lease_until IS NULL;
DROP INDEX records_lease;
CREATE INDEX records_lease ON records (lease_until) WHERE state IN ('PROCESSING', 'PENDING_APPROVAL');

-- Purge scans only settled records, REJECTED among them.
DROP INDEX records_expiry;
CREATE INDEX records_expiry ON records (expires_at)
    WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED');
DROP INDEX records_updated;
CREATE INDEX records_updated ON records (updated_at)
    WHERE state IN ('SUCCEEDED', 'FAILED', 'DENIED', 'RETRYABLE', 'REJECTED');

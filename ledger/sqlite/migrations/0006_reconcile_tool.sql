-- The UNKNOWN records due for a reconciliation, per tool: a sweep that
-- names the tools it can reconcile (ledger.DueQuery.Tools) reads one range
-- of these per tool, in (reconcile_at, updated_at) order, so that UNKNOWN
-- records of other tools never fill its list.
CREATE INDEX records_reconcile_tool ON records (tenant, tool, reconcile_at, updated_at) WHERE state = 'UNKNOWN';
CREATE INDEX records_reconcile_tool_all ON records (tool, reconcile_at, updated_at) WHERE state = 'UNKNOWN';

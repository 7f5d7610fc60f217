-- A lookup by key alone (agentctl ledger show KEY, reconcile, approve,
-- deny, the model's ledger_status): a person usually knows only the key,
-- and the unique (tenant, layer, tool, key) cannot serve a lookup without
-- the layer and the tool. Past the key the index runs in List's order
-- (created_at, tool, layer), so the records of one key come out sorted.
CREATE INDEX records_key ON records (tenant, key, created_at, tool, layer);

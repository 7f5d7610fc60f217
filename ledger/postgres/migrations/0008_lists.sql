-- The lists a person and the model page through (agentctl ledger list, the
-- console's pages, ledger_list): by state (the approval queue and the
-- UNKNOWN list), by session (of any layer) and by tool. Each runs in
-- List's order past its column, so a page of 50 reads 50 index entries
-- however many records the tenant has, instead of walking records_list
-- past every record of another state, session or tool.
CREATE INDEX records_state ON records (tenant, state, created_at DESC, tool DESC, key DESC, layer DESC);
CREATE INDEX records_session ON records (tenant, session, created_at DESC, tool DESC, key DESC, layer DESC);
CREATE INDEX records_tool ON records (tenant, tool, created_at DESC, key DESC, layer DESC);

-- SQLite's migration 10 puts new ledger entries in a table without a
-- per-user index and moves them into the indexed one in batches, behind a
-- `wallet_ledger` view. PostgreSQL's WAL logs the changed tuples rather than
-- the pages an insert dirties, so its one table stays. This version keeps
-- the dialects in step.

SELECT 1;

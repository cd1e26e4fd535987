-- SQLite's migration 9 drops the entry id from its ledger's per-user index,
-- whose mid-tree inserts were most of the pages its WAL took per wallet
-- update. PostgreSQL's index keeps (user_id, create_time, id): its entries
-- are 16-byte uuids, not 36-character text, and its WAL logs the changed
-- tuple, not the page. This version keeps the dialects in step.

SELECT 1;

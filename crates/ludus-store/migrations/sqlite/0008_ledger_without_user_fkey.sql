-- PostgreSQL's migration 8 drops the wallet ledger's foreign key to `users`,
-- whose check cost PostgreSQL a query per ledger row. SQLite's check is a
-- look-up in the writer's own page cache and keeps its cascade; this version
-- keeps the dialects in step.

SELECT 1;

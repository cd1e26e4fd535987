-- SQLite's migration 11 drops the foreign key of its two ledger tables and
-- deletes a deleted account's entries by a trigger, so that the writer's
-- move of new entries needs no look-up of the account per entry.
-- PostgreSQL's ledger has had no foreign key since its migration 8. This
-- version keeps the dialects in step.

SELECT 1;

-- The ledger's per-user index without the entry's id: (user_id,
-- create_time) and the rowid SQLite adds, about 50 bytes an entry instead
-- of about 85. Every wallet update with a ledger entry inserts into this
-- index inside its user's range, in the middle of the tree, so it is most
-- of the pages a commit writes to the WAL (about 44 of 53 a commit of 27
-- updates, BENCHMARKS.md "A slimmer ledger index on SQLite"); smaller
-- entries split pages less often: 10 % fewer WAL bytes an update and 15 %
-- fewer checkpointed. Pages still come newest first: entries of the same
-- microsecond are put in id order by a sort of just those entries.

DROP INDEX wallet_ledger_user_idx;
CREATE INDEX wallet_ledger_user_idx ON wallet_ledger (user_id, create_time);

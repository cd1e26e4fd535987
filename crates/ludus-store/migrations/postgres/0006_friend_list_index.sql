-- The friends listing reads every column of the edge from its index.
--
-- `user_edge_list_idx` held (source_id, state, position, destination_id),
-- so a listing read each edge's heap row for `update_time` and `metadata`.
-- With both included in the index, an index-only scan answers it once the
-- table's pages are all-visible (after autovacuum), as SQLite's does.

DROP INDEX user_edge_list_idx;
CREATE INDEX user_edge_list_idx
    ON user_edge (source_id, state, position, destination_id) INCLUDE (update_time, metadata);

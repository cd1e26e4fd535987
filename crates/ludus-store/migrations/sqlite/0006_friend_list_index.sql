-- The friends listing reads every column of the edge from its index.
--
-- `user_edge_list_idx` held (source_id, state, position, destination_id),
-- so a listing found its page in the index and then looked each edge up
-- again by primary key for `update_time` and `metadata`: for a whole list
-- of 1,000 friends, a thousand extra searches by two 36-character ids.
-- With both columns at the end of the index it covers the listing; writes
-- that change them touch the index entry they already touched for state.

DROP INDEX user_edge_list_idx;
CREATE INDEX user_edge_list_idx
    ON user_edge (source_id, state, position, destination_id, update_time, metadata);

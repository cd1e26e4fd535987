-- A hash index on `users.id` for the listings that join a page of edges to
-- their users one row at a time (friends, group members, friends of friends).
--
-- Each such join looks up one user per edge. Through `users_pkey` that is a
-- B-tree descent of 16-byte keys per row; through a hash index it is one
-- bucket page. Measured on a 1,000-friend listing: PostgreSQL's own CPU per
-- answer 1,794 -> 1,489 us with 10,006 users, 2,990 -> 2,410 us with
-- 408,028 (BENCHMARKS.md, "A hash index for the joins to users"). The
-- primary key stays for uniqueness and the foreign keys; sign-up rates did
-- not move measurably with the second index.
--
-- Building it holds a SHARE lock on `users` for the build's length (it runs in
-- the migration's transaction, so not CONCURRENTLY): on a large table, sign-ups
-- and profile updates wait meanwhile; migrate in a quiet window.

CREATE INDEX users_id_hash ON users USING hash (id);

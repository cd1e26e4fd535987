-- Leaderboards, tournaments (leaderboards with a duration) and their records.
--
-- Times are UNIX seconds. A record belongs to one period of its board,
-- named by its expiry time (0: never expires). Records are listed through
-- the server's in-memory rank index; the store reads them by owner and
-- walks (leaderboard_id, expiry_time) to build that index. `size` counts the
-- records of the tournament period `size_expiry` (for max_size);
-- `reset_fired` and `end_fired` are the last periods whose schedule hooks
-- fired, so each fires once across restarts.

CREATE TABLE leaderboard (
    id             TEXT    NOT NULL PRIMARY KEY,
    authoritative  INTEGER NOT NULL DEFAULT 0,
    sort_order     INTEGER NOT NULL DEFAULT 1 CHECK (sort_order BETWEEN 0 AND 1),
    operator       INTEGER NOT NULL DEFAULT 0 CHECK (operator BETWEEN 0 AND 3),
    reset_schedule TEXT,
    metadata       TEXT    NOT NULL DEFAULT '{}',
    create_time    INTEGER NOT NULL,
    category       INTEGER NOT NULL DEFAULT 0 CHECK (category >= 0),
    description    TEXT    NOT NULL DEFAULT '',
    duration       INTEGER NOT NULL DEFAULT 0 CHECK (duration >= 0),
    end_time       INTEGER NOT NULL DEFAULT 0,
    join_required  INTEGER NOT NULL DEFAULT 0,
    max_size       INTEGER NOT NULL DEFAULT 100000000 CHECK (max_size > 0),
    max_num_score  INTEGER NOT NULL DEFAULT 1000000 CHECK (max_num_score > 0),
    title          TEXT    NOT NULL DEFAULT '',
    size           INTEGER NOT NULL DEFAULT 0,
    size_expiry    INTEGER NOT NULL DEFAULT 0,
    start_time     INTEGER NOT NULL,
    enable_ranks   INTEGER NOT NULL DEFAULT 1,
    reset_fired    INTEGER NOT NULL DEFAULT 0,
    end_fired      INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE leaderboard_record (
    leaderboard_id TEXT    NOT NULL REFERENCES leaderboard (id) ON DELETE CASCADE,
    owner_id       TEXT    NOT NULL,
    expiry_time    INTEGER NOT NULL DEFAULT 0,
    username       TEXT,
    score          INTEGER NOT NULL DEFAULT 0 CHECK (score >= 0),
    subscore       INTEGER NOT NULL DEFAULT 0 CHECK (subscore >= 0),
    num_score      INTEGER NOT NULL DEFAULT 1 CHECK (num_score >= 0),
    max_num_score  INTEGER NOT NULL DEFAULT 1000000 CHECK (max_num_score > 0),
    metadata       TEXT    NOT NULL DEFAULT '{}',
    create_time    INTEGER NOT NULL,
    update_time    INTEGER NOT NULL,
    PRIMARY KEY (leaderboard_id, expiry_time, owner_id)
);

CREATE INDEX leaderboard_record_owner_idx ON leaderboard_record (owner_id, leaderboard_id);

-- A deleted user's records go with it, in the deleting transaction, as
-- Nakama deletes them with the account. (Owners need not be users: modules
-- may rank anything by id, so this is a trigger, not a foreign key.)
CREATE TRIGGER leaderboard_record_owner_deleted AFTER DELETE ON users
BEGIN
    DELETE FROM leaderboard_record WHERE owner_id = OLD.id;
END;

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
    id             VARCHAR(128) NOT NULL PRIMARY KEY,
    authoritative  BOOLEAN NOT NULL DEFAULT FALSE,
    sort_order     BIGINT NOT NULL DEFAULT 1 CHECK (sort_order BETWEEN 0 AND 1),
    operator       BIGINT NOT NULL DEFAULT 0 CHECK (operator BETWEEN 0 AND 3),
    reset_schedule TEXT,
    metadata       JSONB   NOT NULL DEFAULT '{}',
    create_time    BIGINT NOT NULL,
    category       BIGINT NOT NULL DEFAULT 0 CHECK (category >= 0),
    description    TEXT    NOT NULL DEFAULT '',
    duration       BIGINT NOT NULL DEFAULT 0 CHECK (duration >= 0),
    end_time       BIGINT NOT NULL DEFAULT 0,
    join_required  BOOLEAN NOT NULL DEFAULT FALSE,
    max_size       BIGINT NOT NULL DEFAULT 100000000 CHECK (max_size > 0),
    max_num_score  BIGINT NOT NULL DEFAULT 1000000 CHECK (max_num_score > 0),
    title          TEXT    NOT NULL DEFAULT '',
    size           BIGINT NOT NULL DEFAULT 0,
    size_expiry    BIGINT NOT NULL DEFAULT 0,
    start_time     BIGINT NOT NULL,
    enable_ranks   BOOLEAN NOT NULL DEFAULT TRUE,
    reset_fired    BIGINT NOT NULL DEFAULT 0,
    end_fired      BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE leaderboard_record (
    leaderboard_id VARCHAR(128)    NOT NULL REFERENCES leaderboard (id) ON DELETE CASCADE,
    owner_id       UUID    NOT NULL,
    expiry_time    BIGINT NOT NULL DEFAULT 0,
    username       TEXT,
    score          BIGINT NOT NULL DEFAULT 0 CHECK (score >= 0),
    subscore       BIGINT NOT NULL DEFAULT 0 CHECK (subscore >= 0),
    num_score      BIGINT NOT NULL DEFAULT 1 CHECK (num_score >= 0),
    max_num_score  BIGINT NOT NULL DEFAULT 1000000 CHECK (max_num_score > 0),
    metadata       JSONB   NOT NULL DEFAULT '{}',
    create_time    BIGINT NOT NULL,
    update_time    BIGINT NOT NULL,
    PRIMARY KEY (leaderboard_id, expiry_time, owner_id)
);

CREATE INDEX leaderboard_record_owner_idx ON leaderboard_record (owner_id, leaderboard_id);

-- A deleted user's records go with it, in the deleting transaction, as
-- Nakama deletes them with the account. (Owners need not be users: modules
-- may rank anything by id, so this is a trigger, not a foreign key.)
CREATE FUNCTION leaderboard_record_owner_deleted() RETURNS trigger AS $$
BEGIN
    DELETE FROM leaderboard_record WHERE owner_id = OLD.id;
    RETURN OLD;
END;
$$ LANGUAGE plpgsql;

CREATE TRIGGER leaderboard_record_owner_deleted AFTER DELETE ON users
    FOR EACH ROW EXECUTE FUNCTION leaderboard_record_owner_deleted();

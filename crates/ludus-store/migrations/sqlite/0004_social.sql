-- Friends, groups and group membership.
--
-- `user_edge` holds one row per direction of a friendship (source owns it):
-- states 0 friend, 1 invite sent, 2 invite received, 3 blocked, as Nakama.
-- Listings walk (source_id, state, position, destination_id); `position` is
-- the edge's creation time in microseconds. A user's `edge_count` is the
-- number of edges they own, kept by triggers so cascades on user deletion
-- keep it exact too.
--
-- `groups` and `group_edge` (one row per member, join request or ban:
-- states 0 superadmin, 1 admin, 2 member, 3 join request, 4 banned). A
-- group's `edge_count` counts states 0 to 2 and is kept by triggers; the
-- store checks it against `max_count` under the writer (one writer, so no
-- concurrent change can slip between the check and the write). `open` is
-- 1 for open groups. Times are UNIX seconds.

CREATE TABLE user_edge (
    source_id      TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    destination_id TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state          INTEGER NOT NULL CHECK (state BETWEEN 0 AND 3),
    position       INTEGER NOT NULL,
    update_time    INTEGER NOT NULL,
    metadata       TEXT    NOT NULL DEFAULT '{}',
    PRIMARY KEY (source_id, destination_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX user_edge_list_idx ON user_edge (source_id, state, position, destination_id);
CREATE INDEX user_edge_destination_idx ON user_edge (destination_id);

CREATE TRIGGER user_edge_count_insert AFTER INSERT ON user_edge BEGIN
    UPDATE users SET edge_count = edge_count + 1 WHERE id = NEW.source_id;
END;

CREATE TRIGGER user_edge_count_delete AFTER DELETE ON user_edge BEGIN
    UPDATE users SET edge_count = edge_count - 1 WHERE id = OLD.source_id;
END;

CREATE TABLE groups (
    id          TEXT    NOT NULL PRIMARY KEY,
    creator_id  TEXT    NOT NULL,
    name        TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    avatar_url  TEXT    NOT NULL DEFAULT '',
    lang_tag    TEXT    NOT NULL DEFAULT 'en',
    metadata    TEXT    NOT NULL DEFAULT '{}',
    open        INTEGER NOT NULL CHECK (open IN (0, 1)),
    edge_count  INTEGER NOT NULL DEFAULT 0 CHECK (edge_count >= 0),
    max_count   INTEGER NOT NULL CHECK (max_count >= 1),
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX groups_name_key ON groups (name);
CREATE INDEX groups_lang_tag_idx ON groups (lang_tag, name, id);

CREATE TABLE group_edge (
    group_id    TEXT    NOT NULL REFERENCES groups (id) ON DELETE CASCADE,
    user_id     TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    state       INTEGER NOT NULL CHECK (state BETWEEN 0 AND 4),
    update_time INTEGER NOT NULL,
    PRIMARY KEY (group_id, user_id)
) STRICT, WITHOUT ROWID;

CREATE INDEX group_edge_list_idx ON group_edge (group_id, state, user_id);
CREATE INDEX group_edge_user_idx ON group_edge (user_id, state, group_id);

CREATE TRIGGER group_edge_count_insert AFTER INSERT ON group_edge WHEN NEW.state <= 2 BEGIN
    UPDATE groups SET edge_count = edge_count + 1 WHERE id = NEW.group_id;
END;

CREATE TRIGGER group_edge_count_delete AFTER DELETE ON group_edge WHEN OLD.state <= 2 BEGIN
    UPDATE groups SET edge_count = edge_count - 1 WHERE id = OLD.group_id;
END;

CREATE TRIGGER group_edge_count_update AFTER UPDATE OF state ON group_edge
    WHEN (OLD.state <= 2) <> (NEW.state <= 2) BEGIN
    UPDATE groups SET edge_count = edge_count + (CASE WHEN NEW.state <= 2 THEN 1 ELSE -1 END)
     WHERE id = NEW.group_id;
END;

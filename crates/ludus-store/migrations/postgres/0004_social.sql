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
-- store checks it against `max_count` after locking the group's row
-- (`SELECT … FOR UPDATE`), so concurrent joins queue on that lock. Times
-- are UNIX seconds.

CREATE TABLE user_edge (
    source_id      UUID     NOT NULL,
    destination_id UUID     NOT NULL,
    state          SMALLINT NOT NULL CHECK (state BETWEEN 0 AND 3),
    position       BIGINT   NOT NULL,
    update_time    BIGINT   NOT NULL,
    metadata       JSONB    NOT NULL DEFAULT '{}',
    CONSTRAINT user_edge_pkey PRIMARY KEY (source_id, destination_id),
    CONSTRAINT user_edge_source_id_fkey FOREIGN KEY (source_id) REFERENCES users (id) ON DELETE CASCADE,
    CONSTRAINT user_edge_destination_id_fkey FOREIGN KEY (destination_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX user_edge_list_idx ON user_edge (source_id, state, position, destination_id);
CREATE INDEX user_edge_destination_idx ON user_edge (destination_id);

CREATE FUNCTION user_edge_count() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' THEN
        UPDATE users SET edge_count = edge_count + 1 WHERE id = NEW.source_id;
    ELSE
        UPDATE users SET edge_count = edge_count - 1 WHERE id = OLD.source_id;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER user_edge_count AFTER INSERT OR DELETE ON user_edge
    FOR EACH ROW EXECUTE FUNCTION user_edge_count();

CREATE TABLE groups (
    id          UUID         NOT NULL,
    creator_id  UUID         NOT NULL,
    name        VARCHAR(255) NOT NULL,
    description VARCHAR(255) NOT NULL DEFAULT '',
    avatar_url  VARCHAR(512) NOT NULL DEFAULT '',
    lang_tag    VARCHAR(18)  NOT NULL DEFAULT 'en',
    metadata    JSONB        NOT NULL DEFAULT '{}',
    open        BOOLEAN      NOT NULL,
    edge_count  INTEGER      NOT NULL DEFAULT 0 CHECK (edge_count >= 0),
    max_count   INTEGER      NOT NULL CHECK (max_count >= 1),
    create_time BIGINT       NOT NULL,
    update_time BIGINT       NOT NULL,
    CONSTRAINT groups_pkey PRIMARY KEY (id),
    CONSTRAINT groups_name_key UNIQUE (name)
);

CREATE INDEX groups_lang_tag_idx ON groups (lang_tag, name, id);

CREATE TABLE group_edge (
    group_id    UUID     NOT NULL,
    user_id     UUID     NOT NULL,
    state       SMALLINT NOT NULL CHECK (state BETWEEN 0 AND 4),
    update_time BIGINT   NOT NULL,
    CONSTRAINT group_edge_pkey PRIMARY KEY (group_id, user_id),
    CONSTRAINT group_edge_group_id_fkey FOREIGN KEY (group_id) REFERENCES groups (id) ON DELETE CASCADE,
    CONSTRAINT group_edge_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX group_edge_list_idx ON group_edge (group_id, state, user_id);
CREATE INDEX group_edge_user_idx ON group_edge (user_id, state, group_id);

CREATE FUNCTION group_edge_count() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    delta INTEGER := 0;
BEGIN
    IF TG_OP IN ('INSERT', 'UPDATE') AND NEW.state <= 2 THEN
        delta := delta + 1;
    END IF;
    IF TG_OP IN ('DELETE', 'UPDATE') AND OLD.state <= 2 THEN
        delta := delta - 1;
    END IF;
    IF delta <> 0 AND TG_OP = 'DELETE' THEN
        UPDATE groups SET edge_count = edge_count + delta WHERE id = OLD.group_id;
    ELSIF delta <> 0 THEN
        UPDATE groups SET edge_count = edge_count + delta WHERE id = NEW.group_id;
    END IF;
    RETURN NULL;
END;
$$;

CREATE TRIGGER group_edge_count AFTER INSERT OR DELETE OR UPDATE OF state ON group_edge
    FOR EACH ROW EXECUTE FUNCTION group_edge_count();

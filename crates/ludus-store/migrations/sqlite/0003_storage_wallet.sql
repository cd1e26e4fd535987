-- Storage objects, the wallet ledger, and Nakama's system user.
--
-- An object is (collection, key, user_id) -> a JSON object with a version
-- (hex MD5 of the value as written) and read/write permissions. Listings
-- walk (collection, read, key, user_id) for a whole collection and
-- (user_id, collection, read, key) for one owner; the second index also
-- serves the cascade when a user is deleted. Times are UNIX seconds.
--
-- Ledger entries record each wallet change; pages walk (user_id,
-- create_time, id) newest first. Times are microseconds, so entries of the
-- same second keep their order.
--
-- The system user (nil id, empty username, as Nakama's) owns server-side
-- objects and sends server chat messages; it has no credentials, so no one
-- can sign in as it.

INSERT INTO users (id, username, create_time, update_time)
VALUES ('00000000-0000-0000-0000-000000000000', '', CAST(strftime('%s', 'now') AS INTEGER),
        CAST(strftime('%s', 'now') AS INTEGER));

CREATE TABLE storage (
    collection  TEXT    NOT NULL,
    key         TEXT    NOT NULL,
    user_id     TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    value       TEXT    NOT NULL DEFAULT '{}',
    version     TEXT    NOT NULL,
    read        INTEGER NOT NULL DEFAULT 1 CHECK (read BETWEEN 0 AND 2),
    write       INTEGER NOT NULL DEFAULT 1 CHECK (write BETWEEN 0 AND 1),
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL,
    PRIMARY KEY (collection, key, user_id)
) STRICT;

CREATE INDEX storage_collection_read_idx ON storage (collection, read, key, user_id);
CREATE INDEX storage_user_idx ON storage (user_id, collection, read, key);

CREATE TABLE wallet_ledger (
    id          TEXT    NOT NULL PRIMARY KEY,
    user_id     TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    changeset   TEXT    NOT NULL,
    metadata    TEXT    NOT NULL DEFAULT '{}',
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) STRICT;

CREATE INDEX wallet_ledger_user_idx ON wallet_ledger (user_id, create_time, id);

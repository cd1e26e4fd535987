-- Storage objects, the wallet ledger, and Nakama's system user.
--
-- An object is (collection, key, user_id) -> a JSON object with a version
-- (hex MD5 of the value as written) and read/write permissions. Values are
-- JSONB, as in Nakama, so modules' own SQL can query into them. Listings
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
VALUES ('00000000-0000-0000-0000-000000000000', '', extract(epoch FROM now())::bigint,
        extract(epoch FROM now())::bigint);

CREATE TABLE storage (
    collection  VARCHAR(128) NOT NULL,
    key         VARCHAR(128) NOT NULL,
    user_id     UUID         NOT NULL,
    value       JSONB        NOT NULL DEFAULT '{}',
    version     VARCHAR(32)  NOT NULL,
    read        SMALLINT     NOT NULL DEFAULT 1 CHECK (read BETWEEN 0 AND 2),
    write       SMALLINT     NOT NULL DEFAULT 1 CHECK (write BETWEEN 0 AND 1),
    create_time BIGINT       NOT NULL,
    update_time BIGINT       NOT NULL,
    CONSTRAINT storage_pkey PRIMARY KEY (collection, key, user_id),
    CONSTRAINT storage_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX storage_collection_read_idx ON storage (collection, read, key, user_id);
CREATE INDEX storage_user_idx ON storage (user_id, collection, read, key);

CREATE TABLE wallet_ledger (
    id          UUID   NOT NULL,
    user_id     UUID   NOT NULL,
    changeset   JSONB  NOT NULL,
    metadata    JSONB  NOT NULL DEFAULT '{}',
    create_time BIGINT NOT NULL,
    update_time BIGINT NOT NULL,
    CONSTRAINT wallet_ledger_pkey PRIMARY KEY (id),
    CONSTRAINT wallet_ledger_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX wallet_ledger_user_idx ON wallet_ledger (user_id, create_time, id);

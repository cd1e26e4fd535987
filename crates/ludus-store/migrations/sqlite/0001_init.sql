-- Accounts, their devices and stored session revocations.
--
-- Identity columns stay NULL until a provider is linked. Their unique
-- indexes are partial (WHERE ... IS NOT NULL) so an account pays no index
-- entry for providers it never linked: registration inserts touch three
-- indexes instead of ten.
--
-- Later migrations add storage objects, chat messages and notifications as
-- tables keyed by user id with ON DELETE CASCADE, so deleting a user stays
-- one statement.

CREATE TABLE users (
    id                       TEXT    NOT NULL PRIMARY KEY,
    username                 TEXT    NOT NULL,
    display_name             TEXT    NOT NULL DEFAULT '',
    avatar_url               TEXT    NOT NULL DEFAULT '',
    lang_tag                 TEXT    NOT NULL DEFAULT 'en',
    location                 TEXT    NOT NULL DEFAULT '',
    timezone                 TEXT    NOT NULL DEFAULT '',
    metadata                 TEXT    NOT NULL DEFAULT '{}',
    wallet                   TEXT    NOT NULL DEFAULT '{}',
    email                    TEXT,
    password                 TEXT,
    custom_id                TEXT,
    facebook_id              TEXT,
    google_id                TEXT,
    gamecenter_id            TEXT,
    steam_id                 TEXT,
    facebook_instant_game_id TEXT,
    apple_id                 TEXT,
    edge_count               INTEGER NOT NULL DEFAULT 0 CHECK (edge_count >= 0),
    create_time              INTEGER NOT NULL,
    update_time              INTEGER NOT NULL,
    verify_time              INTEGER,
    disable_time             INTEGER
) STRICT;

CREATE UNIQUE INDEX users_username_key ON users (username);
CREATE UNIQUE INDEX users_email_key ON users (email) WHERE email IS NOT NULL;
CREATE UNIQUE INDEX users_custom_id_key ON users (custom_id) WHERE custom_id IS NOT NULL;
CREATE UNIQUE INDEX users_facebook_id_key ON users (facebook_id) WHERE facebook_id IS NOT NULL;
CREATE UNIQUE INDEX users_google_id_key ON users (google_id) WHERE google_id IS NOT NULL;
CREATE UNIQUE INDEX users_gamecenter_id_key ON users (gamecenter_id) WHERE gamecenter_id IS NOT NULL;
CREATE UNIQUE INDEX users_steam_id_key ON users (steam_id) WHERE steam_id IS NOT NULL;
CREATE UNIQUE INDEX users_facebook_instant_game_id_key ON users (facebook_instant_game_id)
    WHERE facebook_instant_game_id IS NOT NULL;
CREATE UNIQUE INDEX users_apple_id_key ON users (apple_id) WHERE apple_id IS NOT NULL;

-- One row per device id; an account may have several.
CREATE TABLE user_device (
    id      TEXT NOT NULL PRIMARY KEY,
    user_id TEXT NOT NULL REFERENCES users (id) ON DELETE CASCADE
) STRICT, WITHOUT ROWID;

CREATE INDEX user_device_user_id_idx ON user_device (user_id);

-- Single revoked tokens, kept until they expire.
CREATE TABLE revoked_token (
    token_id   TEXT    NOT NULL,
    kind       TEXT    NOT NULL,
    expires_at INTEGER NOT NULL,
    PRIMARY KEY (token_id, kind)
) STRICT, WITHOUT ROWID;

CREATE INDEX revoked_token_expires_at_idx ON revoked_token (expires_at);

-- Every token of the user issued at or before the cutoff is revoked. No
-- foreign key: the cutoff must outlive a deleted account.
CREATE TABLE user_session_cutoff (
    user_id TEXT    NOT NULL PRIMARY KEY,
    cutoff  INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

-- Accounts, their devices and stored session revocations.
--
-- Identity columns stay NULL until a provider is linked. Their unique
-- indexes are partial (WHERE ... IS NOT NULL) so an account pays no index
-- entry for providers it never linked. Index names end in `_key`: the store
-- reads them from unique violations to tell a taken username
-- (users_username_key) from a taken identity.
--
-- Later migrations add storage objects, chat messages and notifications as
-- tables keyed by user id with ON DELETE CASCADE, so deleting a user stays
-- one statement.

CREATE TABLE users (
    id                       UUID         NOT NULL,
    username                 VARCHAR(128) NOT NULL,
    display_name             VARCHAR(255) NOT NULL DEFAULT '',
    avatar_url               VARCHAR(512) NOT NULL DEFAULT '',
    lang_tag                 VARCHAR(18)  NOT NULL DEFAULT 'en',
    location                 VARCHAR(255) NOT NULL DEFAULT '',
    timezone                 VARCHAR(255) NOT NULL DEFAULT '',
    metadata                 JSONB        NOT NULL DEFAULT '{}',
    wallet                   JSONB        NOT NULL DEFAULT '{}',
    email                    VARCHAR(255),
    password                 TEXT,
    custom_id                VARCHAR(128),
    facebook_id              VARCHAR(128),
    google_id                VARCHAR(128),
    gamecenter_id            VARCHAR(128),
    steam_id                 VARCHAR(128),
    facebook_instant_game_id VARCHAR(128),
    apple_id                 VARCHAR(128),
    edge_count               INTEGER      NOT NULL DEFAULT 0 CHECK (edge_count >= 0),
    create_time              BIGINT       NOT NULL,
    update_time              BIGINT       NOT NULL,
    verify_time              BIGINT,
    disable_time             BIGINT,
    CONSTRAINT users_pkey PRIMARY KEY (id)
);

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
    id      VARCHAR(128) NOT NULL,
    user_id UUID         NOT NULL,
    CONSTRAINT user_device_pkey PRIMARY KEY (id),
    CONSTRAINT user_device_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX user_device_user_id_idx ON user_device (user_id);

-- Single revoked tokens, kept until they expire.
CREATE TABLE revoked_token (
    token_id   TEXT   NOT NULL,
    kind       TEXT   NOT NULL,
    expires_at BIGINT NOT NULL,
    CONSTRAINT revoked_token_pkey PRIMARY KEY (token_id, kind)
);

CREATE INDEX revoked_token_expires_at_idx ON revoked_token (expires_at);

-- Every token of the user issued at or before the cutoff is revoked. No
-- foreign key: the cutoff must outlive a deleted account.
CREATE TABLE user_session_cutoff (
    user_id UUID   NOT NULL,
    cutoff  BIGINT NOT NULL,
    CONSTRAINT user_session_cutoff_pkey PRIMARY KEY (user_id)
);

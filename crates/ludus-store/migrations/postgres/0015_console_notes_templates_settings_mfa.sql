-- What the console keeps beside its users, as Nakama 3.40 does: notes on
-- game accounts (`users_notes`, gone with their account), ACL templates
-- (`console_acl_template`, `acl` in the stored form of `console_users`),
-- the console's settings (`setting`, JSON values, with Nakama's one
-- setting and its default) and each console user's MFA secret and
-- recovery codes, sealed with `mfa.storage_encryption_key` (NULL until set
-- up). Note times are microseconds since the epoch, the others seconds.

CREATE TABLE users_notes (
    id          UUID   NOT NULL,
    user_id     UUID   NOT NULL,
    note        TEXT   NOT NULL,
    create_time BIGINT NOT NULL,
    update_time BIGINT NOT NULL,
    create_id   UUID   NOT NULL,
    update_id   UUID   NOT NULL,
    CONSTRAINT users_notes_pkey PRIMARY KEY (id),
    CONSTRAINT users_notes_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX users_notes_user_time_idx ON users_notes (user_id, create_time DESC, id DESC);

CREATE TABLE console_acl_template (
    id          UUID        NOT NULL,
    name        VARCHAR(64) NOT NULL,
    description VARCHAR(64) NOT NULL DEFAULT '',
    acl         TEXT        NOT NULL,
    create_time BIGINT      NOT NULL,
    update_time BIGINT      NOT NULL,
    CONSTRAINT console_acl_template_pkey PRIMARY KEY (id)
);

CREATE UNIQUE INDEX console_acl_template_name_key ON console_acl_template (name);

CREATE TABLE setting (
    name        VARCHAR(64) NOT NULL,
    value       TEXT        NOT NULL,
    update_time BIGINT      NOT NULL,
    CONSTRAINT setting_pkey PRIMARY KEY (name)
);

INSERT INTO setting (name, value, update_time)
    VALUES ('utc_toggle', 'false', extract(epoch FROM now())::BIGINT);

ALTER TABLE console_users ADD COLUMN mfa_secret BYTEA;
ALTER TABLE console_users ADD COLUMN mfa_recovery_codes BYTEA;

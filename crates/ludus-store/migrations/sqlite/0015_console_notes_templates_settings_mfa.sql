-- What the console keeps beside its users, as Nakama 3.40 does: notes on
-- game accounts (`users_notes`, gone with their account), ACL templates
-- (`console_acl_template`, `acl` in the stored form of `console_users`),
-- the console's settings (`setting`, JSON values, with Nakama's one
-- setting and its default) and each console user's MFA secret and
-- recovery codes, sealed with `mfa.storage_encryption_key` (NULL until set
-- up). Note times are microseconds since the epoch, the others seconds.

CREATE TABLE users_notes (
    id          TEXT    NOT NULL PRIMARY KEY,
    user_id     TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    note        TEXT    NOT NULL,
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL,
    create_id   TEXT    NOT NULL,
    update_id   TEXT    NOT NULL
) STRICT;

CREATE INDEX users_notes_user_time_idx ON users_notes (user_id, create_time DESC, id DESC);

CREATE TABLE console_acl_template (
    id          TEXT    NOT NULL PRIMARY KEY,
    name        TEXT    NOT NULL,
    description TEXT    NOT NULL DEFAULT '',
    acl         TEXT    NOT NULL,
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) STRICT;

CREATE UNIQUE INDEX console_acl_template_name_key ON console_acl_template (name);

CREATE TABLE setting (
    name        TEXT    NOT NULL PRIMARY KEY,
    value       TEXT    NOT NULL,
    update_time INTEGER NOT NULL
) STRICT;

INSERT INTO setting (name, value, update_time) VALUES ('utc_toggle', 'false', unixepoch());

ALTER TABLE console_users ADD COLUMN mfa_secret BLOB;
ALTER TABLE console_users ADD COLUMN mfa_recovery_codes BLOB;

-- The console's audit log: one row per change a console user made through
-- the console (Nakama's `console_audit_log`). `resource` is the place of
-- the resource in Nakama's `AclResources` enum and `action` its
-- `AuditLogAction` number; `metadata` is a JSON object of the change's
-- details. Listing walks (create_time, id) newest first; times are
-- microseconds since the epoch. Wipes of game data leave it alone.

CREATE TABLE console_audit_log (
    id               TEXT    NOT NULL PRIMARY KEY,
    create_time      INTEGER NOT NULL,
    console_user_id  TEXT    NOT NULL,
    console_username TEXT    NOT NULL,
    email            TEXT    NOT NULL,
    resource         INTEGER NOT NULL,
    action           INTEGER NOT NULL,
    message          TEXT    NOT NULL,
    metadata         TEXT    NOT NULL DEFAULT '{}'
) STRICT;

CREATE INDEX console_audit_log_time_idx ON console_audit_log (create_time, id);

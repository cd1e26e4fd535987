-- Chat history and notifications.
--
-- A message belongs to one channel stream (mode, subject, subcontext,
-- label); history pages walk the (stream, create_time, id) index in either
-- direction. Times are microseconds since the UNIX epoch, so messages sent
-- in the same second keep their order. Rows go with their sender or
-- recipient (ON DELETE CASCADE).

CREATE TABLE message (
    id                TEXT    NOT NULL PRIMARY KEY,
    stream_mode       INTEGER NOT NULL,
    stream_subject    TEXT    NOT NULL,
    stream_subcontext TEXT    NOT NULL,
    stream_label      TEXT    NOT NULL,
    code              INTEGER NOT NULL DEFAULT 0,
    sender_id         TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    username          TEXT    NOT NULL,
    content           TEXT    NOT NULL DEFAULT '{}',
    create_time       INTEGER NOT NULL,
    update_time       INTEGER NOT NULL
) STRICT;

CREATE INDEX message_stream_idx
    ON message (stream_mode, stream_subject, stream_subcontext, stream_label, create_time, id);
CREATE INDEX message_sender_id_idx ON message (sender_id);

CREATE TABLE notification (
    id          TEXT    NOT NULL PRIMARY KEY,
    user_id     TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    subject     TEXT    NOT NULL,
    content     TEXT    NOT NULL DEFAULT '{}',
    code        INTEGER NOT NULL,
    sender_id   TEXT    NOT NULL,
    create_time INTEGER NOT NULL
) STRICT;

CREATE INDEX notification_user_idx ON notification (user_id, create_time, id);

-- Chat history and notifications.
--
-- A message belongs to one channel stream (mode, subject, subcontext,
-- label); history pages walk the (stream, create_time, id) index in either
-- direction. Times are microseconds since the UNIX epoch, so messages sent
-- in the same second keep their order. Rows go with their sender or
-- recipient (ON DELETE CASCADE).

CREATE TABLE message (
    id                UUID         NOT NULL,
    stream_mode       SMALLINT     NOT NULL,
    stream_subject    UUID         NOT NULL,
    stream_subcontext UUID         NOT NULL,
    stream_label      VARCHAR(128) NOT NULL,
    code              INTEGER      NOT NULL DEFAULT 0,
    sender_id         UUID         NOT NULL,
    username          VARCHAR(128) NOT NULL,
    content           TEXT         NOT NULL DEFAULT '{}',
    create_time       BIGINT       NOT NULL,
    update_time       BIGINT       NOT NULL,
    CONSTRAINT message_pkey PRIMARY KEY (id),
    CONSTRAINT message_sender_id_fkey FOREIGN KEY (sender_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX message_stream_idx
    ON message (stream_mode, stream_subject, stream_subcontext, stream_label, create_time, id);
CREATE INDEX message_sender_id_idx ON message (sender_id);

CREATE TABLE notification (
    id          UUID         NOT NULL,
    user_id     UUID         NOT NULL,
    subject     VARCHAR(255) NOT NULL,
    content     TEXT         NOT NULL DEFAULT '{}',
    code        INTEGER      NOT NULL,
    sender_id   UUID         NOT NULL,
    create_time BIGINT       NOT NULL,
    CONSTRAINT notification_pkey PRIMARY KEY (id),
    CONSTRAINT notification_user_id_fkey FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE
);

CREATE INDEX notification_user_idx ON notification (user_id, create_time, id);

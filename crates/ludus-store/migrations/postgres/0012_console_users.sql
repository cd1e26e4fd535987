-- The console's own users (port 7351), apart from the game's accounts.
--
-- `acl` is the JSON form Nakama stores ({"admin": true} or a map of every
-- resource). `password` stays NULL until an invited user sets one.
-- `tokens_after_ms` ends console sessions: a token issued before it is
-- refused (sign-out, a changed ACL, a password reset). The root user of
-- `console.username` is the row with the nil id and an empty username,
-- kept only for its sign-outs. Times are seconds since the epoch.

CREATE TABLE console_users (
    id              UUID         NOT NULL,
    username        VARCHAR(128) NOT NULL,
    email           VARCHAR(255) NOT NULL,
    acl             TEXT         NOT NULL,
    password        TEXT,
    mfa_required    BOOLEAN      NOT NULL DEFAULT FALSE,
    create_time     BIGINT       NOT NULL,
    update_time     BIGINT       NOT NULL,
    disable_time    BIGINT,
    tokens_after_ms BIGINT       NOT NULL DEFAULT 0,
    CONSTRAINT console_users_pkey PRIMARY KEY (id)
);

CREATE UNIQUE INDEX console_users_username_key ON console_users (username);
CREATE UNIQUE INDEX console_users_email_key ON console_users (email);

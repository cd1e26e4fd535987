-- Validated in-app purchases and subscriptions.
--
-- A purchase is keyed by the store's transaction id and a subscription by
-- its original transaction id, so each is stored once and keeps the user
-- who first validated it. Rows have no foreign key to users: a purchase
-- outlives its buyer's account, so a replayed receipt is still recognised.
-- Times are milliseconds since the UNIX epoch; a refund time of 0 means
-- none. Listings walk (purchase_time, user_id, id) newest first.

CREATE TABLE purchase (
    transaction_id TEXT    NOT NULL PRIMARY KEY,
    user_id        TEXT    NOT NULL,
    store          INTEGER NOT NULL,
    product_id     TEXT    NOT NULL,
    environment    INTEGER NOT NULL,
    raw_response   TEXT    NOT NULL DEFAULT '{}',
    purchase_time  INTEGER NOT NULL,
    create_time    INTEGER NOT NULL,
    update_time    INTEGER NOT NULL,
    refund_time    INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX purchase_list_idx ON purchase (purchase_time, user_id, transaction_id);
CREATE INDEX purchase_user_idx ON purchase (user_id, purchase_time, transaction_id);

CREATE TABLE subscription (
    original_transaction_id TEXT    NOT NULL PRIMARY KEY,
    user_id                 TEXT    NOT NULL,
    store                   INTEGER NOT NULL,
    product_id              TEXT    NOT NULL,
    environment             INTEGER NOT NULL,
    raw_response            TEXT    NOT NULL DEFAULT '{}',
    raw_notification        TEXT    NOT NULL DEFAULT '{}',
    purchase_time           INTEGER NOT NULL,
    create_time             INTEGER NOT NULL,
    update_time             INTEGER NOT NULL,
    expire_time             INTEGER NOT NULL,
    refund_time             INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX subscription_list_idx
    ON subscription (purchase_time, user_id, original_transaction_id);
CREATE INDEX subscription_user_idx
    ON subscription (user_id, product_id, expire_time);

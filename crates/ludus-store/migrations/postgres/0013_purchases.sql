-- Validated in-app purchases and subscriptions.
--
-- A purchase is keyed by the store's transaction id and a subscription by
-- its original transaction id, so each is stored once and keeps the user
-- who first validated it. Rows have no foreign key to users: a purchase
-- outlives its buyer's account, so a replayed receipt is still recognised.
-- Times are milliseconds since the UNIX epoch; a refund time of 0 means
-- none. Listings walk (purchase_time, user_id, id) newest first.

CREATE TABLE purchase (
    transaction_id VARCHAR(512) NOT NULL,
    user_id        UUID         NOT NULL,
    store          SMALLINT     NOT NULL,
    product_id     VARCHAR(512) NOT NULL,
    environment    SMALLINT     NOT NULL,
    raw_response   TEXT         NOT NULL DEFAULT '{}',
    purchase_time  BIGINT       NOT NULL,
    create_time    BIGINT       NOT NULL,
    update_time    BIGINT       NOT NULL,
    refund_time    BIGINT       NOT NULL DEFAULT 0,
    CONSTRAINT purchase_pkey PRIMARY KEY (transaction_id)
);

CREATE INDEX purchase_list_idx ON purchase (purchase_time, user_id, transaction_id);
CREATE INDEX purchase_user_idx ON purchase (user_id, purchase_time, transaction_id);

CREATE TABLE subscription (
    original_transaction_id VARCHAR(512) NOT NULL,
    user_id                 UUID         NOT NULL,
    store                   SMALLINT     NOT NULL,
    product_id              VARCHAR(512) NOT NULL,
    environment             SMALLINT     NOT NULL,
    raw_response            TEXT         NOT NULL DEFAULT '{}',
    raw_notification        TEXT         NOT NULL DEFAULT '{}',
    purchase_time           BIGINT       NOT NULL,
    create_time             BIGINT       NOT NULL,
    update_time             BIGINT       NOT NULL,
    expire_time             BIGINT       NOT NULL,
    refund_time             BIGINT       NOT NULL DEFAULT 0,
    CONSTRAINT subscription_pkey PRIMARY KEY (original_transaction_id)
);

CREATE INDEX subscription_list_idx
    ON subscription (purchase_time, user_id, original_transaction_id);
CREATE INDEX subscription_user_idx
    ON subscription (user_id, product_id, expire_time);

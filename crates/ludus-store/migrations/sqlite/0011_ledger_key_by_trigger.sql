-- The ledger's two tables without their foreign key to `users`; a trigger
-- on `users` deletes a deleted account's entries instead, and the view's
-- triggers check the account of an entry a module's SQL writes.
--
-- Why: the writer's move of new entries (`storage::merge_ledger`, every
-- 50 ms under load) paid the key twice an entry. The insert into the
-- indexed table looked the account up, and the `DELETE` that empties the
-- recent table could not use SQLite's whole-table clear on a table with a
-- foreign key: it deleted row by row, each with its own look-up in `users`.
-- Measured on 500-entry moves over 64 accounts: about 10 µs an entry with
-- the keys, 7.5 without (BENCHMARKS.md, "The ledger's tables without their
-- foreign key on SQLite").
--
-- What the keys guaranteed still holds:
-- * An entry's account exists when it is written. The server writes one
--   only in the transaction that updates that account's wallet; a module's
--   insert or update through `wallet_ledger` is checked by the view's
--   triggers, with SQLite's own message.
-- * Deleting an account deletes its entries (`users_delete_wallet_ledger`,
--   in the same statement as the delete, as ON DELETE CASCADE did). The
--   recent table holds at most one move interval of entries, so its scan by
--   `user_id` stays short.
--
-- The tables are rebuilt (SQLite cannot drop a column constraint in
-- place); their rows, ids and indexes stay as they were.

DROP VIEW wallet_ledger;

CREATE TABLE wallet_ledger_indexed_rebuilt (
    id          TEXT    NOT NULL PRIMARY KEY,
    user_id     TEXT    NOT NULL,
    changeset   TEXT    NOT NULL,
    metadata    TEXT    NOT NULL DEFAULT '{}',
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) STRICT;
INSERT INTO wallet_ledger_indexed_rebuilt (rowid, id, user_id, changeset, metadata, create_time, update_time)
    SELECT rowid, id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger_indexed;
DROP TABLE wallet_ledger_indexed;
ALTER TABLE wallet_ledger_indexed_rebuilt RENAME TO wallet_ledger_indexed;
CREATE INDEX wallet_ledger_user_idx ON wallet_ledger_indexed (user_id, create_time);

CREATE TABLE wallet_ledger_recent_rebuilt (
    id          TEXT    NOT NULL PRIMARY KEY,
    user_id     TEXT    NOT NULL,
    changeset   TEXT    NOT NULL,
    metadata    TEXT    NOT NULL DEFAULT '{}',
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) STRICT, WITHOUT ROWID;
INSERT INTO wallet_ledger_recent_rebuilt (id, user_id, changeset, metadata, create_time, update_time)
    SELECT id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger_recent;
DROP TABLE wallet_ledger_recent;
ALTER TABLE wallet_ledger_recent_rebuilt RENAME TO wallet_ledger_recent;

CREATE TRIGGER users_delete_wallet_ledger AFTER DELETE ON users
BEGIN
    DELETE FROM wallet_ledger_indexed WHERE user_id = OLD.id;
    DELETE FROM wallet_ledger_recent WHERE user_id = OLD.id;
END;

CREATE VIEW wallet_ledger AS
    SELECT id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger_indexed
    UNION ALL
    SELECT id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger_recent;

CREATE TRIGGER wallet_ledger_insert INSTEAD OF INSERT ON wallet_ledger
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed')
     WHERE NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id);
    SELECT RAISE(ABORT, 'UNIQUE constraint failed: wallet_ledger.id')
     WHERE EXISTS (SELECT 1 FROM wallet_ledger_recent WHERE id = NEW.id);
    INSERT INTO wallet_ledger_indexed (id, user_id, changeset, metadata, create_time, update_time)
    VALUES (NEW.id, NEW.user_id, NEW.changeset, coalesce(NEW.metadata, '{}'), NEW.create_time,
            coalesce(NEW.update_time, NEW.create_time));
END;

CREATE TRIGGER wallet_ledger_update INSTEAD OF UPDATE ON wallet_ledger
BEGIN
    SELECT RAISE(ABORT, 'FOREIGN KEY constraint failed')
     WHERE NEW.user_id IS NOT OLD.user_id
       AND NOT EXISTS (SELECT 1 FROM users WHERE id = NEW.user_id);
    UPDATE wallet_ledger_indexed
       SET id = NEW.id, user_id = NEW.user_id, changeset = NEW.changeset,
           metadata = NEW.metadata, create_time = NEW.create_time, update_time = NEW.update_time
     WHERE id = OLD.id;
    UPDATE wallet_ledger_recent
       SET id = NEW.id, user_id = NEW.user_id, changeset = NEW.changeset,
           metadata = NEW.metadata, create_time = NEW.create_time, update_time = NEW.update_time
     WHERE id = OLD.id;
END;

CREATE TRIGGER wallet_ledger_delete INSTEAD OF DELETE ON wallet_ledger
BEGIN
    DELETE FROM wallet_ledger_indexed WHERE id = OLD.id;
    DELETE FROM wallet_ledger_recent WHERE id = OLD.id;
END;

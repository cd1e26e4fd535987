-- New ledger entries land in a small table without a per-user index and
-- are moved into the indexed one in batches (the writer's upkeep, every
-- 50 ms while writes come; writer.rs and storage.rs `merge_ledger`).
--
-- Why: the per-user index was still about four fifths of the WAL pages a
-- wallet commit wrote (BENCHMARKS.md "A slimmer ledger index on SQLite"),
-- one leaf page per user per commit. A batch move touches each user's page
-- once for all that user's entries of the last 50 ms.
--
-- `wallet_ledger` stays the name modules' SQL reads: a view over both
-- tables, whose triggers carry inserts, updates and deletes through (an
-- insert goes to the indexed table). Ids are unique across both: the ids
-- the server makes are time-ordered uuids, and an insert through the view
-- refuses one the recent table holds.

ALTER TABLE wallet_ledger RENAME TO wallet_ledger_indexed;

-- Keyed by id, which the server makes time-ordered (uuid v7): an insert
-- lands at the right edge of this one B-tree.
CREATE TABLE wallet_ledger_recent (
    id          TEXT    NOT NULL PRIMARY KEY,
    user_id     TEXT    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    changeset   TEXT    NOT NULL,
    metadata    TEXT    NOT NULL DEFAULT '{}',
    create_time INTEGER NOT NULL,
    update_time INTEGER NOT NULL
) STRICT, WITHOUT ROWID;

CREATE VIEW wallet_ledger AS
    SELECT id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger_indexed
    UNION ALL
    SELECT id, user_id, changeset, metadata, create_time, update_time FROM wallet_ledger_recent;

CREATE TRIGGER wallet_ledger_insert INSTEAD OF INSERT ON wallet_ledger
BEGIN
    SELECT RAISE(ABORT, 'UNIQUE constraint failed: wallet_ledger.id')
     WHERE EXISTS (SELECT 1 FROM wallet_ledger_recent WHERE id = NEW.id);
    INSERT INTO wallet_ledger_indexed (id, user_id, changeset, metadata, create_time, update_time)
    VALUES (NEW.id, NEW.user_id, NEW.changeset, coalesce(NEW.metadata, '{}'), NEW.create_time,
            coalesce(NEW.update_time, NEW.create_time));
END;

CREATE TRIGGER wallet_ledger_update INSTEAD OF UPDATE ON wallet_ledger
BEGIN
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

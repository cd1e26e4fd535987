-- PostgreSQL's migration 7 adds a hash index on `users.id` for the joins of
-- the social listings. SQLite has no hash indexes, and its `users` primary
-- key already serves those joins; this version keeps the dialects in step.

SELECT 1;

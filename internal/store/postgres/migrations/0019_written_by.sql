-- Skein schema, version 19: a step row and a plan row name the transaction
-- that last wrote them (written: its xid8; a step saved again takes the
-- new one, SQL.UpsertStep). Whoever follows a run from another process
-- reads the rows that a snapshot of its last look did not see
-- (pg_visible_in_snapshot) instead of all of the run's at each look: a
-- run of 30,000 steps was read whole ten times a second. The rows
-- written before this version take the migration's transaction, which
-- every later snapshot sees.

ALTER TABLE steps ADD COLUMN written xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE step_plans ADD COLUMN written xid8 NOT NULL DEFAULT pg_current_xact_id();

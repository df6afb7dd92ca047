-- Skein schema, version 11: a skipped step says why it did not run
-- (dead_path, disabled, cancelled, run_failed, item_failed); empty for
-- every other step and for steps recorded before this version.

ALTER TABLE steps ADD COLUMN skip_reason TEXT NOT NULL DEFAULT '';

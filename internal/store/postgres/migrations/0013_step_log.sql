-- Skein schema, version 13: the step log says more about each step: the
-- handle a branch took instead of a skipped step's (taken_handle), where
-- the step ran (ran_host, ran_pid and, on the queue, ran_worker) and the
-- confidence its node reported (NULL when it reported none). Steps
-- recorded before this version have the defaults.

ALTER TABLE steps ADD COLUMN taken_handle text NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN ran_host text NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN ran_pid integer NOT NULL DEFAULT 0;
ALTER TABLE steps ADD COLUMN ran_worker text NOT NULL DEFAULT '';
ALTER TABLE steps ADD COLUMN confidence double precision;

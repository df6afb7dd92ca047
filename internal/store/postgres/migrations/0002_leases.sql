-- Skein schema, version 2: runs are owned and leased, and steps are kept
-- per generation (one per execution: the first run, then each resume) so a
-- resume never overwrites or deletes what an earlier execution recorded.

ALTER TABLE runs
    ADD COLUMN owner_host          text        NOT NULL DEFAULT '',
    ADD COLUMN owner_pid           integer     NOT NULL DEFAULT 0,
    -- random per claim; '' when nobody owns the run
    ADD COLUMN owner_token         text        NOT NULL DEFAULT '',
    -- by the database's clock; NULL when nobody owns the run
    ADD COLUMN lease_until         timestamptz,
    ADD COLUMN cancel_requested_at timestamptz,
    ADD COLUMN generation          integer     NOT NULL DEFAULT 1;

ALTER TABLE steps
    ADD COLUMN generation    integer NOT NULL DEFAULT 1,
    ADD COLUMN process_group integer NOT NULL DEFAULT 0;
ALTER TABLE steps ALTER COLUMN generation DROP DEFAULT;
ALTER TABLE steps DROP CONSTRAINT steps_pkey;
ALTER TABLE steps ADD PRIMARY KEY (run_id, generation, node, visit);
DROP INDEX steps_by_order;
CREATE INDEX steps_by_order ON steps (run_id, generation, step_order);

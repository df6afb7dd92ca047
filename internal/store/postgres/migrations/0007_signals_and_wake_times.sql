-- Skein schema, version 7: signals, and the wake-up times of waits.
--
-- A run whose every live branch waits (for a signal, or for a long timer)
-- is left `waiting` with no owner: runs.wake_at is then its earliest
-- wake-up time (NULL when only signals can wake it), which the server
-- polls for. steps.wake_at is the wake-up time of a step that holds its
-- successors (a wait, a _delay_seconds, a signal's timeout), kept across
-- resumes so a restart neither shortens nor restarts the wait.
--
-- A signal is recorded before the run it wakes is resumed, so a crash in
-- between loses nothing: it is for one visit of one wait node, and a
-- visit takes one signal. data holds {"data": <the signal's JSON value>}.

ALTER TABLE runs ADD COLUMN wake_at timestamptz;
CREATE INDEX runs_by_wake ON runs (wake_at) WHERE status = 'waiting';

ALTER TABLE steps ADD COLUMN wake_at timestamptz;

CREATE TABLE signals (
    run_id     text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node       text        NOT NULL,
    visit      integer     NOT NULL,
    -- numbers a run's signals from 1, in the order they were recorded
    seq        bigint      NOT NULL,
    data       json,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (run_id, node, visit)
);

CREATE UNIQUE INDEX signals_by_seq ON signals (run_id, seq);

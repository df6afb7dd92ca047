-- Skein schema, version 2: runs are owned and leased, and steps are kept
-- per generation (one per execution: the first run, then each resume) so a
-- resume never overwrites or deletes what an earlier execution recorded.

ALTER TABLE runs ADD COLUMN owner_host TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN owner_pid INTEGER NOT NULL DEFAULT 0;
-- random per claim; '' when nobody owns the run
ALTER TABLE runs ADD COLUMN owner_token TEXT NOT NULL DEFAULT '';
-- microseconds, by the database's clock; 0 when nobody owns the run
ALTER TABLE runs ADD COLUMN lease_until INTEGER NOT NULL DEFAULT 0;
ALTER TABLE runs ADD COLUMN cancel_requested_at INTEGER;
ALTER TABLE runs ADD COLUMN generation INTEGER NOT NULL DEFAULT 1;

CREATE TABLE steps_v2 (
    run_id        TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    generation    INTEGER NOT NULL,
    node          TEXT    NOT NULL,
    visit         INTEGER NOT NULL,
    step_order    INTEGER NOT NULL,
    type          TEXT    NOT NULL DEFAULT '',
    iteration     INTEGER NOT NULL DEFAULT 0,
    attempts      INTEGER NOT NULL DEFAULT 0,
    status        TEXT    NOT NULL,
    params        TEXT,
    output        TEXT,
    output_ref    TEXT    NOT NULL DEFAULT '',
    error         TEXT,
    config_hash   TEXT    NOT NULL DEFAULT '',
    cached        INTEGER NOT NULL DEFAULT 0,
    pinned        INTEGER NOT NULL DEFAULT 0,
    started_at    INTEGER,
    finished_at   INTEGER,
    duration_ms   INTEGER NOT NULL DEFAULT 0,
    tokens        INTEGER NOT NULL DEFAULT 0,
    cost_usd      REAL    NOT NULL DEFAULT 0,
    process_group INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, generation, node, visit)
) STRICT;

INSERT INTO steps_v2 (run_id, generation, node, visit, step_order, type, iteration, attempts, status,
    params, output, output_ref, error, config_hash, cached, pinned, started_at, finished_at,
    duration_ms, tokens, cost_usd)
SELECT run_id, 1, node, visit, step_order, type, iteration, attempts, status,
    params, output, output_ref, error, config_hash, cached, pinned, started_at, finished_at,
    duration_ms, tokens, cost_usd FROM steps;

DROP TABLE steps;
ALTER TABLE steps_v2 RENAME TO steps;
CREATE INDEX steps_by_order ON steps (run_id, generation, step_order);

-- Skein schema, version 15: the steps an execution plans are recorded as
-- a plan row each time they are planned (the run's own steps when it
-- starts, a loop pass's or foreach item's when it is planned), not as a
-- pending step row each. A store lists a planned step as pending until a
-- step row of the same generation, node and visit is saved. steps holds a
-- JSON array of [step_order, node, visit, iteration, type] arrays. Runs
-- recorded before this version have pending step rows and no plan rows.

CREATE TABLE step_plans (
    id         INTEGER PRIMARY KEY,
    run_id     TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    steps      TEXT    NOT NULL
) STRICT;

CREATE INDEX step_plans_by_run ON step_plans (run_id, generation);

-- Skein schema, version 1. Times are INTEGER microseconds since the Unix
-- epoch (UTC); maps and node errors are JSON text; NULL means absent.

CREATE TABLE workflows (
    name       TEXT    NOT NULL,
    version    INTEGER NOT NULL,
    hash       TEXT    NOT NULL,
    source     BLOB    NOT NULL,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (name, version)
) STRICT;

CREATE TABLE runs (
    id               TEXT    NOT NULL PRIMARY KEY,
    workflow         TEXT    NOT NULL,
    workflow_version INTEGER NOT NULL DEFAULT 0,
    file             TEXT    NOT NULL DEFAULT '',
    dir              TEXT    NOT NULL DEFAULT '',
    parent_id        TEXT    NOT NULL DEFAULT '',
    trigger_node     TEXT    NOT NULL DEFAULT '',
    status           TEXT    NOT NULL,
    inputs           TEXT,
    outputs          TEXT,
    error            TEXT,
    started_at       INTEGER NOT NULL,
    finished_at      INTEGER,
    tokens           INTEGER NOT NULL DEFAULT 0,
    cost_usd         REAL    NOT NULL DEFAULT 0,
    -- the Seq of the run's last event; AppendEvents counts on from it
    event_seq        INTEGER NOT NULL DEFAULT 0
) STRICT;

CREATE INDEX runs_by_start ON runs (started_at, id);
CREATE INDEX runs_by_workflow ON runs (workflow, started_at);
CREATE INDEX runs_by_status ON runs (status, started_at);
CREATE INDEX runs_by_parent ON runs (parent_id) WHERE parent_id <> '';

CREATE TABLE steps (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node        TEXT    NOT NULL,
    visit       INTEGER NOT NULL,
    step_order  INTEGER NOT NULL,
    type        TEXT    NOT NULL DEFAULT '',
    iteration   INTEGER NOT NULL DEFAULT 0,
    attempts    INTEGER NOT NULL DEFAULT 0,
    status      TEXT    NOT NULL,
    params      TEXT,
    output      TEXT,
    output_ref  TEXT    NOT NULL DEFAULT '',
    error       TEXT,
    config_hash TEXT    NOT NULL DEFAULT '',
    cached      INTEGER NOT NULL DEFAULT 0,
    pinned      INTEGER NOT NULL DEFAULT 0,
    started_at  INTEGER,
    finished_at INTEGER,
    duration_ms INTEGER NOT NULL DEFAULT 0,
    tokens      INTEGER NOT NULL DEFAULT 0,
    cost_usd    REAL    NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, node, visit)
) STRICT;

CREATE INDEX steps_by_order ON steps (run_id, step_order);

CREATE TABLE events (
    run_id    TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq       INTEGER NOT NULL,
    time      INTEGER NOT NULL,
    type      TEXT    NOT NULL,
    node      TEXT    NOT NULL DEFAULT '',
    visit     INTEGER NOT NULL DEFAULT 0,
    iteration INTEGER NOT NULL DEFAULT 0,
    data      TEXT,
    PRIMARY KEY (run_id, seq)
) STRICT;

CREATE TABLE checkpoints (
    run_id     TEXT    NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    data       BLOB    NOT NULL,
    updated_at INTEGER NOT NULL
) STRICT;

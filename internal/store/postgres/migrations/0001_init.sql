-- Skein schema, version 1 (Postgres). The files of this folder mirror
-- store/sqlite/migrations one for one, so a schema version means the same
-- tables in both stores. Times are timestamptz (microseconds, UTC); maps
-- and node errors are json (kept as written: jsonb would reorder keys and
-- refuse \u0000); NULL means absent.

CREATE TABLE workflows (
    name       text        NOT NULL,
    version    integer     NOT NULL,
    hash       text        NOT NULL,
    source     bytea       NOT NULL,
    created_at timestamptz NOT NULL,
    PRIMARY KEY (name, version)
);

CREATE TABLE runs (
    id               text             NOT NULL PRIMARY KEY,
    workflow         text             NOT NULL,
    workflow_version integer          NOT NULL DEFAULT 0,
    file             text             NOT NULL DEFAULT '',
    dir              text             NOT NULL DEFAULT '',
    parent_id        text             NOT NULL DEFAULT '',
    trigger_node     text             NOT NULL DEFAULT '',
    status           text             NOT NULL,
    inputs           json,
    outputs          json,
    error            json,
    started_at       timestamptz      NOT NULL,
    finished_at      timestamptz,
    tokens           bigint           NOT NULL DEFAULT 0,
    cost_usd         double precision NOT NULL DEFAULT 0
);

CREATE INDEX runs_by_start ON runs (started_at, id);
CREATE INDEX runs_by_workflow ON runs (workflow, started_at);
CREATE INDEX runs_by_status ON runs (status, started_at);
CREATE INDEX runs_by_parent ON runs (parent_id) WHERE parent_id <> '';

CREATE TABLE steps (
    run_id      text             NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node        text             NOT NULL,
    visit       integer          NOT NULL,
    step_order  integer          NOT NULL,
    type        text             NOT NULL DEFAULT '',
    iteration   integer          NOT NULL DEFAULT 0,
    attempts    integer          NOT NULL DEFAULT 0,
    status      text             NOT NULL,
    params      json,
    output      json,
    output_ref  text             NOT NULL DEFAULT '',
    error       json,
    config_hash text             NOT NULL DEFAULT '',
    cached      boolean          NOT NULL DEFAULT false,
    pinned      boolean          NOT NULL DEFAULT false,
    started_at  timestamptz,
    finished_at timestamptz,
    duration_ms bigint           NOT NULL DEFAULT 0,
    tokens      bigint           NOT NULL DEFAULT 0,
    cost_usd    double precision NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, node, visit)
);

CREATE INDEX steps_by_order ON steps (run_id, step_order);

-- An event's seq is the run's largest plus one, given out while the
-- writer holds the run's row lock (SELECT … FOR NO KEY UPDATE).
CREATE TABLE events (
    run_id    text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    seq       bigint      NOT NULL,
    time      timestamptz NOT NULL,
    type      text        NOT NULL,
    node      text        NOT NULL DEFAULT '',
    visit     integer     NOT NULL DEFAULT 0,
    iteration integer     NOT NULL DEFAULT 0,
    data      json,
    PRIMARY KEY (run_id, seq)
);

CREATE TABLE checkpoints (
    run_id     text        NOT NULL PRIMARY KEY REFERENCES runs (id) ON DELETE CASCADE,
    data       bytea       NOT NULL,
    updated_at timestamptz NOT NULL
);

-- schema version 19
-- The schema migrations/ build, for a new database in one step (see freshSchema).
-- Written by `go test ./internal/store/sqlite -run TestFreshSchemaIsTheMigrated -update`; do not edit.

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
, owner_host TEXT NOT NULL DEFAULT '', owner_pid INTEGER NOT NULL DEFAULT 0, owner_token TEXT NOT NULL DEFAULT '', lease_until INTEGER NOT NULL DEFAULT 0, cancel_requested_at INTEGER, generation INTEGER NOT NULL DEFAULT 1, wake_at INTEGER, cancel_let_finish INTEGER NOT NULL DEFAULT 0, source TEXT NOT NULL DEFAULT '', replay_of TEXT NOT NULL DEFAULT '') STRICT;

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

CREATE TABLE "steps" (
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
    process_group INTEGER NOT NULL DEFAULT 0, masked INTEGER NOT NULL DEFAULT 0, wake_at INTEGER, skip_reason TEXT NOT NULL DEFAULT '', taken_handle TEXT NOT NULL DEFAULT '', ran_host TEXT NOT NULL DEFAULT '', ran_pid INTEGER NOT NULL DEFAULT 0, ran_worker TEXT NOT NULL DEFAULT '', confidence REAL, started_time INTEGER, finished_seq INTEGER, finished_time INTEGER, finished_data TEXT,
    PRIMARY KEY (run_id, generation, node, visit)
) STRICT;

CREATE TABLE api_tokens (
    id         TEXT    NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL DEFAULT '',
    scope      TEXT    NOT NULL,
    hash       BLOB    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE schedules (
    workflow     TEXT    NOT NULL,
    trigger_node TEXT    NOT NULL,
    -- the cron expression and time zone; another spec starts afresh
    spec         TEXT    NOT NULL,
    next_fire    INTEGER NOT NULL,
    -- the scheduled time of the last fire that started a run; 0 for none
    last_fire    INTEGER NOT NULL DEFAULT 0,
    last_run_id  TEXT    NOT NULL DEFAULT '',
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (workflow, trigger_node)
) STRICT;

CREATE TABLE chat_turns (
    workflow     TEXT    NOT NULL,
    conversation TEXT    NOT NULL,
    turn         INTEGER NOT NULL,
    run_id       TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    message      TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workflow, conversation, turn)
) STRICT;

CREATE TABLE signals (
    run_id     TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    node       TEXT    NOT NULL,
    visit      INTEGER NOT NULL,
    -- numbers a run's signals from 1, in the order they were recorded
    seq        INTEGER NOT NULL,
    data       TEXT,
    created_at INTEGER NOT NULL,
    PRIMARY KEY (run_id, node, visit)
) STRICT;

CREATE TABLE blobs (
    digest     TEXT    PRIMARY KEY,
    size       INTEGER NOT NULL,
    chunks     INTEGER NOT NULL,
    created_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE blob_chunks (
    digest TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    data   BLOB    NOT NULL,
    PRIMARY KEY (digest, seq)
);

CREATE TABLE memory_messages (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    workflow   TEXT    NOT NULL,
    thread     TEXT    NOT NULL,
    run_id     TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step       TEXT    NOT NULL,
    role       TEXT    NOT NULL,
    content    TEXT    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

CREATE TABLE deliveries (
    run_id      TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    generation  INTEGER NOT NULL,
    attempts    INTEGER NOT NULL DEFAULT 0,
    -- microseconds: when the next attempt is due
    next_at     INTEGER NOT NULL DEFAULT 0,
    owner_host  TEXT    NOT NULL DEFAULT '',
    owner_pid   INTEGER NOT NULL DEFAULT 0,
    owner_token TEXT    NOT NULL DEFAULT '',
    lease_until INTEGER NOT NULL DEFAULT 0,
    PRIMARY KEY (run_id, generation)
) STRICT;

CREATE TABLE step_plans (
    id         INTEGER PRIMARY KEY,
    run_id     TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    generation INTEGER NOT NULL,
    steps      TEXT    NOT NULL
) STRICT;

CREATE INDEX runs_by_start ON runs (started_at, id);

CREATE INDEX runs_by_workflow ON runs (workflow, started_at);

CREATE INDEX runs_by_status ON runs (status, started_at);

CREATE INDEX runs_by_parent ON runs (parent_id) WHERE parent_id <> '';

CREATE INDEX chat_turns_by_run ON chat_turns (run_id);

CREATE INDEX runs_by_wake ON runs (wake_at) WHERE status = 'waiting';

CREATE UNIQUE INDEX signals_by_seq ON signals (run_id, seq);

CREATE INDEX memory_messages_by_thread ON memory_messages (workflow, thread, seq);

CREATE INDEX memory_messages_by_run ON memory_messages (run_id);

CREATE INDEX step_plans_by_run ON step_plans (run_id, generation);

CREATE INDEX steps_by_finish ON steps (run_id, finished_seq) WHERE finished_seq IS NOT NULL;

CREATE TRIGGER steps_keep_events AFTER UPDATE OF finished_seq ON steps
WHEN OLD.finished_seq IS NOT NULL AND NEW.finished_seq IS NOT OLD.finished_seq
BEGIN
    INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data)
    SELECT OLD.run_id, OLD.finished_seq - 1, OLD.started_time, 'node_started', OLD.node, OLD.visit, OLD.iteration, NULL
    WHERE OLD.started_time IS NOT NULL;
    INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data)
    VALUES (OLD.run_id, OLD.finished_seq, OLD.finished_time, 'node_finished', OLD.node, OLD.visit, OLD.iteration, OLD.finished_data);
END;


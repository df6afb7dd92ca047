-- Skein schema, version 9: the memory of llm and agent nodes (memory:
-- {thread: …}): the messages of a thread, per workflow, in the order they
-- were kept, each with the run and step that kept it. A step that runs
-- again replaces what it kept before; a message goes with its run when the
-- run is pruned.

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

CREATE INDEX memory_messages_by_thread ON memory_messages (workflow, thread, seq);
CREATE INDEX memory_messages_by_run ON memory_messages (run_id);

-- Skein schema, version 9: the memory of llm and agent nodes (memory:
-- {thread: …}): the messages of a thread, per workflow, in the order they
-- were kept, each with the run and step that kept it. A step that runs
-- again replaces what it kept before; a message goes with its run when the
-- run is pruned.

CREATE TABLE memory_messages (
    seq        bigint      GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    workflow   text        NOT NULL,
    thread     text        NOT NULL,
    run_id     text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    step       text        NOT NULL,
    role       text        NOT NULL,
    content    text        NOT NULL,
    created_at timestamptz NOT NULL
);

CREATE INDEX memory_messages_by_thread ON memory_messages (workflow, thread, seq);
CREATE INDEX memory_messages_by_run ON memory_messages (run_id);

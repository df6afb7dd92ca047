-- Skein schema, version 6: the messages of chat conversations
-- (POST /api/chat/{workflow}), numbered per conversation from 1, each with
-- the run that answered it; its reply is that run's output. A message goes
-- with its run when the run is pruned.

CREATE TABLE chat_turns (
    workflow     TEXT    NOT NULL,
    conversation TEXT    NOT NULL,
    turn         INTEGER NOT NULL,
    run_id       TEXT    NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    message      TEXT    NOT NULL,
    created_at   INTEGER NOT NULL,
    PRIMARY KEY (workflow, conversation, turn)
) STRICT;

CREATE INDEX chat_turns_by_run ON chat_turns (run_id);

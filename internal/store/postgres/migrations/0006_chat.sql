-- Skein schema, version 6: the messages of chat conversations
-- (POST /api/chat/{workflow}), numbered per conversation from 1, each with
-- the run that answered it; its reply is that run's output. A message goes
-- with its run when the run is pruned.

CREATE TABLE chat_turns (
    workflow     text        NOT NULL,
    conversation text        NOT NULL,
    turn         integer     NOT NULL,
    run_id       text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    message      text        NOT NULL,
    created_at   timestamptz NOT NULL,
    PRIMARY KEY (workflow, conversation, turn)
);

CREATE INDEX chat_turns_by_run ON chat_turns (run_id);

-- Skein schema, version 14: a run records how it was started (source:
-- cli, api, webhook, schedule, chat, mcp or replay) and, for a replay,
-- the run it replays (replay_of). Runs recorded before this version have
-- an empty source.

ALTER TABLE runs ADD COLUMN source TEXT NOT NULL DEFAULT '';
ALTER TABLE runs ADD COLUMN replay_of TEXT NOT NULL DEFAULT '';

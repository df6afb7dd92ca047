-- Skein schema, version 18: the steps have the columns in which SQLite's
-- step rows carry their node's node_finished and node_started events (see
-- SQLite's migration of this version). Postgres writes every event as an
-- event row, so they stay NULL here; they keep the two stores' step
-- columns and schema numbers alike.

ALTER TABLE steps ADD COLUMN started_time timestamptz;
ALTER TABLE steps ADD COLUMN finished_seq bigint;
ALTER TABLE steps ADD COLUMN finished_time timestamptz;
ALTER TABLE steps ADD COLUMN finished_data json;

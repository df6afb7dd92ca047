-- Skein schema, version 15: in Postgres a run's row counts its events
-- (runs.event_seq), read with the row's lock. SQLite has one writer, which
-- reads the seq of a run's last event from the events' primary key in
-- process: its schema does not change. This version keeps the numbers of
-- both stores' schemas alike.

SELECT 1;

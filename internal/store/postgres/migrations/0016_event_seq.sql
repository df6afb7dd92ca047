-- Skein schema, version 15: a run's row counts its events (event_seq, the
-- seq of its last event), so a writer reads where its events go on with
-- the row it locks instead of the largest seq of the run's events. Every
-- write of events sets it in the same transaction.

ALTER TABLE runs ADD COLUMN event_seq bigint NOT NULL DEFAULT 0;

UPDATE runs r SET event_seq = e.last
FROM (SELECT run_id, MAX(seq) AS last FROM events GROUP BY run_id) e
WHERE e.run_id = r.id;

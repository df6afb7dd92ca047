-- Skein schema, version 18: a step row carries its node's node_finished
-- event, and the node_started just before it, when they were written
-- with it, instead of an event row each: the seq, time and data of the
-- finish, and the time of the start (whose seq is the finish's less one;
-- NULL: not carried). The events of a run are its event rows and those
-- its steps carry, by seq (Core.Events, through steps_by_finish). A step
-- saved again with another finish turns the events it carried into event
-- rows first (steps_keep_events), so none is lost. The run's row counts
-- its events (event_seq, a column since version 1 that SQLite left at
-- 0), as in Postgres: the seq of a run's last event is read with the row.

ALTER TABLE steps ADD COLUMN started_time INTEGER;
ALTER TABLE steps ADD COLUMN finished_seq INTEGER;
ALTER TABLE steps ADD COLUMN finished_time INTEGER;
ALTER TABLE steps ADD COLUMN finished_data TEXT;

CREATE INDEX steps_by_finish ON steps (run_id, finished_seq) WHERE finished_seq IS NOT NULL;

UPDATE runs SET event_seq = (SELECT COALESCE(MAX(seq), 0) FROM events WHERE events.run_id = runs.id);

CREATE TRIGGER steps_keep_events AFTER UPDATE OF finished_seq ON steps
WHEN OLD.finished_seq IS NOT NULL AND NEW.finished_seq IS NOT OLD.finished_seq
BEGIN
    INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data)
    SELECT OLD.run_id, OLD.finished_seq - 1, OLD.started_time, 'node_started', OLD.node, OLD.visit, OLD.iteration, NULL
    WHERE OLD.started_time IS NOT NULL;
    INSERT INTO events (run_id, seq, time, type, node, visit, iteration, data)
    VALUES (OLD.run_id, OLD.finished_seq, OLD.finished_time, 'node_finished', OLD.node, OLD.visit, OLD.iteration, OLD.finished_data);
END;

-- Skein schema, version 10: the deliveries a run owes (its workflow's
-- delivery: block), until the receiver took the result or the delivery
-- gave up. A row is written before the run's final record and deleted when
-- the delivery ends, so a process that dies while it retries leaves it
-- here for another to go on with. The owner holds it as a run's owner
-- holds a run: a lease by the database's clock, in microseconds.

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

-- Skein schema, version 10: the deliveries a run owes (its workflow's
-- delivery: block), until the receiver took the result or the delivery
-- gave up. A row is written before (or with) the run's final record and
-- deleted when the delivery ends, so a process that dies while it retries
-- leaves it here for another to go on with. The owner holds it as a run's
-- owner holds a run: a lease by the database's clock.

CREATE TABLE deliveries (
    run_id      text        NOT NULL REFERENCES runs (id) ON DELETE CASCADE,
    generation  integer     NOT NULL,
    attempts    integer     NOT NULL DEFAULT 0,
    next_at     timestamptz NOT NULL DEFAULT now(),
    owner_host  text        NOT NULL DEFAULT '',
    owner_pid   integer     NOT NULL DEFAULT 0,
    owner_token text        NOT NULL DEFAULT '',
    lease_until timestamptz,
    PRIMARY KEY (run_id, generation)
);

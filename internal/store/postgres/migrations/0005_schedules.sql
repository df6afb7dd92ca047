-- Skein schema, version 5: the state of schedule triggers. A fire is
-- claimed by moving next_fire from the value read (UPDATE … WHERE
-- next_fire = old), so servers sharing the database, or one restarted,
-- neither skip nor double a fire.

CREATE TABLE schedules (
    workflow     text        NOT NULL,
    trigger_node text        NOT NULL,
    -- the cron expression and time zone; another spec starts afresh
    spec         text        NOT NULL,
    next_fire    timestamptz NOT NULL,
    -- the scheduled time of the last fire that started a run; NULL for none
    last_fire    timestamptz,
    last_run_id  text        NOT NULL DEFAULT '',
    updated_at   timestamptz NOT NULL,
    PRIMARY KEY (workflow, trigger_node)
);

-- Skein schema, version 5: the state of schedule triggers. A fire is
-- claimed by moving next_fire from the value read (UPDATE … WHERE
-- next_fire = old), so servers sharing the database, or one restarted,
-- neither skip nor double a fire.

CREATE TABLE schedules (
    workflow     TEXT    NOT NULL,
    trigger_node TEXT    NOT NULL,
    -- the cron expression and time zone; another spec starts afresh
    spec         TEXT    NOT NULL,
    next_fire    INTEGER NOT NULL,
    -- the scheduled time of the last fire that started a run; 0 for none
    last_fire    INTEGER NOT NULL DEFAULT 0,
    last_run_id  TEXT    NOT NULL DEFAULT '',
    updated_at   INTEGER NOT NULL,
    PRIMARY KEY (workflow, trigger_node)
) STRICT;

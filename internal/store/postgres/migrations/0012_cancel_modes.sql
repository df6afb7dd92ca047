-- Skein schema, version 12: a cancel request says how the run stops. With
-- cancel_let_finish set, its owner starts nothing new and lets the nodes
-- that run finish; without it, those nodes are stopped. A request without
-- it replaces one with it (a cancel that lets nodes finish can be made
-- hard), never the reverse.

ALTER TABLE runs ADD COLUMN cancel_let_finish boolean NOT NULL DEFAULT false;

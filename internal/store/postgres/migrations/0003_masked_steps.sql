-- Skein schema, version 3: a step whose output had to be masked (it held a
-- secret) is marked, so a resume never reuses "***" as if it were the value.

ALTER TABLE steps ADD COLUMN masked boolean NOT NULL DEFAULT false;

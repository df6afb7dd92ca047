-- Skein schema, version 17: the steps lose their index by order. Every
-- read of steps takes all of a run's (or one generation's) through the
-- primary key and sorts them; the index only cost each step's write a
-- third b-tree (measured: 3–13% of a chain's or of 200 concurrent runs'
-- recording time).

DROP INDEX IF EXISTS steps_by_order;

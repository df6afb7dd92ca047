-- Skein schema, version 8: blobs.
--
-- The tables of the Postgres store's blob backend (the big values and
-- artifacts of distributed runs), mirrored so that a version means the
-- same schema in both stores. Local runs keep their blobs in the run
-- folder; these tables stay empty in SQLite.

CREATE TABLE blobs (
    digest     TEXT    PRIMARY KEY,
    size       INTEGER NOT NULL,
    chunks     INTEGER NOT NULL,
    created_at INTEGER NOT NULL DEFAULT 0
);

CREATE TABLE blob_chunks (
    digest TEXT    NOT NULL,
    seq    INTEGER NOT NULL,
    data   BLOB    NOT NULL,
    PRIMARY KEY (digest, seq)
);

-- Skein schema, version 8: blobs.
--
-- The big values and artifacts of distributed runs (package blob), kept in
-- the database every worker and the server reach: a blob is named by the
-- SHA-256 of its content and held in chunks of at most 1 MiB, numbered
-- from 0. The chunks and the row of blobs are inserted in one transaction,
-- the row last: a blob with a row is whole. Two workers that keep the same
-- digest at once insert the same rows; the second's wait on the first's
-- keys and then do nothing (ON CONFLICT DO NOTHING).

CREATE TABLE blobs (
    digest     text        PRIMARY KEY,
    size       bigint      NOT NULL,
    chunks     integer     NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE blob_chunks (
    digest text    NOT NULL,
    seq    integer NOT NULL,
    data   bytea   NOT NULL,
    PRIMARY KEY (digest, seq)
);

-- Skein schema, version 4: the API tokens of skein serve. A token is kept
-- as the SHA-256 of its text, never the text; id is its public part.

CREATE TABLE api_tokens (
    id         TEXT    NOT NULL PRIMARY KEY,
    name       TEXT    NOT NULL DEFAULT '',
    scope      TEXT    NOT NULL,
    hash       BLOB    NOT NULL,
    created_at INTEGER NOT NULL
) STRICT;

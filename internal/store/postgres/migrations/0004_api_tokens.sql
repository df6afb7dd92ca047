-- Skein schema, version 4: the API tokens of skein serve. A token is kept
-- as the SHA-256 of its text, never the text; id is its public part.

CREATE TABLE api_tokens (
    id         text        NOT NULL PRIMARY KEY,
    name       text        NOT NULL DEFAULT '',
    scope      text        NOT NULL,
    hash       bytea       NOT NULL,
    created_at timestamptz NOT NULL
);

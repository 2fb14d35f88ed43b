-- switchboard's shared state, version 8: the servers every replica serves
-- besides its own files (`switchboard team push FILE`), one switchboard
-- TOML document, announced by NOTIFY on `switchboard_config` so every
-- replica reloads it. The document defines commands the replicas run and
-- may hold secrets: it is sealed under the state key, bound to its
-- version, so one written or changed without the key is not used.

CREATE TABLE switchboard_shared_config (
    id       smallint    PRIMARY KEY CHECK (id = 1),
    version  bigint      NOT NULL CHECK (version > 0),
    document bytea       NOT NULL CHECK (length(document) <= 1048640),
    since    timestamptz NOT NULL DEFAULT now()
);

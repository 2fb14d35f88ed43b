-- switchboard's shared state, version 7: the era and transport each remote
-- server was found to speak, so a server one replica detected is connected
-- by the others without a probe. `server_key` is a keyed digest of the
-- server's URL (the URL may hold a secret, and is not kept); `verdict` is
-- sealed under the state key, bound to its key, so a row written or moved
-- without the key is not used. A verdict is a hint: one that no longer
-- holds is detected afresh and written over.

CREATE TABLE switchboard_era_verdicts (
    server_key bytea       PRIMARY KEY CHECK (length(server_key) = 32),
    verdict    bytea       NOT NULL CHECK (length(verdict) <= 256),
    since      timestamptz NOT NULL DEFAULT now()
);

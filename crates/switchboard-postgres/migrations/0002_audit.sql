-- switchboard's shared state, version 2: the audit log as one chain every
-- replica appends to. Each record is the JSON line a file log would hold,
-- its `prev` the HMAC-SHA256 (under a key derived from the state key, which
-- the database never sees) of the record before it. The head names the
-- last record and its MAC, itself under a MAC, and moves in the same
-- transaction as the records it covers: appenders take its row lock in
-- turn, so the chain has one order across replicas, and a record removed
-- from the end no longer matches it.

CREATE TABLE switchboard_audit (
    seq    bigint PRIMARY KEY CHECK (seq > 0),
    record text   NOT NULL
);

CREATE TABLE switchboard_audit_head (
    id  smallint PRIMARY KEY CHECK (id = 1),
    seq bigint   NOT NULL,
    mac text     NOT NULL,
    tag text     NOT NULL
);

-- The chain's start: no record yet, `prev` the genesis value (its tag is
-- not needed: a head moved back to here while records remain is caught by
-- the records themselves).
INSERT INTO switchboard_audit_head (id, seq, mac, tag)
VALUES (1, 0, '0000000000000000000000000000000000000000000000000000000000000000', '');

-- switchboard's shared state, version 4: tool policy rules every replica
-- enforces (`switchboard policy deny PATTERN --state …`), beside the rules
-- of each replica's config files. A change is announced on the channel
-- switchboard_policy, so every replica applies it at once.

CREATE TABLE switchboard_policy_rules (
    kind     text        NOT NULL CHECK (kind IN ('deny', 'ask')),
    pattern  text        NOT NULL CHECK (length(pattern) BETWEEN 1 AND 512),
    added_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (kind, pattern)
);

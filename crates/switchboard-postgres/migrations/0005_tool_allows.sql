-- switchboard's shared state, version 5: each user's remembered "always
-- allow" answers to the tool policy's `ask`, so an answer given through one
-- replica holds on every other and a revocation anywhere holds at once
-- (every question reads this table again; nothing is cached to announce).
-- Names are not secrets; `seal` is the state key's tag over the row's
-- values, so a row written or changed without the key allows nothing.

CREATE TABLE switchboard_tool_allows (
    user_id  text        NOT NULL CHECK (length(user_id) <= 1024),
    server   text        NOT NULL CHECK (length(server) BETWEEN 1 AND 256),
    tool     text        NOT NULL CHECK (length(tool) BETWEEN 1 AND 512),
    identity text        NOT NULL CHECK (length(identity) <= 256),
    seal     bytea       NOT NULL,
    since    timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, server, tool)
);

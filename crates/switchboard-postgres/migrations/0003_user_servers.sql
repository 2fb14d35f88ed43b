-- switchboard's shared state, version 3: each user's servers (the web
-- application's `Users`), so a login begun on one instance finishes on
-- another and a user's servers come back after a restart. A name and a URL
-- are not secrets; the tokens stay sealed in switchboard_credentials.

CREATE TABLE switchboard_user_servers (
    user_id  text        NOT NULL,
    name     text        NOT NULL,
    url      text        NOT NULL,
    added_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, name),
    UNIQUE (user_id, url)
);

-- switchboard's shared state, version 1: OAuth credentials per user and
-- pending logins. Secrets are sealed (AES-256-GCM) by the application with
-- a key the database never sees; each row's sealed value is bound to its
-- own key columns, so a row copied under another user or server does not
-- open.

CREATE TABLE switchboard_credentials (
    user_id    text        NOT NULL,
    resource   text        NOT NULL,
    issuer     text        NOT NULL,
    sealed     bytea       NOT NULL,
    updated_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (user_id, resource, issuer)
);

CREATE TABLE switchboard_pending_logins (
    state    text        PRIMARY KEY,
    user_id  text        NOT NULL,
    sealed   bytea       NOT NULL,
    begun_at timestamptz NOT NULL DEFAULT now()
);

CREATE INDEX switchboard_pending_logins_begun ON switchboard_pending_logins (begun_at);

-- switchboard's shared state, version 6: a shared policy rule may name
-- whom it holds for — one host user (`user:SUB`, their token's subject) or
-- the members of a group their token names (`group:NAME`); '' is everyone,
-- as every rule was before.

ALTER TABLE switchboard_policy_rules
    ADD COLUMN scope text NOT NULL DEFAULT '' CHECK (length(scope) <= 1100);
ALTER TABLE switchboard_policy_rules DROP CONSTRAINT switchboard_policy_rules_pkey;
ALTER TABLE switchboard_policy_rules ADD PRIMARY KEY (kind, pattern, scope);

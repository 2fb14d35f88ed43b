#!/usr/bin/env bash
# The PostgreSQL the state store's tests start for themselves (initdb and
# pg_ctl from Debian's `postgresql`, run as the `postgres` user on a Unix
# socket in a temporary directory).
exec bash "$(dirname "$0")/apt-install.sh" install-postgres \
  'ls /usr/lib/postgresql/*/bin/initdb || command -v pg_config' \
  "the state store's tests" postgresql

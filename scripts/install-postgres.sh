#!/usr/bin/env bash
# The PostgreSQL the state store's tests start for themselves (initdb and
# pg_ctl from Debian's `postgresql`, run as the `postgres` user on a Unix
# socket in a temporary directory): installed with apt-get when missing and
# this runs as root; otherwise it says what to install, and those tests skip
# (or fail, with SWITCHBOARD_REQUIRE_INTEROP=1, as in CI, saying so).
set -uo pipefail
if ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v pg_config >/dev/null; then
  exit 0
fi
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  echo "install-postgres: installing postgresql (apt-get)"
  for attempt in 1 2 3; do
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; then
      exit 0
    fi
    echo "install-postgres: apt-get failed (attempt $attempt of 3)"
    sleep 5
  done
  echo "install-postgres: could not install postgresql; the state store's tests will say so"
else
  echo "install-postgres: no PostgreSQL; install Debian's postgresql (or your system's) to run the state store's tests"
fi

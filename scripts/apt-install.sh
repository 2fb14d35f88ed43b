#!/usr/bin/env bash
# Installs Debian packages a group of tests needs, when missing:
#   scripts/apt-install.sh NAME "CHECK" "WHAT FOR" PACKAGE...
# CHECK is a shell test that holds once they are installed. With apt-get
# and root, installs them (three attempts); otherwise says what to install,
# and those tests skip (or fail, with SWITCHBOARD_REQUIRE_INTEROP=1, as in
# CI, saying what is missing).
set -uo pipefail
name="$1" check="$2" what="$3"
shift 3
if eval "$check" >/dev/null 2>&1; then
  exit 0
fi
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  echo "$name: installing $* (apt-get)"
  for attempt in 1 2 3; do
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "$@" >/dev/null; then
      exit 0
    fi
    echo "$name: apt-get failed (attempt $attempt of 3)"
    sleep 5
  done
  echo "$name: could not install $*; $what will say so"
else
  echo "$name: missing; install Debian's $* (or your system's) to run $what"
fi

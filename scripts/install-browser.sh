#!/usr/bin/env bash
# The browser the console's tests drive: Chromium and its WebDriver
# (Debian's `chromium` and `chromium-driver`), installed with apt-get when
# missing and this runs as root; otherwise it says what to install, and the
# browser tests skip (or fail, with SWITCHBOARD_REQUIRE_INTEROP=1, as in CI,
# saying what is missing).
set -uo pipefail
if command -v chromedriver >/dev/null && { command -v chromium >/dev/null || command -v chromium-browser >/dev/null; }; then
  exit 0
fi
if [[ "$(id -u)" == 0 ]] && command -v apt-get >/dev/null; then
  echo "install-browser: installing chromium and chromium-driver (apt-get)"
  for attempt in 1 2 3; do
    if apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >/dev/null; then
      exit 0
    fi
    echo "install-browser: apt-get failed (attempt $attempt of 3)"
    sleep 5
  done
  echo "install-browser: could not install chromium and chromium-driver; the console's browser tests will say so"
else
  echo "install-browser: no chromium/chromedriver; install Debian's chromium and chromium-driver (or your system's) to run the console's browser tests"
fi

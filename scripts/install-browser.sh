#!/usr/bin/env bash
# The browser the console's tests drive: Chromium and its WebDriver
# (Debian's `chromium` and `chromium-driver`).
exec bash "$(dirname "$0")/apt-install.sh" install-browser \
  'command -v chromedriver && { command -v chromium || command -v chromium-browser; }' \
  "the console's browser tests" chromium chromium-driver

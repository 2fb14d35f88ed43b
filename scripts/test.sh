#!/usr/bin/env bash
# Runs every test: unit, engine, process and interop tests.
# Installs the npm reference server into the local cache first (skipped with a
# message when npm is absent; the interop tests then skip too, unless
# SWITCHBOARD_REQUIRE_INTEROP=1, as in CI, makes that a failure), and Chromium
# with its WebDriver for the console's browser tests, PostgreSQL for the
# state store's and nginx for the team gateway's (apt-get, as root).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install-interop.sh
bash scripts/install-browser.sh
bash scripts/install-postgres.sh
bash scripts/install-nginx.sh
cargo test --workspace --all-targets "$@"
cargo test --workspace --doc

#!/usr/bin/env bash
# Packages every publishable crate of the workspace (every member without
# `publish = false`) as `cargo publish` would, and builds each from its
# package (cargo's verify step), against the others' packages: what
# crates.io would get is complete, its metadata is filled in, and every
# path dependency carries a version.
#
#   scripts/package.sh [CARGO PACKAGE ARGS…]   # e.g. --allow-dirty, --no-verify
#
# The .crate files land in $CARGO_TARGET_DIR/package (else target/package).
set -euo pipefail
cd "$(dirname "$0")/.."

mapfile -t crates < <(cargo metadata --no-deps --format-version 1 | python3 -c '
import json, sys
for package in json.load(sys.stdin)["packages"]:
    if package["publish"] != []:
        print(package["name"])
')
if [ "${#crates[@]}" -eq 0 ]; then
    echo "package: no publishable crate found" >&2
    exit 1
fi
echo "package: ${crates[*]}"
# cargo unpacks the packages it verifies against from a local registry
# into $CARGO_HOME/registry/src/<that registry>/NAME-VERSION and keeps them:
# the next run, same version, would build against the stale copy. Start
# both clean (never touching crates.io's own folders).
# Builds of a registry package are never judged stale either, so the
# verify step's builds of ours go too.
target="${CARGO_TARGET_DIR:-target}"
rm -rf "$target/package"
for dir in "$target/debug/.fingerprint" "$target/debug/deps" "$target/debug/build"; do
    rm -rf "$dir"/switchboard-* "$dir"/libswitchboard_* "$dir"/switchboard_*
done
args=()
for crate in "${crates[@]}"; do
    args+=(-p "$crate")
    for unpacked in "${CARGO_HOME:-$HOME/.cargo}"/registry/src/*/"$crate"-[0-9]*; do
        case "$unpacked" in
        */index.crates.io-*) ;;
        *) rm -rf "$unpacked" ;;
        esac
    done
done
cargo package "${args[@]}" "$@"

#!/usr/bin/env bash
# Prints gattbridge's version, read from its one source: Sources/gattbridge/GattBridgeVersion.swift (what
# `gattbridge --version` prints). The Makefile and the Debian packaging (scripts/deb/) use it.
set -euo pipefail
REPO="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
file="$REPO/Sources/gattbridge/GattBridgeVersion.swift"
version="$(sed -n 's/^ *static let string = "\([^"]*\)"$/\1/p' "$file")"
# A Debian version: digits first, then letters, digits and . + ~ (no "-": the package is native).
if ! [[ "$version" =~ ^[0-9][A-Za-z0-9.+~]*$ ]]; then
    echo "version.sh: no usable version in $file (static let string = \"X.Y.Z\"): '${version}'" >&2
    exit 1
fi
echo "$version"

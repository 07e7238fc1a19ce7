#!/usr/bin/env bash
# Builds one web-server prototype (or all) in release, static Swift standard library, stripped, with the daemon's
# release link flags (the Makefile's RELEASE_FLAGS less its symbol order and linker scripts, which are the daemon's own).
# Usage: bench/web-candidates/build.sh [NAME...]   (default: all). One at a time: the machine has 2 cores.
# Prints "NAME build-seconds binary-path". Scratch folders: NAME/.build-static.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
names=("$@"); [ ${#names[@]} -gt 0 ] || names=(baseline libmicrohttpd-proto flyingfox-proto hummingbird-proto)
cxx_dir="$here/.build-cxx"; mkdir -p "$cxx_dir"
archive="$("$(dirname "$(readlink -f "$(command -v swift)")")/clang" -print-file-name=libstdc++.a 2>/dev/null || true)"
if [ -f "$archive" ]; then ln -sfn "$archive" "$cxx_dir/libstdc++.a"; fi
flags=(-c release --static-swift-stdlib
  -Xswiftc -use-ld=lld -Xlinker -z -Xlinker pack-relative-relocs -Xlinker --no-export-dynamic
  -Xswiftc -Xclang-linker -Xswiftc -static-libgcc -Xswiftc "-L$cxx_dir")
for n in "${names[@]}"; do
  cd "$here/$n"
  start=$(date +%s)
  mkdir -p .build-static
  swift build "${flags[@]}" --scratch-path .build-static >.build-static/build.log 2>&1 \
    || { tail -30 .build-static/build.log >&2; exit 1; }
  secs=$(( $(date +%s) - start ))
  case "$n" in
    baseline) exe=Baseline ;; libmicrohttpd-proto) exe=MHDProto ;; flyingfox-proto) exe=FFProto ;; hummingbird-proto) exe=HBProto ;;
  esac
  bin="$(swift build "${flags[@]}" --scratch-path .build-static --show-bin-path)/$exe"
  strip -o "$bin.stripped" "$bin"
  echo "$n $secs $bin.stripped"
done

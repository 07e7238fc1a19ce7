#!/usr/bin/env bash
# Builds the web-server prototypes of issue 43 one at a time (build.sh: release, static Swift standard library, the
# daemon's link flags, stripped), then prints, per candidate: build time, stripped size, shared libraries, Foundation
# linked or not; and measure.py's table (idle RssAnon/Pss, threads, wake-ups, CPU; one SSE client; a stalled client).
# Usage: [CLEAN=1] bench/web-candidates/measure.sh [NAME...]  (CLEAN=1: from clean, so the build time is a first build)
#         (default: baseline libmicrohttpd-proto flyingfox-proto hummingbird-proto)
# Needs: swift 6.2+, libmicrohttpd-dev, python3. Takes ~15 min from clean (hummingbird's build is most of it), then
# ~2.5 min of measuring per candidate. Results in docs/dev/web-server.md.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
names=("$@"); [ ${#names[@]} -gt 0 ] || names=(baseline libmicrohttpd-proto flyingfox-proto hummingbird-proto)
args=()
echo "| candidate | build (s, this run) | stripped size | unstripped | NEEDED | Foundation in the binary (symbol bytes) | packages resolved |"
echo "| --- | --- | --- | --- | --- | --- | --- |"
for n in "${names[@]}"; do
  [ "${CLEAN:-0}" = 1 ] && rm -rf "$here/$n/.build-static"
  read -r _ secs bin < <("$here/build.sh" "$n")
  raw="${bin%.stripped}"
  needed="$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | { grep -v '^ld-linux\|^libc.so\|^libm.so' || true; } | tr '\n' ' ')"
  fnd="$(python3 "$here/foundation_bytes.py" "$raw")"
  pkgs="$( [ -f "$here/$n/Package.resolved" ] && grep -c '"identity"' "$here/$n/Package.resolved" || echo 0)"
  printf '| %s | %s | %.1f MB | %.1f MB | %s | %s | %s |\n' "$n" "$secs" "$(stat -c %s "$bin" | awk '{print $1/1e6}')" \
    "$(stat -c %s "$raw" | awk '{print $1/1e6}')" "${needed:-none}" "$fnd" "$pkgs"
  args+=("$n=$bin")
done
echo
[ "${BUILD_ONLY:-0}" = 1 ] || python3 "$here/measure.py" "${args[@]}"

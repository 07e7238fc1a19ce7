#!/usr/bin/env bash
# `make release ARCH=arm64`: the release binary for aarch64 (a Raspberry Pi with a 64-bit OS), cross-compiled on an
# amd64 Debian machine with the toolchain of toolchain.sh, with the same flags as the amd64 release (the Makefile's
# RELEASE_FLAGS: static Swift runtime, lld with packed relocations, symbol order, read-only .rodata), plus the glibc
# 2.38 forwarders (glibc-compat.c). Prints the binary's path: .build-arm64/release/gattbridge.
#
# Then checks what a Pi needs of it: aarch64, no Swift, C++ or libgcc runtime loaded dynamically, no glibc symbol
# newer than 2.36 (bookworm's).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_invoking_user "$@"

bash "$REPO/scripts/arm64/toolchain.sh"

SCRATCH="$REPO/.build-arm64"
compat="$SYSROOT/usr/lib/gattbridge-compat"
flags="$(make -s -C "$REPO" --no-print-directory print-release-flags RELEASE_CXX_DIR="$compat")"
pkgconfig="$SYSROOT/usr/lib/$GNU_TRIPLET/pkgconfig:$SYSROOT/usr/share/pkgconfig"

# In the sid root as the invoking user (chroot.sh): the compile reads and writes only what that user may.
log "swift build for $TRIPLE (log: .build-arm64/build.log)"
mkdir -p "$SCRATCH"
started=$(date +%s)
if ! bash "$REPO/scripts/arm64/chroot.sh" sh -c "cd '$REPO' && \
        PKG_CONFIG_SYSROOT_DIR='$SYSROOT' PKG_CONFIG_LIBDIR='$pkgconfig' PKG_CONFIG_PATH='$pkgconfig' \
        swift build --scratch-path '$SCRATCH' --swift-sdks-path '$SDK_DIR' --swift-sdk '$SDK_NAME' \
            $flags -Xlinker -s -Xlinker '$compat/libglibc-compat.a' --product gattbridge" \
        > "$SCRATCH/build.log" 2>&1; then
    tail -40 "$SCRATCH/build.log" >&2
    fail "swift build for $TRIPLE"
fi
# SwiftPM links .build-arm64/release to the target's folder itself.
bin="$SCRATCH/$TRIPLE/release/gattbridge"
[ -x "$bin" ] && [ ! -L "$bin" ] || fail "no binary at $bin"
log "built in $(($(date +%s) - started)) s: $bin"

# --- what a Pi needs of it ----------------------------------------------------------------------------------------
readelf -h "$bin" | grep -q 'Machine:.*AArch64' || fail "$bin is not an aarch64 binary"
needed="$(readelf -d "$bin" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | tr '\n' ' ')"
case " $needed " in
    *libswift*|*libstdc++*|*libgcc_s*|*libdispatch*|*libFoundation*) fail "links a runtime dynamically: $needed" ;;
esac
newest="$(readelf -V "$bin" | grep -o 'GLIBC_2\.[0-9]*' | sort -t. -k2 -n -u | tail -1)"
[ "${newest#GLIBC_2.}" -le 36 ] || fail "needs $newest; bookworm has glibc 2.36"
log "aarch64; NEEDED: $needed; newest glibc symbol version: $newest"
echo "$SCRATCH/release/gattbridge"

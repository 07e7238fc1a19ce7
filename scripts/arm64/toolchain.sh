#!/usr/bin/env bash
# Prepares (once) and checks (every time, in about a second) the arm64 cross toolchain:
#
#   root's part, ARM64_ROOT_CACHE (toolchain-root.sh, as root: through sudo when run as a user)
#     tools/debootstrap, sid-root/   the sid amd64 root the compiler and the package tools run in
#   the invoking user's part, ARM64_CACHE (this script, as that user)
#     tools/        qemu-user-static (bookworm's), unpacked, not installed
#     sdk/          a Swift SDK bundle for aarch64-unknown-linux-gnu whose sysroot holds bookworm's arm64 -dev closure
#                   (glibc 2.36), sid's arm64 Swift standard library of the same version as the compiler, a dpkg
#                   database of what was unpacked (for dpkg-shlibdeps) and the glibc 2.38 forwarders (glibc-compat.c)
#     home/         HOME in the sid root (SwiftPM's caches)
#
# Each stage is stamped with the versions it was made from and made again only when they change. About 1.4 GB of
# downloads and 5 GB of disk the first time; see docs for the times. Root is needed for debootstrap and apt in the sid
# root only (lib.sh says why and what is checked). The host's apt state is never touched (lib.sh: papt).
set -euo pipefail
# shellcheck source=lib.sh
. "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
as_invoking_user "$@"

[ "$(dpkg --print-architecture)" = amd64 ] || fail "the cross-build runs on an amd64 Debian machine"
started=$(date +%s)
if [ "$(id -u)" -eq 0 ]; then
    bash "$(dirname "$0")/toolchain-root.sh"
else
    sudo --preserve-env=ARM64_ROOT_CACHE,ARM64_MIRROR,ARM64_RELEASE_MIN_VALID_DAYS \
        "$BASH" "$(dirname "$0")/toolchain-root.sh"
fi
mkdir -p "$ARM64_CACHE" "$TOOLS" "$DOWNLOADS" "$ARM64_CACHE/home"
# One preparation at a time: `make test` starts one in the background early (it is mostly downloads and unpacking)
# and the arm64 test's own call waits here for it, then finds every stage done.
exec 9> "$ARM64_CACHE/.lock"
flock 9

stamp_ok() { [ "$(cat "$1" 2>/dev/null)" = "$2" ]; }

# --- tools ------------------------------------------------------------------------------------------------------
tools_key="qemu-user-static-bookworm v2"
if ! stamp_ok "$TOOLS/.stamp" "$tools_key"; then
    log "fetching qemu-user-static"
    rm -rf "$TOOLS" && mkdir -p "$TOOLS/debs"
    papt_update "$TARGET_SUITE" amd64
    (cd "$TOOLS/debs" && papt "$TARGET_SUITE" amd64 apt-get download -qq qemu-user-static >/dev/null) \
        || fail "downloading qemu-user-static"
    dpkg-deb --fsys-tarfile "$TOOLS"/debs/qemu-user-static_*.deb \
        | tar -x -C "$TOOLS" --strip-components=3 ./usr/bin/qemu-aarch64-static
    rm -rf "$TOOLS/debs"
    echo "$tools_key" > "$TOOLS/.stamp"
fi

# --- the SDK: sysroot and bundle --------------------------------------------------------------------------------
# What the binary links against: the same libraries as the amd64 build (Package.swift's system libraries), and the
# C and C++ runtime pieces the Swift driver links statically.
SYSROOT_PACKAGES="libc6-dev libgcc-12-dev libstdc++-12-dev libdbus-1-dev libmosquitto-dev libsystemd-dev libyaml-dev
libssl-dev libmicrohttpd-dev libprotobuf-c-dev"
sdk_key="swift $SWIFT_DEBIAN_VERSION; $TARGET_SUITE: $(echo $SYSROOT_PACKAGES); $(cat "$(dirname "$0")/glibc-compat.c" "$(dirname "$0")/sysroot-dpkg-db.sh" | sha256sum | cut -c1-16) v2"
if ! stamp_ok "$SDK_DIR/.stamp" "$sdk_key"; then
    log "building the Swift SDK for $TRIPLE ($TARGET_SUITE sysroot)"
    rm -rf "$SDK_DIR" "$DOWNLOADS/$TARGET_SUITE-arm64-dev"
    fetch_closure "$TARGET_SUITE" arm64 "$DOWNLOADS/$TARGET_SUITE-arm64-dev" $SYSROOT_PACKAGES
    papt_update sid arm64
    mkdir -p "$DOWNLOADS/sid-arm64"
    (cd "$DOWNLOADS/sid-arm64" && for p in swiftlang libswiftlang; do
        [ -f "${p}_${SWIFT_DEBIAN_VERSION/+/%2b}_arm64.deb" ] || [ -f "${p}_${SWIFT_DEBIAN_VERSION}_arm64.deb" ] \
            || papt sid arm64 apt-get download -qq "$p=$SWIFT_DEBIAN_VERSION" >/dev/null || exit 1
    done) || fail "downloading the arm64 Swift standard library"

    mkdir -p "$SYSROOT"
    debs=("$DOWNLOADS/$TARGET_SUITE-arm64-dev"/*.deb)
    unpack_into "$SYSROOT" "${debs[@]}"
    # A dpkg database of the sysroot, so that dpkg-shlibdeps (--admindir) finds which package and which symbols
    # file gives each library the binary needs, exactly as on an arm64 machine.
    bash "$(dirname "$0")/sysroot-dpkg-db.sh" "$SYSROOT" "${debs[@]}"
    # The arm64 Swift resources (standard library, static runtime, clang headers), without the compiler's own host
    # libraries, the package manager's and the embedded ones (the cross compiler is the sid root's).
    for p in swiftlang libswiftlang; do
        dpkg-deb --fsys-tarfile "$DOWNLOADS"/sid-arm64/${p}_*_arm64.deb | tar -x -C "$SYSROOT" \
            --wildcards './usr/libexec/swift/lib/swift/*' './usr/libexec/swift/lib/swift_static/*' \
            './usr/libexec/swift/lib/clang/*' \
            --exclude './usr/libexec/swift/lib/swift/host' --exclude './usr/libexec/swift/lib/swift/pm' \
            --exclude './usr/libexec/swift/lib/swift/embedded' --exclude './usr/libexec/swift/lib/swift_static/embedded' \
            2>/dev/null || true
    done
    [ -d "$SYSROOT/usr/libexec/swift/lib/swift_static/linux" ] || fail "no static Swift runtime in swiftlang:arm64"
    mv "$SYSROOT/usr/libexec/swift/lib/swift" "$SYSROOT/usr/libexec/swift/lib/swift_static" \
        "$SYSROOT/usr/libexec/swift/lib/clang" "$SYSROOT/usr/lib/"
    rm -rf "$SYSROOT/usr/libexec/swift"
    relativize_links "$SYSROOT"

    # glibc 2.38 forwarders and the static libstdc++ the release flags ask for (-L RELEASE_CXX_DIR).
    compat="$SYSROOT/usr/lib/gattbridge-compat"
    mkdir -p "$compat"
    ln -sfn "../gcc/$GNU_TRIPLET/12/libstdc++.a" "$compat/libstdc++.a"
    bash "$(dirname "$0")/chroot.sh" sh -c "
        clang=\$(dirname \$(readlink -f \$(command -v swiftc)))/clang
        \$clang --target=$GNU_TRIPLET --sysroot='$SYSROOT' -O2 -fPIC -Wall -Werror -c \
            '$REPO/scripts/arm64/glibc-compat.c' -o '$compat/glibc-compat.o' &&
        ar rcs '$compat/libglibc-compat.a' '$compat/glibc-compat.o' && rm '$compat/glibc-compat.o'" \
        || fail "compiling glibc-compat.c"

    bundle="$SDK_DIR/$SDK_NAME.artifactbundle"
    cat > "$bundle/info.json" <<JSON
{
  "schemaVersion": "1.0",
  "artifacts": {
    "$SDK_NAME": {
      "type": "swiftSDK",
      "version": "${SWIFT_DEBIAN_VERSION%%-*}",
      "variants": [{ "path": "$SDK_NAME/$TRIPLE" }]
    }
  }
}
JSON
    cat > "$bundle/$SDK_NAME/$TRIPLE/swift-sdk.json" <<JSON
{
  "schemaVersion": "4.0",
  "targetTriples": {
    "$TRIPLE": {
      "sdkRootPath": "sysroot",
      "swiftResourcesPath": "sysroot/usr/lib/swift",
      "swiftStaticResourcesPath": "sysroot/usr/lib/swift_static",
      "toolsetPaths": ["toolset.json"]
    }
  }
}
JSON
    cat > "$bundle/$SDK_NAME/$TRIPLE/toolset.json" <<JSON
{
  "schemaVersion": "1.0",
  "swiftCompiler": { "extraCLIOptions": ["-use-ld=lld"] }
}
JSON
    rm -rf "$DOWNLOADS/$TARGET_SUITE-arm64-dev"
    echo "$sdk_key" > "$SDK_DIR/.stamp"
fi
log "toolchain ready in $ARM64_CACHE ($(($(date +%s) - started)) s)"

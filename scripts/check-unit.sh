#!/usr/bin/env bash
# Checks systemd/gattbridge.service: `systemd-analyze verify` must print nothing, the overall exposure from
# `systemd-analyze security --offline=yes` must be at most 1.5 and equal to the figure printed in docs/security.md, and
# MemoryMax= must be set. Checks systemd/gattbridge-dbus.conf, the D-Bus policy: a busconfig of allow rules for the
# gattbridge user only, with attributes dbus-daemon knows, that a real dbus-daemon loads.
# Needs systemd-analyze (Debian/Ubuntu package "systemd") and python3; dbus-daemon when installed. Does not need a
# running systemd.
set -euo pipefail
cd "$(dirname "$0")/.."

UNIT=systemd/gattbridge.service
LIMIT=1.5
POLICY=systemd/gattbridge-dbus.conf
command -v systemd-analyze >/dev/null || { echo "check-unit: systemd-analyze not found (apt-get install systemd)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
# verify insists that ExecStart's binary exists; the installed path does not exist on a build machine, so point
# that one line at an executable that does. Everything else is checked as shipped.
sed "s|^ExecStart=/usr/local/bin/gattbridge |ExecStart=$(command -v true) |" "$UNIT" > "$work/gattbridge.service"
grep -q "^ExecStart=$(command -v true) " "$work/gattbridge.service" || { echo "check-unit: unexpected ExecStart in $UNIT" >&2; exit 1; }

if ! out=$(systemd-analyze verify "$work/gattbridge.service" 2>&1) || [ -n "$out" ]; then
    echo "check-unit: systemd-analyze verify $UNIT is not clean:" >&2
    echo "$out" >&2
    exit 1
fi

report=$(systemd-analyze security --offline=yes "$work/gattbridge.service")
exposure=$(sed -n 's/.*Overall exposure level for gattbridge.service: \([0-9.]*\).*/\1/p' <<<"$report")
[ -n "$exposure" ] || { echo "check-unit: no exposure figure in:" >&2; echo "$report" >&2; exit 1; }
if ! awk -v e="$exposure" -v l="$LIMIT" 'BEGIN { exit !(e <= l) }'; then
    echo "check-unit: exposure $exposure is above $LIMIT:" >&2
    grep '✗' <<<"$report" >&2
    exit 1
fi
documented=$(sed -n 's/.*Overall exposure level for gattbridge.service: \([0-9.]*\).*/\1/p' docs/security.md | head -1)
if [ "$documented" != "$exposure" ]; then
    echo "check-unit: docs/security.md says exposure ${documented:-(nothing)}, systemd-analyze says $exposure; update docs/security.md" >&2
    exit 1
fi
grep -Eq '^MemoryMax=[0-9]+[KMG]?$' "$UNIT" || { echo "check-unit: $UNIT sets no MemoryMax=" >&2; exit 1; }

# The policy. The busconfig DTD that dbus ships predates send_destination/send_interface (every real policy file
# fails it), so the structure is checked here, and dbus-daemon itself, which is the parser that matters, loads it.
python3 - "$POLICY" <<'PY'
import sys
import xml.etree.ElementTree as ET

KNOWN = {"user", "group", "own", "own_prefix", "eavesdrop", "max_fds", "min_fds", "send_interface", "send_member",
         "send_error", "send_broadcast", "send_destination", "send_destination_prefix", "send_type", "send_path",
         "send_requested_reply", "receive_interface", "receive_member", "receive_error", "receive_sender",
         "receive_type", "receive_path", "receive_requested_reply"}
path = sys.argv[1]
def fail(message):
    sys.exit(f"check-unit: {path}: {message}")
try:
    root = ET.parse(path).getroot()
except ET.ParseError as error:
    fail(f"not well-formed XML: {error}")
if root.tag != "busconfig":
    fail(f"root element is <{root.tag}>, not <busconfig>")
policies = list(root)
if [(p.tag, p.attrib) for p in policies] != [("policy", {"user": "gattbridge"})]:
    fail("expected exactly one <policy user=\"gattbridge\">")
for rule in policies[0]:
    if rule.tag != "allow":
        fail(f"<{rule.tag}>: only <allow> rules belong here")
    unknown = set(rule.attrib) - KNOWN
    if unknown:
        fail(f"unknown attribute(s) {sorted(unknown)}")
    if any(key.startswith("own") for key in rule.attrib):
        fail("the daemon owns no bus name")
    if not (("send_destination" in rule.attrib and "send_interface" in rule.attrib)
            or ("receive_sender" in rule.attrib and "receive_interface" in rule.attrib)):
        fail(f"too broad: {rule.attrib} (name a destination and an interface, or a sender and an interface)")
PY
if command -v dbus-daemon >/dev/null; then
    cat > "$work/bus.conf" <<XML
<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <listen>unix:path=$work/bus</listen>
  <auth>EXTERNAL</auth>
  <include>$PWD/$POLICY</include>
</busconfig>
XML
    # It warns (and goes on) when the user does not exist on this machine; a syntax error stops it.
    if ! pid=$(dbus-daemon --config-file="$work/bus.conf" --fork --print-pid=1 2>"$work/dbus.err"); then
        echo "check-unit: dbus-daemon does not load $POLICY:" >&2
        cat "$work/dbus.err" >&2
        exit 1
    fi
    kill "$pid"
else
    echo "check-unit: dbus-daemon not installed; $POLICY checked for structure only" >&2
fi
echo "check-unit: verify clean; exposure $exposure (limit $LIMIT); MemoryMax set; $POLICY valid"

#!/usr/bin/env python3
"""Generates the ESPHome native API's wire code that the Bluetooth proxy links (docs/dev/esphome-proxy.md).

From ESPHome's api.proto (aioesphomeapi's copy of it), keeps only the messages the proxy speaks and the types they
reference, without imports or ESPHome's custom options, and writes:

  Sources/CESPHomeProto/esphome_api.proto          the subset, with where it came from
  Sources/CESPHomeProto/esphome_api.pb-c.c         protoc-c's C (protobuf-c 1.4, Debian's libprotobuf-c-dev)
  Sources/CESPHomeProto/include/esphome_api.pb-c.h
  Sources/ESPHomeAPI/APIMessageIDs.swift           each kept message's `option (id)` as a Swift constant

Usage:
  scripts/esphome/generate-proto.py [--proto PATH]   regenerate (default: the aioesphomeapi mirror's HEAD, by git show)
  scripts/esphome/generate-proto.py --check          regenerate from the committed subset into a temporary
                                                      directory and diff with what is committed
"""
import argparse
import difflib
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MIRROR = "/work/.mirror/esphome+aioesphomeapi/repo"
MIRROR_PATH = "aioesphomeapi/api.proto"
C_DIR = os.path.join(ROOT, "Sources", "CESPHomeProto")
SUBSET = os.path.join(C_DIR, "esphome_api.proto")
IDS_SWIFT = os.path.join(ROOT, "Sources", "ESPHomeAPI", "APIMessageIDs.swift")
PACKAGE = "esphome"  # C names get an `Esphome__` prefix, so they cannot collide with the Swift layer's; not on the wire

# The messages the proxy sends or answers; the types they reference come along by themselves.
KEEP = [
    "HelloRequest", "HelloResponse",
    "AuthenticationRequest", "AuthenticationResponse",
    "DisconnectRequest", "DisconnectResponse",
    "PingRequest", "PingResponse",
    "DeviceInfoRequest", "DeviceInfoResponse",
    "ListEntitiesRequest", "ListEntitiesDoneResponse",
    "SubscribeStatesRequest", "SubscribeLogsRequest",
    "SubscribeHomeassistantServicesRequest", "SubscribeHomeAssistantStatesRequest",
    "GetTimeRequest", "GetTimeResponse",
    "SubscribeBluetoothLEAdvertisementsRequest", "UnsubscribeBluetoothLEAdvertisementsRequest",
    "BluetoothLERawAdvertisementsResponse",
    "BluetoothDeviceRequest", "BluetoothDeviceConnectionResponse",
    "BluetoothGATTGetServicesRequest", "BluetoothGATTGetServicesResponse", "BluetoothGATTGetServicesDoneResponse",
    "BluetoothGATTReadRequest", "BluetoothGATTReadResponse",
    "BluetoothGATTWriteRequest", "BluetoothGATTWriteResponse",
    "BluetoothGATTReadDescriptorRequest", "BluetoothGATTWriteDescriptorRequest",
    "BluetoothGATTNotifyRequest", "BluetoothGATTNotifyResponse", "BluetoothGATTNotifyDataResponse",
    "BluetoothGATTErrorResponse",
    "SubscribeBluetoothConnectionsFreeRequest", "BluetoothConnectionsFreeResponse",
    "BluetoothDevicePairingResponse", "BluetoothDeviceUnpairingResponse", "BluetoothDeviceClearCacheResponse",
    "BluetoothScannerStateResponse", "BluetoothScannerSetModeRequest",
    "BluetoothSetConnectionParamsRequest", "BluetoothSetConnectionParamsResponse",
]

SCALARS = {"double", "float", "int32", "int64", "uint32", "uint64", "sint32", "sint64", "fixed32", "fixed64",
           "sfixed32", "sfixed64", "bool", "string", "bytes"}


def strip_comments(text):
    text = re.sub(r"/\*.*?\*/", "", text, flags=re.S)
    return re.sub(r"//[^\n]*", "", text)


def top_level_blocks(text):
    """(kind, name, body) of each top-level message/enum; anything else (syntax, import, service) is dropped."""
    blocks, i = [], 0
    pattern = re.compile(r"\b(message|enum|service)\s+(\w+)\s*\{")
    while True:
        m = pattern.search(text, i)
        if not m:
            return blocks
        depth, j = 1, m.end()
        while depth:
            if j >= len(text):
                sys.exit(f"unbalanced braces after {m.group(2)}")
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        if m.group(1) != "service":
            blocks.append((m.group(1), m.group(2), text[m.end():j - 1]))
        i = j


def clean_body(body):
    """The body's statements without options: (statements, id or None)."""
    message_id = None
    statements = []
    for stmt in body.split(";"):
        stmt = " ".join(stmt.split())
        if not stmt:
            continue
        if stmt.startswith("option"):
            m = re.match(r"option\s*\(id\)\s*=\s*(\d+)$", stmt)
            if m:
                message_id = int(m.group(1))
            continue
        if "{" in stmt or "}" in stmt:
            sys.exit(f"nested declaration not handled: {stmt!r}")
        stmt = re.sub(r"\s*\[.*\]\s*$", "", stmt, flags=re.S)
        statements.append(stmt)
    return statements, message_id


def field_type(stmt):
    m = re.match(r"(?:repeated\s+|optional\s+)?([\w.]+)\s+\w+\s*=\s*\d+$", stmt)
    return m.group(1) if m else None


def subset(text):
    blocks = top_level_blocks(strip_comments(text))
    by_name = {}
    for kind, name, body in blocks:
        statements, message_id = clean_body(body)
        by_name[name] = (kind, statements, message_id)
    missing = [n for n in KEEP if n not in by_name]
    if missing:
        sys.exit(f"not in the proto: {', '.join(missing)}")
    keep, todo = set(), list(KEEP)
    while todo:
        name = todo.pop()
        if name in keep:
            continue
        keep.add(name)
        kind, statements, _ = by_name[name]
        if kind == "message":
            for stmt in statements:
                t = field_type(stmt)
                if t and t not in SCALARS:
                    if t not in by_name:
                        sys.exit(f"{name} references unknown type {t}")
                    todo.append(t)
    ordered = [(kind, name) for kind, name, _ in blocks if name in keep]
    ids = []
    lines = []
    for kind, name in ordered:
        _, statements, message_id = by_name[name]
        if message_id is not None:
            ids.append((name, message_id))
        lines.append(f"{kind} {name} {{")
        if message_id is not None:
            lines.append(f"  // id {message_id}")
        lines += [f"  {s};" for s in statements]
        lines.append("}")
        lines.append("")
    return "\n".join(lines), ids


def subset_ids(subset_text):
    return [(m.group(1), int(m.group(2)))
            for m in re.finditer(r"message (\w+) \{\n  // id (\d+)\n", subset_text)]


def swift_ids(ids, origin):
    out = [
        "// Generated by scripts/esphome/generate-proto.py from " + origin + "; do not edit.",
        "// Each kept message's `option (id)` in ESPHome's api.proto: the type number its frames carry",
        "// (docs/dev/esphome-proxy.md#the-messages-wire-code).",
        "",
        "/// The message types of ESPHome's native API that the proxy speaks, by their number on the wire.",
        "package enum APIMessageID {",
    ]
    for name, message_id in ids:
        swift = name[0].lower() + name[1:]
        out.append(f"    package static let {swift}: UInt16 = {message_id}")
    out.append("}")
    return "\n".join(out) + "\n"


def header(origin):
    return (
        "// A subset of ESPHome's native API (api.proto, as aioesphomeapi carries it): the messages a Bluetooth proxy\n"
        "// speaks and the types they reference, without imports and without ESPHome's custom options (the ids are\n"
        "// kept as comments). Generated by scripts/esphome/generate-proto.py; do not edit. Source: " + origin + ".\n"
        "// Regenerate: scripts/esphome/generate-proto.py [--proto path/to/api.proto]; check: --check.\n"
        "syntax = \"proto3\";\n\n"
        f"package {PACKAGE};\n\n"
    )


def origin_of(subset_text):
    m = re.search(r"Source: (.*)\.\n", subset_text)
    return m.group(1) if m else "unknown"


def run_protoc(proto_path, out_dir):
    if not shutil.which("protoc-c"):
        return False
    proto_dir = os.path.dirname(proto_path)
    subprocess.run(["protoc-c", f"--proto_path={proto_dir}", f"--c_out={out_dir}", proto_path], check=True)
    os.makedirs(os.path.join(out_dir, "include"), exist_ok=True)
    shutil.move(os.path.join(out_dir, "esphome_api.pb-c.h"), os.path.join(out_dir, "include", "esphome_api.pb-c.h"))
    # The .c includes its header by the name protoc-c gave it; SwiftPM puts include/ on the path.
    return True


def write(path, text):
    with open(path, "w") as f:
        f.write(text)


def generate(args):
    if args.proto:
        with open(args.proto) as f:
            text = f.read()
        origin = os.path.abspath(args.proto)
    else:
        commit = subprocess.run(["git", "-C", MIRROR, "rev-parse", "HEAD"], check=True, capture_output=True,
                                text=True).stdout.strip()
        text = subprocess.run(["git", "-C", MIRROR, "show", f"{commit}:{MIRROR_PATH}"], check=True,
                              capture_output=True, text=True).stdout
        origin = f"github.com/esphome/aioesphomeapi {MIRROR_PATH} at {commit}"
    body, ids = subset(text)
    os.makedirs(os.path.join(C_DIR, "include"), exist_ok=True)
    write(SUBSET, header(origin) + body)
    if not run_protoc(SUBSET, C_DIR):
        sys.exit("protoc-c not found (apt install protobuf-c-compiler)")
    write(IDS_SWIFT, swift_ids(ids, origin))
    print(f"kept {len(ids)} messages with ids; wrote {os.path.relpath(C_DIR, ROOT)} and {os.path.relpath(IDS_SWIFT, ROOT)}")


def check():
    if not shutil.which("protoc-c"):
        print("skipped: protoc-c not found (apt install protobuf-c-compiler)")
        return 0
    with open(SUBSET) as f:
        subset_text = f.read()
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copy(SUBSET, os.path.join(tmp, "esphome_api.proto"))
        run_protoc(os.path.join(tmp, "esphome_api.proto"), tmp)
        write(os.path.join(tmp, "APIMessageIDs.swift"), swift_ids(subset_ids(subset_text), origin_of(subset_text)))
        pairs = [
            (os.path.join(tmp, "esphome_api.pb-c.c"), os.path.join(C_DIR, "esphome_api.pb-c.c")),
            (os.path.join(tmp, "include", "esphome_api.pb-c.h"), os.path.join(C_DIR, "include", "esphome_api.pb-c.h")),
            (os.path.join(tmp, "APIMessageIDs.swift"), IDS_SWIFT),
        ]
        failed = False
        for fresh, committed in pairs:
            with open(fresh) as a, open(committed) as b:
                diff = list(difflib.unified_diff(b.readlines(), a.readlines(), committed, "regenerated"))
            if diff:
                failed = True
                sys.stdout.writelines(diff)
        print("generated code differs from the committed subset" if failed else "generated code is up to date")
        return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proto", help="api.proto to read (default: the aioesphomeapi mirror's HEAD)")
    parser.add_argument("--check", action="store_true", help="regenerate into a temporary directory and diff")
    args = parser.parse_args()
    if args.check:
        sys.exit(check())
    generate(args)


if __name__ == "__main__":
    main()

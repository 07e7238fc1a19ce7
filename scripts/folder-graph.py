#!/usr/bin/env python3
"""Which folders of Sources/Bridge use which, and whether Package.swift makes each folder a target that depends only
on the layers below it (docs/dev/ARCHITECTURE.md#layers).

    scripts/folder-graph.py                  edges (with the names that cause them) and strongly connected components
    scripts/folder-graph.py --dot            the same graph as Graphviz text
    scripts/folder-graph.py --check          exits 1 on a cycle, a name used up or across LAYERS, a folder
                                             LAYERS does not place, or a folder Package.swift does not make a target
                                             of its own, depending on layers below it only

A token scan, not a compiler: comments and string literals are dropped (interpolations kept), and every identifier is
matched against the top-level types, functions and globals the folders declare (an `extension` of one is a use). A
member added by an extension to a type of another module (`MQTTConfiguration.settings`) is not seen; a type named like
another module's would be. The compiler now refuses a cycle between the targets and a use of a target not depended on;
what it lets through, and this catches, is a target depending on a peer or on one above it in LAYERS.
Python 3 only, no packages: the docs tier runs it (Tests/docs/test_layers.py).
"""
import argparse
import collections
import pathlib
import re
import signal
import sys

REPO = pathlib.Path(__file__).resolve().parents[1]
ROOT = REPO / "Sources" / "Bridge"
PACKAGE = REPO / "Package.swift"

# The intended layers, lowest first (docs/dev/ARCHITECTURE.md#layers). A folder may use only folders of lower layers;
# folders of one layer are peers and use none of each other.
LAYERS = [
    ["Model"],
    ["Channels"],
    ["Session"],
    ["Adapters", "Tools"],
    ["FeatureHost"],
    ["Commands", "Pairing", "Fleet"],
    ["HomeAssistant"],
    ["Adverts"],
    ["Features"],
    ["Web", "Proxy"],
    ["Core"],
    ["Services"],
]

TOKEN = re.compile(r"""
    (?P<space>\s+) | (?P<line>//[^\n]*) | (?P<block>/\*) | (?P<string>\#*(?:\"\"\"|\"))
  | (?P<name>[A-Za-z_][A-Za-z0-9_]*) | (?P<quoted>`[A-Za-z_][A-Za-z0-9_]*`) | (?P<number>[0-9][0-9A-Za-z_]*) | (?P<other>.)
""", re.X | re.S)
DECLARES = {"class", "struct", "enum", "protocol", "actor", "typealias", "func", "let", "var"}
NAMING = DECLARES | {"case", "associatedtype"}      # the name after one of these is declared, not used
BLOCK_END = re.compile(r"/\*|\*/")


def skip_block(src: str, pos: int) -> int:
    """The end of a /* comment (they nest in Swift)."""
    depth = 1
    while depth:
        m = BLOCK_END.search(src, pos)
        if not m:
            return len(src)
        depth += 1 if m.group() == "/*" else -1
        pos = m.end()
    return pos


def skip_string(src: str, pos: int, opener: str, out: list) -> int:
    """The end of a string literal; the code of its interpolations goes to `out`."""
    hashes = opener.count("#")
    closing = opener.lstrip("#") + "#" * hashes
    escape = "\\" + "#" * hashes
    stop = re.compile(re.escape(escape) + "|" + re.escape(closing))
    while True:
        m = stop.search(src, pos)
        if not m:
            return len(src)
        if m.group() == closing:
            return m.end()
        pos = m.end()
        if src.startswith("(", pos):
            pos = lex(src, pos + 1, out, until_paren=True)
        else:
            pos += 1


def lex(src: str, pos: int, out: list, until_paren: bool = False) -> int:
    """Appends the code's tokens (names and punctuation) to `out`; returns where it stopped."""
    depth = 0
    while pos < len(src):
        m = TOKEN.match(src, pos)
        kind, text, pos = m.lastgroup, m.group(), m.end()
        if kind == "block":
            pos = skip_block(src, pos)
        elif kind == "string":
            pos = skip_string(src, pos, text, out)
        elif kind in ("name", "quoted", "other"):
            if until_paren and text in ("(", ")"):
                depth += 1 if text == "(" else -1
                if depth < 0:
                    return pos
            out.append(text.strip("`"))
    return pos


class Folder:
    def __init__(self, name: str):
        self.name = name
        self.files: dict[str, list[str]] = {}       # file name → tokens
        self.declared: set[str] = set()             # visible to other folders


def scan(root: pathlib.Path = ROOT) -> dict[str, Folder]:
    folders = {}
    for path in sorted(root.glob("*/**/*.swift")):
        name = path.relative_to(root).parts[0]
        folder = folders.setdefault(name, Folder(name))
        tokens: list[str] = []
        lex(path.read_text(), 0, tokens)
        folder.files[path.name] = tokens
        depth, hidden = 0, False
        for i, token in enumerate(tokens):
            if token in ("{", "}"):
                depth += 1 if token == "{" else -1
            elif depth == 0 and token in ("private", "fileprivate"):
                hidden = True                       # seen by its own file only
            elif depth == 0 and token in DECLARES | {"extension"} and i + 1 < len(tokens) and tokens[i - 1] != ".":
                if token != "extension" and not hidden and re.match(r"[A-Za-z_]", tokens[i + 1]):
                    folder.declared.add(tokens[i + 1])
                hidden = False
    return folders


def references(folders: dict[str, Folder]):
    """(from, to) → Counter of names, and (from, to, name) → the files that use the name."""
    owner = {name: folder.name for folder in folders.values() for name in folder.declared}
    edges: dict[tuple, collections.Counter] = collections.defaultdict(collections.Counter)
    where: dict[tuple, set] = collections.defaultdict(set)
    for folder in folders.values():
        for file, tokens in folder.files.items():
            for i, token in enumerate(tokens):
                target = owner.get(token)
                before = tokens[i - 1] if i else ""
                if not target or target == folder.name or before == "." or before in NAMING:
                    continue
                if token[0].islower() and i + 1 < len(tokens) and tokens[i + 1] == ":":
                    continue                                # an argument label, not the global function
                edges[folder.name, target][token] += 1
                where[folder.name, target, token].add(file)
    return edges, where


def components(nodes, edges) -> list[list[str]]:
    """Tarjan's strongly connected components, larger first."""
    succ = collections.defaultdict(list)
    for a, b in edges:
        succ[a].append(b)
    index, low, stack, on, found = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in succ[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            part = []
            while True:
                w = stack.pop()
                on.discard(w)
                part.append(w)
                if w == v:
                    break
            found.append(sorted(part))

    for v in sorted(nodes):
        if v not in index:
            visit(v)
    return sorted(found, key=lambda part: (-len(part), part))


def layer_of(folder: str):
    return next((n for n, layer in enumerate(LAYERS) if folder in layer), None)


def goes_up(a: str, b: str) -> bool:
    """Whether `a` using `b` goes up or across LAYERS (a folder not in them is reported by --check)."""
    la, lb = layer_of(a), layer_of(b)
    return la is not None and lb is not None and la <= lb


def wrong_way(edges) -> list[str]:
    """'From -> To: Name' for each name used up or across the layers: what --check reports."""
    return [f"{a} -> {b}: {name}" for (a, b), names in sorted(edges.items()) if goes_up(a, b) for name in sorted(names)]


def package_targets(text: str) -> dict[str, tuple[str, list[str]]]:
    """folder → (target, the names of its dependencies) for each target whose path is a folder of Sources/Bridge:
    `bridgeLayer("Folder", "Target", [...])`, or a `.target` with `path: "Sources/Bridge/Folder"`."""
    found = {}
    for m in re.finditer(r'bridgeLayer\(\s*"(\w+)",\s*"(\w+)",\s*\[([^\[\]]*)\]\s*\)', text, re.S):
        found[m.group(1)] = (m.group(2), re.findall(r'"(\w+)"', m.group(3)))
    for m in re.finditer(r'\.target\(\s*name:\s*"(\w+)",\s*dependencies:\s*\[([^\[\]]*)\]\s*,\s*'
                         r'path:\s*"Sources/Bridge/(\w+)"', text, re.S):
        found[m.group(3)] = (m.group(1), re.findall(r'"(\w+)"', m.group(2)))
    return found


def target_problems(folders, text: str) -> list[str]:
    """A folder that is no target of its own, or a target that depends on a peer's or a higher layer's."""
    targets = package_targets(text)
    folder_of = {target: folder for folder, (target, _) in targets.items()}
    problems = []
    for folder in sorted(folders):
        if folder not in targets:
            problems.append(f"Sources/Bridge/{folder} is no target of its own in Package.swift "
                            f"(bridgeLayer(\"{folder}\", ...))")
            continue
        target, dependencies = targets[folder]
        for dependency in dependencies:
            if dependency in folder_of and goes_up(folder, folder_of[dependency]):
                problems.append(f"{target} ({folder}) depends on {dependency} ({folder_of[dependency]}), "
                                f"which is not below it")
    return problems


def format_names(names: collections.Counter) -> str:
    return ", ".join(f"{n}×{c}" if c > 1 else n for n, c in sorted(names.items(), key=lambda nc: (-nc[1], nc[0])))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dot", action="store_true", help="print Graphviz text")
    parser.add_argument("--check", action="store_true",
                        help="exit 1 on a cycle, a wrong-way reference or a folder without a layer")
    parser.add_argument("--files", action="store_true", help="name the files behind each reference")
    parser.add_argument("--root", type=pathlib.Path, default=ROOT, help=argparse.SUPPRESS)   # the tests' own trees
    parser.add_argument("--package", type=pathlib.Path, help=argparse.SUPPRESS)              # and their Package.swift
    args = parser.parse_args()
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)           # `| head` ends the output, not in a traceback

    folders = scan(args.root)
    edges, where = references(folders)
    sccs = components(folders, edges)
    cycles = [part for part in sccs if len(part) > 1]

    if args.dot:
        print("digraph bridge {\n  rankdir=BT;\n  node [shape=box];")
        for (a, b), names in sorted(edges.items()):
            style = ", color=red" if goes_up(a, b) else ""
            print(f'  "{a}" -> "{b}" [label="{sum(names.values())}"{style}];')
        print("}")
        return 0

    print(f"{len(edges)} edges between {len(folders)} folders of Sources/Bridge (from -> to, references: names)")
    for (a, b), names in sorted(edges.items()):
        mark = "  wrong way" if goes_up(a, b) else ""
        print(f"  {a} -> {b}  {sum(names.values())}: {format_names(names)}{mark}")
        if args.files:
            for name in sorted(names):
                print(f"      {name}: {', '.join(sorted(where[a, b, name]))}")
    print("strongly connected components:")
    for part in sccs:
        print(f"  {len(part)}: {' '.join(part)}")
    if not args.check:
        return 0
    failed = False
    if cycles:
        print(f"folder-graph: {len(cycles)} cycle(s); the largest joins {len(cycles[0])} folders", file=sys.stderr)
        failed = True
    for line in wrong_way(edges):
        a, b, name = re.match(r"(\S+) -> (\S+): (\S+)", line).groups()
        files = ", ".join(sorted(where[a, b, name]))
        print(f"folder-graph: wrong-way reference {line} (in {a}/{{{files}}}): {a} sits below {b} "
              f"(docs/dev/ARCHITECTURE.md#layers)", file=sys.stderr)
        failed = True
    if args.root == ROOT:
        for folder in sorted(set(folders) - {f for layer in LAYERS for f in layer}):
            print(f"folder-graph: Sources/Bridge/{folder} has no layer: add it to LAYERS in scripts/folder-graph.py",
                  file=sys.stderr)
            failed = True
    package = args.package or (PACKAGE if args.root == ROOT else None)
    if package:
        for problem in target_problems(folders, package.read_text()):
            print(f"folder-graph: {problem} (docs/dev/ARCHITECTURE.md#layers)", file=sys.stderr)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Sources/Bridge keeps its layers (docs/dev/ARCHITECTURE.md#layers): no cycle, no folder uses one above it or a peer,
every folder has its layer and is a target of its own depending only on the layers below. Plain Python, no binary:
well under a second."""
import pathlib
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "folder-graph.py"


def graph(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=60)


def test_every_folder_uses_only_the_layers_below_it():
    result = graph("--check")
    assert result.returncode == 0, result.stdout + result.stderr


def test_comments_and_strings_are_no_references_but_interpolations_are(tmp_path):
    # The gate is only as good as its scan: a name in a comment or a string must not count, one in an interpolation
    # must, and a cycle must fail --check.
    (tmp_path / "Low").mkdir()
    (tmp_path / "High").mkdir()
    (tmp_path / "Low" / "Low.swift").write_text('struct Lower {}\nprivate struct Hidden {}\n')
    (tmp_path / "High" / "High.swift").write_text(
        'struct Upper {}\n// Lower in a comment\n/* Lower /* nested */ Lower */\n'
        'let a = "Lower \\"Lower\\""\nlet b = #"Lower "\\(Lower)" "#\nlet c = """\n  Lower\n  """\n'
        'let d = "\\(Lower.self) \\("Lower")"\nlet e = Hidden()\n')
    result = graph("--root", str(tmp_path), "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    assert "High -> Low  1: Lower\n" in result.stdout
    (tmp_path / "Low" / "Up.swift").write_text("extension Upper {}\n")
    result = graph("--root", str(tmp_path), "--check")
    assert result.returncode == 1 and "2: High Low" in result.stdout, result.stdout + result.stderr


def test_each_folder_is_a_target_that_depends_only_on_lower_layers(tmp_path):
    # The compiler refuses cycles between targets but not a dependency on a peer or upwards: --check does.
    for folder in ("Model", "Channels"):
        (tmp_path / folder).mkdir()
        (tmp_path / folder / f"{folder}.swift").write_text(f"struct {folder}Thing {{}}\n")
    package = tmp_path / "Package.swift"
    package.write_text('bridgeLayer("Model", "BridgeModel", ["Codecs"]),\n'
                       'bridgeLayer("Channels", "BridgeChannels", ["BridgeModel", "Codecs"]),\n')
    result = graph("--root", str(tmp_path), "--package", str(package), "--check")
    assert result.returncode == 0, result.stdout + result.stderr
    package.write_text('bridgeLayer("Model", "BridgeModel", ["BridgeChannels"]),\n'
                       'bridgeLayer("Channels", "BridgeChannels", ["Codecs"]),\n')
    result = graph("--root", str(tmp_path), "--package", str(package), "--check")
    assert result.returncode == 1 and "BridgeModel (Model) depends on BridgeChannels (Channels)" in result.stderr, \
        result.stderr
    package.write_text('bridgeLayer("Model", "BridgeModel", []),\n')
    result = graph("--root", str(tmp_path), "--package", str(package), "--check")
    assert result.returncode == 1 and "Sources/Bridge/Channels is no target of its own" in result.stderr, result.stderr

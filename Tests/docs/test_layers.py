"""Sources/Bridge keeps its layers (docs/dev/ARCHITECTURE.md#layers): no cycle, no folder uses one above it or a peer,
every folder has its layer. Plain Python, no binary: well under a second."""
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

"""The web page's files embedded in the daemon (scripts/web/embed.py, docs/web.md): Sources/Bridge/Web/WebAssets.swift
is what web/* gives, and the raw string literals it writes hold any text byte for byte. Plain Python, no binary."""
import importlib.util
import pathlib
import re
import subprocess
import sys

REPO = pathlib.Path(__file__).resolve().parents[2]
SCRIPT = REPO / "scripts" / "web" / "embed.py"


def embed_module():
    spec = importlib.util.spec_from_file_location("embed", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_the_embedded_assets_are_up_to_date():
    result = subprocess.run([sys.executable, str(SCRIPT), "--check"], capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, (result.stdout + result.stderr
                                    + "\nweb/ changed: run scripts/web/embed.py and commit WebAssets.swift")


def test_a_literal_outlasts_every_hash_run_after_a_quote_or_backslash():
    embed = embed_module()
    text = 'a "# b \\##( c """## d\n  indented\n'
    literal = embed.raw_literal(text, "x")
    hashes = re.match(r"(#+)\"\"\"\n", literal).group(1)
    assert len(hashes) == 3
    assert literal.endswith('\n"""' + hashes)
    # The literal's value: between the opening line and the line break before the closing delimiter.
    assert literal[len(hashes) + 4:-(len(hashes) + 4)] == text
    assert ('"' + hashes) not in text and ('\\' + hashes) not in text


def test_text_a_literal_cannot_keep_is_refused():
    embed = embed_module()
    for bad in ("line\r\n", "nul\x00", "escape\x1b[0m"):
        try:
            embed.raw_literal(bad, "x")
        except SystemExit as error:
            assert "control character" in str(error)
        else:
            raise AssertionError(f"{bad!r} was embedded")

"""Every relative link of the guide (docs/**/*.md) and of README.md resolves: the file exists and, for a Markdown page,
the #anchor is one of its headings (as GitHub and GitLab make them). Links inside code blocks are not links."""
import pathlib
import re
import urllib.parse

import pytest

REPO = pathlib.Path(__file__).resolve().parents[2]
PAGES = sorted((REPO / "docs").rglob("*.md")) + [REPO / "README.md"]
LINK = re.compile(r"(?<!!)\[(?:[^\]\[]|\[[^\]]*\])*\]\(([^)\s]+)\)")


def prose(text: str) -> str:
    """The page without fenced code blocks and inline code spans."""
    text = re.sub(r"^(```|~~~).*?^\1", "", text, flags=re.S | re.M)
    return re.sub(r"`[^`\n]*`", "", text)


def slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped (but - and _), spaces to hyphens."""
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", heading.strip())   # a link in a heading keeps its text
    text = text.lower().replace("`", "")
    text = "".join(ch for ch in text if ch.isalnum() or ch in " -_")
    return text.replace(" ", "-")


def anchors(page: pathlib.Path) -> set[str]:
    text = re.sub(r"^(```|~~~).*?^\1", "", page.read_text(), flags=re.S | re.M)
    seen: dict[str, int] = {}
    found = set()
    for heading in re.findall(r"^#{1,6}\s+(.*?)\s*#*\s*$", text, flags=re.M):
        base = slug(heading)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return found


def links(page: pathlib.Path):
    for target in LINK.findall(prose(page.read_text())):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target):     # http:, https:, mailto:
            continue
        yield target


def test_slug_matches_github():
    assert slug("`gattbridge scan [--duration S] [--service UUID]… [--json]`") == "gattbridge-scan---duration-s---service-uuid---json"
    assert slug("Wedged adapters, healed without restarting bluetoothd") == "wedged-adapters-healed-without-restarting-bluetoothd"


def test_the_guide_has_pages():
    assert len(PAGES) > 10


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(REPO)))
def test_relative_links_resolve(page):
    broken = []
    for target in links(page):
        path, _, fragment = target.partition("#")
        path = urllib.parse.unquote(path)
        resolved = (page.parent / path).resolve() if path else page
        if not resolved.exists():
            broken.append(f"{target}: no such file")
            continue
        if fragment and resolved.suffix == ".md" and fragment not in anchors(resolved):
            broken.append(f"{target}: no heading #{fragment} in {resolved.relative_to(REPO)}")
    assert broken == []


def test_every_page_of_the_guide_is_in_the_index():
    index = (REPO / "docs" / "README.md").read_text()
    missing = [str(p.relative_to(REPO / "docs")) for p in sorted((REPO / "docs").rglob("*.md"))
               if p.name != "README.md" and f"]({p.relative_to(REPO / 'docs')})" not in index]
    assert missing == []


def test_readme_is_short():
    assert len((REPO / "README.md").read_text().splitlines()) <= 250


def test_no_citations_of_a_document_outside_the_repository():
    """Code, tests and the guide cite the guide's pages or say it in words: SPEC is not part of the repository."""
    needle = "SPEC " + "\u00a7"
    roots = [REPO / "Sources", REPO / "Tests", REPO / "docs", REPO / "README.md"]
    found = []
    for root in roots:
        for path in ([root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())):
            if path.suffix not in {".swift", ".py", ".md", ".sh", ".c", ".h"}:
                continue
            for number, line in enumerate(path.read_text(errors="replace").splitlines(), 1):
                if needle in line:
                    found.append(f"{path.relative_to(REPO)}:{number}")
    assert found == []

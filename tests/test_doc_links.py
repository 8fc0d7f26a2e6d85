"""Every relative link in README.md and docs/*.md names a file that exists:
the README is a page of links, and a moved doc must not leave one dangling."""
from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


def dangling_links(doc: Path) -> list[str]:
    targets = LINK.findall(doc.read_text(encoding="utf-8"))
    return [t for t in targets if "://" not in t and not t.startswith("mailto:") and not (doc.parent / t).exists()]


def test_readme_and_docs_links_resolve():
    docs = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
    assert {str(d.relative_to(ROOT)): dangling_links(d) for d in docs if dangling_links(d)} == {}


def test_a_dangling_link_is_found(tmp_path):
    (tmp_path / "there.md").write_text("x")
    doc = tmp_path / "page.md"
    doc.write_text("[a](there.md) [b](gone.md#part) [c](https://example.org/x)")
    assert dangling_links(doc) == ["gone.md"]

"""The docs point only at files in the repository: every relative Markdown link resolves to a file
or folder inside it, and no page names a path on the machine it was written on."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
LINK = re.compile(r"\]\(([^)\s]+)\)")
MACHINE_PATH = re.compile(r"(?<![\w.])/(?:work|home|root|Users|mnt)/[\w.-]+")


def test_every_relative_link_resolves_inside_the_repository():
    bad = []
    for page in PAGES:
        for m in LINK.finditer(page.read_text(encoding="utf-8")):
            target = m.group(1).split("#", 1)[0]
            if not target or re.match(r"[a-z]+:", target):  # an anchor on the page, or a URL
                continue
            path = (page.parent / target).resolve()
            if not path.is_relative_to(ROOT) or not path.exists() or target.startswith("/"):
                bad.append(f"{page.relative_to(ROOT)}: {target}")
    assert not bad, "links outside the repository or to missing files:\n" + "\n".join(bad)


def test_no_page_names_a_path_on_the_authors_machine():
    bad = [f"{page.relative_to(ROOT)}: {m.group(0)}" for page in PAGES
           for m in MACHINE_PATH.finditer(page.read_text(encoding="utf-8"))]
    assert not bad, "machine-specific paths in the docs:\n" + "\n".join(bad)

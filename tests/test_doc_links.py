"""Every relative link in README.md and the Markdown under docs/ resolves: the file or folder it
names exists (relative to the linking file), and a `#fragment` names a heading of the target
file. Links are read with markdown-it-py, the CommonMark parser (so a link in a code span or a
code block is no link); fragments are matched against each heading's anchor as GitHub makes it
(lower case, punctuation but `-` and `_` dropped, each space a `-`, `-1`, `-2`, ... appended to a
repeated one), written here from GitHub's rules, not from any code of the project."""

from __future__ import annotations

import functools
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

from markdown_it import MarkdownIt
from markdown_it.token import Token

ROOT = Path(__file__).resolve().parents[1]
DOCS = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
PARSER = MarkdownIt("commonmark").enable("table")


def tokens(path: Path) -> list[Token]:
    return PARSER.parse(path.read_text(encoding="utf-8"))


def inline_children(found: list[Token]) -> list[Token]:
    out: list[Token] = []
    for token in found:
        out.append(token)
        if token.children:
            out += inline_children(token.children)
    return out


def slug(text: str) -> str:
    """A heading's anchor as GitHub makes it, before de-duplication."""
    text = text.strip().lower()
    text = re.sub(r"[^\w\- ]", "", text)
    return text.replace(" ", "-")


@functools.cache
def anchors(path: Path) -> frozenset[str]:
    seen: dict[str, int] = {}
    found: set[str] = set()
    items = tokens(path)
    for i, token in enumerate(items):
        if token.type != "heading_open":
            continue
        inline = items[i + 1]
        text = "".join(
            child.content
            for child in inline.children or []
            if child.type in ("text", "code_inline")
        )
        base = slug(text)
        count = seen.get(base, 0)
        seen[base] = count + 1
        found.add(base if count == 0 else f"{base}-{count}")
    return frozenset(found)


def links(path: Path) -> list[str]:
    return [
        str(token.attrs["href"])
        for token in inline_children(tokens(path))
        if token.type == "link_open" and "href" in token.attrs
    ]


def test_the_anchor_rule_on_known_headings() -> None:
    """GitHub's anchors of headings this repository links to (as GitHub shows them)."""
    assert slug("Reproducing the article") == "reproducing-the-article"
    assert slug("In short: Checking J0: `j0 selfcheck`") == "in-short-checking-j0-j0-selfcheck"
    assert slug("Exit codes, signals and bounded inputs") == "exit-codes-signals-and-bounded-inputs"
    assert (
        slug("Only like with like: the J0 on/off pair") == "only-like-with-like-the-j0-onoff-pair"
    )


def broken_links(doc: Path, root: Path = ROOT) -> list[str]:
    broken = []
    for href in links(doc):
        parts = urlsplit(href)
        if parts.scheme or parts.netloc:
            continue  # a web address (or mailto:): not checked here
        target = (doc.parent / unquote(parts.path)).resolve() if parts.path else doc
        where = f"{doc.relative_to(root)}: ({href})"
        if not target.exists():
            broken.append(f"{where}: no {target}")
        elif not target.is_relative_to(root):
            broken.append(f"{where}: outside the repository")
        elif parts.fragment and target.suffix == ".md":
            if unquote(parts.fragment).lower() not in anchors(target):
                broken.append(f"{where}: no heading #{parts.fragment} in {target.name}")
    return broken


def test_a_broken_file_or_anchor_is_found(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "b.md").write_text("# Title\n\n## Exit codes: all `j0` commands\n")
    doc = tmp_path / "a.md"
    doc.write_text(
        "[ok](docs/b.md) [ok](docs/b.md#exit-codes-all-j0-commands) [ok](#here)\n\n# Here\n\n"
        "[gone](docs/c.md) [no anchor](docs/b.md#exit-codes) `[code](docs/x.md)`\n\n"
        "[web](https://example.org/none) [up](../../etc/hostname)\n"
    )
    assert [x.split(": ")[1] for x in broken_links(doc, tmp_path)] == [
        "(docs/c.md)",
        "(docs/b.md#exit-codes)",
        "(../../etc/hostname)",
    ]


def test_every_relative_link_resolves() -> None:
    broken = [line for doc in DOCS for line in broken_links(doc)]
    assert not broken, "\n".join(broken)


def test_the_readme_links_the_article() -> None:
    """The article the project reproduces, at the address its seed (docs/seed/) gives."""
    seed = "\n".join(p.read_text(encoding="utf-8") for p in (ROOT / "docs" / "seed").glob("*"))
    (address,) = set(re.findall(r"https://artus\.ai/\S+?\.html", seed))
    assert address in links(ROOT / "README.md"), address

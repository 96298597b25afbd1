"""Every link in the README and the docs resolves: relative links (and images) to files of the repository, their
#anchors to a heading of the target, and every `benchmarks/results/...` file named in backticks to a file
that is there (in a fresh clone: tracked, see docs/performance.md, "Which runs are kept").

Links that leave the repository (SPEC.md beside it) and web addresses are not followed.
"""
import glob
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = sorted({os.path.relpath(p, ROOT) for p in
                [os.path.join(ROOT, "README.md")] + glob.glob(os.path.join(ROOT, "docs", "*.md"))
                + glob.glob(os.path.join(ROOT, "model_zoo", "**", "README.md"), recursive=True)})

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)")
RESULT = re.compile(r"`(benchmarks/results/[^`*<>]+)`")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading):
    """GitHub's anchor of a heading: lower case, punctuation but - and _ dropped, spaces as -."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def _anchors(path):
    with open(path, encoding="utf-8") as f:
        text = FENCE.sub("", f.read())
    return {_slug(m.group(1)) for m in re.finditer(r"^#+\s+(.*)$", text, re.M)}


def _links(page, root=ROOT):
    with open(os.path.join(root, page), encoding="utf-8") as f:
        text = FENCE.sub("", f.read())
    return LINK.findall(text), RESULT.findall(text)


def broken_links(page, root=ROOT):
    """What in `page` (relative to `root`) does not resolve, one line each."""
    links, results = _links(page, root)
    broken = []
    for link in links:
        if re.match(r"^[a-z]+:", link):                      # http:, https:, mailto:
            continue
        target, _, anchor = link.partition("#")
        path = os.path.normpath(os.path.join(root, os.path.dirname(page), target)) if target else \
            os.path.join(root, page)
        if not path.startswith(root + os.sep):                # beside the repository (SPEC.md)
            continue
        if not os.path.exists(path):
            broken.append(f"{link}: no such file")
        elif anchor and path.endswith(".md") and anchor not in _anchors(path):
            broken.append(f"{link}: no heading #{anchor}")
    for name in results:
        if not os.path.exists(os.path.join(root, name)):
            broken.append(f"`{name}`: no such file")
    return broken


@pytest.mark.parametrize("page", PAGES)
def test_links_resolve(page):
    broken = broken_links(page)
    assert not broken, f"{page}: " + "; ".join(broken)


def test_the_check_finds_broken_links(tmp_path):
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "a.md").write_text("# A title: `x`\n\n## Kept\n")
    (tmp_path / "README.md").write_text(
        "[ok](docs/a.md#kept) [ok](docs/a.md#a-title-x) [out](../SPEC.md) [web](https://example.com/x)\n"
        "[gone](docs/b.md) [anchor](docs/a.md#moved) ![chart](benchmarks/results/c.png) `benchmarks/results/d.json`\n"
        "```\n[in a fence](nowhere.md)\n```\n")
    assert broken_links("README.md", str(tmp_path)) == [
        "docs/b.md: no such file", "docs/a.md#moved: no heading #moved", "benchmarks/results/c.png: no such file",
        "`benchmarks/results/d.json`: no such file"]
    assert _slug("PyNative on CPU: set `MS_DEV_HOST_BLOCKING_RUN=1`") == "pynative-on-cpu-set-ms_dev_host_blocking_run1"
    assert _slug("GRAPH_MODE calls skip `Cell.__call__` when they can") == \
        "graph_mode-calls-skip-cell__call__-when-they-can"
    assert "docs/performance.md#the-machines-of-each-session" in _links("README.md")[0]

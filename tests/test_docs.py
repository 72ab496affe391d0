"""Every ```python block of docs/*.md runs on its own (fresh namespace, temporary working
directory), with no exception: the documentation's examples are code that works (a block that needs a
server, e.g. a PostgreSQL URL, is fenced ```py and not run)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

DOCS = Path(__file__).resolve().parents[1] / "docs"
BLOCKS = [
    (f"{path.name}#{i}", block)
    for path in sorted(DOCS.glob("*.md"))
    for i, block in enumerate(
        re.findall(r"^```python\n(.*?)^```", path.read_text(encoding="utf-8"), re.M | re.S)
    )
]


def test_the_docs_have_python_blocks() -> None:
    assert {name.split("#")[0] for name, _ in BLOCKS} >= {"local.md", "workloads.md"}


@pytest.mark.parametrize("source", [b for _, b in BLOCKS], ids=[n for n, _ in BLOCKS])
def test_docs_block_runs(source: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    exec(compile(source, "docs python block", "exec"), {"__name__": "__docs__"})

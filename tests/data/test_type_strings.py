"""Queries build their engine expressions from Ibis data-type objects, never from type strings:
Ibis parses a type string with a grammar it builds on first use, which cost ~100 ms of a
process's first query (measured on the flights: 0.29–0.38 s → 0.20–0.25 s)."""

from __future__ import annotations

import importlib
import sys

import pandas as pd
import pytest

import sharpdp as sdp


@pytest.fixture
def parsed(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The type strings Ibis parses while the test runs (its parser is looked up at each call)."""
    importlib.import_module("ibis.expr.datatypes.parse")
    module = sys.modules["ibis.expr.datatypes.parse"]
    calls: list[str] = []
    original = module.parse

    def spy(text: str, *args: object, **kwargs: object) -> object:
        calls.append(text)
        return original(text, *args, **kwargs)

    monkeypatch.setattr(module, "parse", spy)
    return calls


def test_the_spy_sees_a_parse(parsed: list[str]) -> None:
    import ibis

    ibis.literal(1).cast("string")
    assert parsed == ["string"]


def test_queries_parse_no_type_string(parsed: list[str]) -> None:
    frame = pd.DataFrame(
        {
            "person": [i % 40 for i in range(400)],
            "item": [f"k{i % 7}" for i in range(400)],
            "value": [float(i % 13) for i in range(400)],
            "group": [i % 3 for i in range(400)],
        }
    )
    s = sdp.data.Session(frame, "person", sdp.ApproxDP(1e3, 1e-3), seed=1)
    queries = [
        s.count(privacy=sdp.PureDP(1.0)),
        s.count_by("item", keys=None, privacy=sdp.ApproxDP(1.0, 1e-6), max_groups=3),
        s.count_by("item", keys=["k1", "k2"], privacy=sdp.PureDP(1.0), max_groups=2),
        s.top_k("item", k=2, privacy=sdp.ApproxDP(1.0, 1e-6), max_groups=2),
        s.top_k("item", k=2, keys=["k1", "k2", "k3"], privacy=sdp.PureDP(1.0)),
        s.sum("value", bounds=(0, 20), privacy=sdp.PureDP(1.0), max_rows=2),
        s.mean("value", bounds=(0, 20), privacy=sdp.PureDP(1.0), by="group", keys=[0, 1, 2]),
        s.quantile("value", 0.5, bounds=(0, 20), privacy=sdp.PureDP(1.0)),
        s.select_best("item", keys=["k1", "k2", "k3"], privacy=sdp.PureDP(1.0)),
    ]
    for q in queries:
        q.run(rng=0)
    assert parsed == []

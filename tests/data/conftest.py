"""Fixtures of the data-layer tests: small tables, the flights, an independent bounding reference.

The reference re-implements the contribution-bounding rule of ``sharpdp.data._bounding`` in plain
pandas + Python integers (the seeded hash of unit ‖ key… from its specification, keep the
``max_groups`` smallest hashes per person, ``min(rows, max_rows)`` per (person, key)), so engine
results are checked against a computation that shares no code with sharpdp.
"""

from __future__ import annotations

import datetime
import hashlib
import math
import os
import sys
from collections.abc import Iterator, Sequence
from fractions import Fraction
from typing import Any

import numpy as np
import pandas as pd
import pytest

import sharpdp as sdp

EPOCH = datetime.date(1970, 1, 1)


def _text(v: Any) -> str:
    if v is None or v is pd.NaT or (isinstance(v, float) and np.isnan(v)):
        return "\\N"
    if isinstance(v, datetime.datetime):  # its day number and time of day (trailing 0s dropped)
        fraction = f".{v.microsecond:06d}".rstrip("0") if v.microsecond else ""
        return f"{(v.date() - EPOCH).days} {v:%H:%M:%S}{fraction}"
    return str(v)


P = 2**31 - 1


def float_codes(x: float) -> list[int]:
    """A float's two codes, from its specification: (kind·4096 + e + 1100, (m − 1)·2⁵² mod P)
    for |x| = m·2ᵉ, m ∈ [1, 2), or e = −1023 and m = |x|·2¹⁰²³ for a subnormal; kinds NULL/NaN 0,
    zero 1, +inf 2, −inf 3, positive 4, negative 5 (with e = 0, m = 1). Read from Python's
    ``math.frexp`` (|x| = f·2ᵏ, f ∈ [0.5, 1)), sharing nothing with the engine expression."""
    if x != x:
        kind, e, scaled = 0, 0, 0
    elif x == 0:
        kind, e, scaled = 1, 0, 0
    elif math.isinf(x):
        kind, e, scaled = (2 if x > 0 else 3), 0, 0
    else:
        f, k = math.frexp(abs(x))
        if abs(x) < 2.0**-1022:
            e, m = -1023, Fraction(abs(x)) * 2**1023
        else:
            e, m = k - 1, Fraction(f) * 2
        scaled = (m - 1) * 2**52
        assert scaled.denominator == 1
        kind = 4 if x > 0 else 5
    return [kind * 4096 + e + 1100, int(scaled) % P]


def _kind(value: Any) -> str:
    if isinstance(value, bool | int | np.integer | np.bool_):
        return "int"
    if isinstance(value, datetime.date) and not isinstance(value, datetime.datetime):
        return "date"
    if isinstance(value, float | np.floating) and value == value:
        return "float"  # (NaN: a missing value, typed by its column: pass kinds=)
    return "text"


def rank_hash(parts: Sequence[Any], salt: str, kinds: Sequence[str] | None = None) -> int:
    """The bounding hash, from its specification: codes cᵢ, first the integers (mod P), the
    floats (two codes each, :func:`float_codes`) and the dates (day number since 1970 mod P) in
    order, then, if any other part, one code for all of them, the first 7 hex digits of the MD5
    of salt ‖ '|' text ‖ '|' text … (a timestamp's text: its day number and time of day);
    h ← (h·((aᵢcᵢ + bᵢ) mod P) + eᵢ) mod P from h = 1, with (aᵢ, bᵢ, eᵢ) read from SHA-256(salt:i)
    as three big-endian 64-bit words. ``kinds`` ("int", "float", "date" or "text" per part: the column
    types) defaults to each value's own type, a NaN counting as text's NULL."""
    kinds = [_kind(p) for p in parts] if kinds is None else list(kinds)
    textual = [p for p, k in zip(parts, kinds, strict=True) if k == "text"]
    codes = []
    for p, k in zip(parts, kinds, strict=True):
        if k == "float":
            codes.extend(float_codes(float("nan") if p is None else float(p)))
        elif k == "int":  # NULL: P − 1
            codes.append(P - 1 if p is None or p is pd.NA else int(p) % P)
        elif k == "date":  # its day number since 1970-01-01, as an integer's
            codes.append(P - 1 if p is None or p is pd.NaT else (p - EPOCH).days % P)
    if textual:
        text = salt + "".join("|" + _text(p) for p in textual)
        codes.append(int(hashlib.md5(text.encode()).hexdigest()[:7], 16))
    h = 1
    for i, code in enumerate(codes):
        raw = hashlib.sha256(f"{salt}:{i}".encode()).digest()
        words = [int.from_bytes(raw[8 * j : 8 * j + 8], "big") for j in range(3)]
        a, b, e = 1 + words[0] % (P - 1), words[1] % P, words[2] % P
        h = (h * ((a * code + b) % P) + e) % P
    return h


def _column_kind(column: pd.Series) -> str:
    kind = column.dtype.kind
    if kind == "O":  # a column of datetime.date values is a date column
        first = column.dropna()
        if len(first) and _kind(first.iloc[0]) == "date":
            return "date"
    return "float" if kind == "f" else "int" if kind in "iub" else "text"


def bounded_pairs(
    df: pd.DataFrame, unit: str, keys: Sequence[str], max_rows: int, max_groups: int, salt: str
) -> pd.DataFrame:
    """One row per kept (unit, key): columns unit, keys, rows = min(n, max_rows)."""
    n = df.groupby([unit, *keys], dropna=False).size().reset_index(name="n")
    n["rows"] = np.minimum(n["n"], max_rows)
    kinds = [_column_kind(df[c]) for c in (unit, *keys)]
    n["digest"] = [
        rank_hash([r[unit], *(r[k] for k in keys)], salt, kinds) for _, r in n.iterrows()
    ]
    n = n.sort_values([unit, "digest"], kind="mergesort")
    n["rank"] = n.groupby(unit).cumcount()
    return n[n["rank"] < max_groups][[unit, *keys, "rows"]].reset_index(drop=True)


def bounded_counts(
    df: pd.DataFrame, unit: str, keys: Sequence[str], max_rows: int, max_groups: int, salt: str
) -> dict[tuple[Any, ...], int]:
    pairs = bounded_pairs(df, unit, keys, max_rows, max_groups, salt)
    out = pairs.groupby(list(keys))["rows"].sum()
    return {(k if isinstance(k, tuple) else (k,)): int(v) for k, v in out.items()}


class Reference:
    """The independent bounding reference (as a fixture, since test modules cannot import)."""

    rank_hash = staticmethod(rank_hash)
    float_codes = staticmethod(float_codes)
    bounded_pairs = staticmethod(bounded_pairs)
    bounded_counts = staticmethod(bounded_counts)


@pytest.fixture(scope="session")
def reference() -> type[Reference]:
    return Reference


@pytest.fixture(scope="session")
def small() -> pd.DataFrame:
    """120 persons, 5 fruits, Zipf-ish: some persons with many rows and many fruits."""
    rng = np.random.default_rng(20261123)
    fruits = np.array(["apple", "banana", "cherry", "date", "elder"])
    rows = []
    for person in range(120):
        n = int(rng.integers(1, 9))
        picks = rng.choice(5, size=n, p=[0.4, 0.25, 0.15, 0.12, 0.08])
        for f in picks:
            rows.append((f"p{person:03d}", fruits[f], float(rng.integers(-20, 120)) + 0.5))
    return pd.DataFrame(rows, columns=["person", "fruit", "amount"])


@pytest.fixture(scope="session")
def flights() -> pd.DataFrame:
    return sdp.data.datasets.flights()


@pytest.fixture
def big_budget() -> sdp.Guarantee:
    return sdp.PureDP(1e9)


@pytest.fixture(scope="session")
def spark() -> Iterator[Any]:
    """A local-mode SparkSession (2 threads, 2 shuffle partitions)."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["PYSPARK_DRIVER_PYTHON"] = sys.executable
    from pyspark.sql import SparkSession

    session = (
        SparkSession.builder.master("local[2]")
        .appName("sharpdp-tests")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.ui.enabled", "false")
        .config("spark.ui.showConsoleProgress", "false")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()

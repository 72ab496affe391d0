"""Private queries over tables: sessions, query plans and releases (Ibis: DuckDB, PySpark).

``sdp.data.Session(table, privacy_unit, budget, ...)`` builds queries (``count``, ``count_by``,
``sum``, ``mean``, ``quantile``, ``top_k``, ``select_best``); each is an immutable plan with
``explain()`` (the price, touching nothing) and ``run(rng)`` (spend durably, then release). See
:mod:`sharpdp.data.session`.
"""

import importlib as _importlib
from importlib import util as _importlib_util

try:
    # a clear message when the extra is missing (Ibis, slow to import, is only looked up)
    _importlib.import_module("pandas")
    if _importlib_util.find_spec("ibis") is None:
        raise ModuleNotFoundError("No module named 'ibis'", name="ibis")
except ImportError as _err:  # pragma: no cover - exercised only without the extra
    raise ImportError(
        "sharpdp.data needs pandas, pyarrow and Ibis with DuckDB: pip install 'sharpdp[data]' "
        "(in a clone: '.[data]')"
    ) from _err

from sharpdp.data import datasets
from sharpdp.data.answers import WorkloadQuery, WorkloadRelease
from sharpdp.data.mwem import MWEMQuery, Synthetic
from sharpdp.data.query import Bounding, Explanation, Query, Statistic
from sharpdp.data.release import (
    AdditiveRelease,
    MeanRelease,
    QuantileRelease,
    Release,
    SelectionRelease,
)
from sharpdp.data.session import Session
from sharpdp.data.workloads import (
    Bins,
    Marginals,
    Predicates,
    Workload,
    bins,
    marginals,
    predicates,
)

__all__ = [
    "AdditiveRelease",
    "Bins",
    "Bounding",
    "Explanation",
    "MWEMQuery",
    "Marginals",
    "MeanRelease",
    "Predicates",
    "QuantileRelease",
    "Query",
    "Release",
    "SelectionRelease",
    "Session",
    "Statistic",
    "Synthetic",
    "Workload",
    "WorkloadQuery",
    "WorkloadRelease",
    "bins",
    "datasets",
    "marginals",
    "predicates",
]

# What every first query needs, imported with the data layer rather than inside that query (about
# 0.35 s): the engine (Ibis and its DuckDB backend), the accountant and its analyses, and
# scipy.special (calibrations, the optimal composition). No query runs without them, so the first
# query's latency is that of the query — a service's first request, a benchmark's clock — and
# ``import sharpdp`` alone stays light (``sharpdp.data`` is imported on first use).
for _module in (
    "ibis",
    "ibis.backends.duckdb",
    "scipy.special",
    "sharpdp.accounting.accountant",
    "sharpdp.accounting.analyses",
):
    _importlib.import_module(_module)

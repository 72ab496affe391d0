"""Private queries over tables: sessions, query plans and releases (Ibis: DuckDB, PySpark).

``sdp.data.Session(table, privacy_unit, budget, ...)`` builds queries (``count``, ``count_by``,
``sum``, ``mean``, ``quantile``, ``top_k``, ``select_best``); each is an immutable plan with
``explain()`` (the price, touching nothing) and ``run(rng)`` (spend durably, then release). See
:mod:`sharpdp.data.session`.
"""

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

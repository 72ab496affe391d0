"""Auditing: check claimed privacy guarantees against exact laws or black-box samples.

* :func:`exact` (and :func:`exact_pair`, :func:`exact_many`): the exact divergences of a
  mechanism's output laws on given inputs, in log space, both orders: ``renyi(α)``,
  ``delta(ε)``, ``epsilon(δ)``, ``bounded_range()``, ``max_divergence()``, and ``check(claim)``
  naming every violation of a claimed guarantee.
* :func:`sample` (and :func:`sample_bounded_range`): a statistical audit of a black-box sampler,
  returning a lower bound on ε (or on the bounded-range spread) valid with a stated confidence.

Exact laws come from a registry (mechanism type → law function); add one with
:func:`register_law`.
"""

from __future__ import annotations

from sharpdp.audit._check import DELTAS, ORDERS, AuditFailure, CheckResult, Violation
from sharpdp.audit._exact import (
    ExactReport,
    WorstCaseReport,
    exact,
    exact_many,
    exact_pair,
    score_neighbours,
)
from sharpdp.audit._laws import (
    DiscreteGaussianNoise,
    DiscreteLaplaceNoise,
    FiniteLaw,
    IntegerNoise,
    ShiftLaw,
    law_of,
    register_law,
)
from sharpdp.audit._statistical import (
    RangeSampleReport,
    SampleReport,
    clopper_pearson,
    sample,
    sample_bounded_range,
)

__all__ = [
    "DELTAS",
    "ORDERS",
    "AuditFailure",
    "CheckResult",
    "DiscreteGaussianNoise",
    "DiscreteLaplaceNoise",
    "ExactReport",
    "FiniteLaw",
    "IntegerNoise",
    "RangeSampleReport",
    "SampleReport",
    "ShiftLaw",
    "Violation",
    "WorstCaseReport",
    "clopper_pearson",
    "exact",
    "exact_many",
    "exact_pair",
    "law_of",
    "register_law",
    "sample",
    "sample_bounded_range",
    "score_neighbours",
]

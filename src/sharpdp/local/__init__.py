"""Local differential privacy: each client randomizes its own value; the server estimates frequencies.

Client side (:mod:`sharpdp.local.client`)::

    reports = sdp.local.randomize(values, epsilon=1.0, categories=10, rng=0)

Server side (:mod:`sharpdp.local.server`)::

    est = sdp.local.estimate(reports, epsilon=1.0, categories=10)
    est.frequencies, est.variance, est.interval(0.95), est.query([2, 3])

Each report is ε-DP in its client's value (:func:`guarantee`), so the server never holds raw values.
Three randomizers (:class:`Randomizer`): k-ary randomized response (``"rr"``; Warner 1965,
Kairouz–Bonawitz–Ramage 2016), optimized unary encoding (``"oue"``; Wang et al., USENIX Security
2017) and Hadamard response (``"hadamard"``; Acharya–Sun–Zhang, AISTATS 2019); ``"auto"`` picks
the one of least exact variance (:func:`choose_scheme`). Estimates are unbiased, with exact
variances (:mod:`sharpdp.local._schemes`); with n reports their error is Θ(√k/(ε√n)) per category
for small ε. Each randomizer's exact output law is registered with :mod:`sharpdp.audit`
(:mod:`sharpdp.local.laws`). See ``docs/local.md``.
"""

from __future__ import annotations

from sharpdp.local import laws
from sharpdp.local._params import SCHEMES
from sharpdp.local.client import Randomizer, choose_scheme, guarantee, randomize
from sharpdp.local.reports import Reports, combine
from sharpdp.local.result import INTERVAL_METHODS, Estimate, QueryEstimate
from sharpdp.local.server import estimate, support_counts

__all__ = [
    "INTERVAL_METHODS",
    "SCHEMES",
    "Estimate",
    "QueryEstimate",
    "Randomizer",
    "Reports",
    "choose_scheme",
    "combine",
    "estimate",
    "guarantee",
    "laws",
    "randomize",
    "support_counts",
]

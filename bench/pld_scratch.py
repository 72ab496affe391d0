"""Scratch measurements of the PLD accountant (sharpdp.accounting.pld.loss) against Google's dp_accounting.

Run: /tmp/venv/bin/python bench/pld_scratch.py [--quick]

Prints, for homogeneous k-fold compositions and for a heterogeneous mix of 10^4 mechanisms, the
time and ε(δ = 1e-6) of sharpdp (pessimistic value and the certified optimistic/pessimistic
bracket) and of dp_accounting's PLD machinery (connect-the-dots, value_discretization 1e-4), and
exact references where they exist (KOV for pure DP, the GDP closed form for Gaussians).
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable
from typing import Any

import numpy as np

import sharpdp as sdp
from sharpdp import _divergences
from sharpdp.accounting.pld.loss import compose_pld

DELTA = 1e-6


def timed(fn: Callable[[], Any], repeat: int = 1) -> tuple[Any, float]:
    best = math.inf
    out = None
    for _ in range(repeat):
        t = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t)
    return out, best


def kov_epsilon(eps0: float, k: int, delta: float) -> float:
    """Exact ε(δ) of k-fold ε0-DP [KOV15 / MV16], by bisection in mpmath (independent)."""
    import mpmath as mp

    mp.mp.dps = 50
    e0 = mp.mpf(eps0)

    def d(eg: Any) -> Any:
        total = mp.mpf(0)
        for i in range(k + 1):
            v = mp.e ** (i * e0) - mp.e**eg * mp.e ** ((k - i) * e0)
            if v > 0:
                total += mp.binomial(k, i) * v
        return total / (1 + mp.e**e0) ** k

    lo, hi = mp.mpf(0), mp.mpf(k * eps0)
    for _ in range(200):
        mid = (lo + hi) / 2
        if d(mid) > delta:
            lo = mid
        else:
            hi = mid
    return float(hi)


def dp_accounting_plds() -> Any:
    from dp_accounting.pld import common
    from dp_accounting.pld import privacy_loss_distribution as pld

    return pld, common


def homogeneous(quick: bool) -> None:
    print("== k-fold homogeneous, delta = 1e-6 ==")
    pld, common = dp_accounting_plds()
    cases: list[tuple[str, Any, Callable[[], Any], float | None]] = []
    for k in (100, 1000, 10_000):
        cases.append(
            (
                f"Laplace(b=10) x {k}",
                (sdp.Laplace(10.0), k),
                lambda k=k: pld.from_laplace_mechanism(
                    10.0, value_discretization_interval=1e-4
                ).self_compose(k),
                None,
            )
        )
    for eps0, k in ((0.5, 1000), (0.1, 10_000)):
        cases.append(
            (
                f"PureDP({eps0}) x {k}",
                (sdp.PureDP(eps0), k),
                lambda eps0=eps0, k=k: pld.from_privacy_parameters(
                    common.DifferentialPrivacyParameters(eps0, 0.0),
                    value_discretization_interval=1e-4,
                ).self_compose(k),
                kov_epsilon(eps0, k, DELTA) if not quick else None,
            )
        )
    for eps0, cats, k in ((1.0, 4, 1000),):
        p = cats / (math.exp(eps0) + cats - 1)
        cases.append(
            (
                f"RR({eps0}, k={cats}) x {k}",
                (sdp.RandomizedResponse(eps0, cats), k),
                lambda p=p, cats=cats, k=k: pld.from_randomized_response(
                    p, cats, value_discretization_interval=1e-4
                ).self_compose(k),
                None,
            )
        )
    for sigma, k in ((50.0, 10_000),):
        cases.append(
            (
                f"Gaussian({sigma}) x {k}",
                (sdp.Gaussian(sigma), k),
                lambda sigma=sigma, k=k: pld.from_gaussian_mechanism(
                    sigma / math.sqrt(k), value_discretization_interval=1e-4
                ),
                _divergences.gaussian_epsilon(math.sqrt(k) / sigma, DELTA),
            )
        )
    print(
        f"{'case':28s} {'sharpdp eps':>14s} {'rel.bracket':>11s} {'ms':>8s}   "
        f"{'dp_acc eps':>14s} {'ms':>9s}   {'exact':>14s}"
    )
    for name, item, dpa, exact in cases:
        compose_pld([item]).epsilon(DELTA)  # warm-up (imports, caches)
        (lo, hi), t_s = timed(lambda item=item: compose_pld([item]).epsilon_bracket(DELTA), 5)
        p, t_d = timed(dpa, 1)
        e_d = p.get_epsilon_for_delta(DELTA)
        ex = f"{exact:14.8f}" if exact is not None else " " * 14
        print(
            f"{name:28s} {hi:14.8f} {(hi - lo) / hi:11.2e} {t_s * 1e3:8.2f}   "
            f"{e_d:14.8f} {t_d * 1e3:9.1f}   {ex}"
        )


def heterogeneous(n_items: int, distinct: int, seed: int = 1) -> None:
    print(f"== heterogeneous mix: {n_items} items, {distinct} distinct settings per type ==")
    rng = np.random.default_rng(seed)
    per = n_items // 4
    sigmas = rng.uniform(20.0, 100.0, distinct)
    scales = rng.uniform(50.0, 200.0, distinct)
    rr_eps = rng.uniform(0.01, 0.05, distinct)
    pure_eps = rng.uniform(0.01, 0.05, distinct)
    cats = rng.integers(2, 6, distinct)

    def counts() -> Any:
        return np.bincount(rng.integers(0, distinct, per), minlength=distinct)

    cg, cl, cr, cp = counts(), counts(), counts(), counts()
    items: list[tuple[Any, int]] = []
    for i in range(distinct):
        items += [
            (sdp.Gaussian(float(sigmas[i])), int(cg[i])),
            (sdp.Laplace(float(scales[i])), int(cl[i])),
            (sdp.RandomizedResponse(float(rr_eps[i]), int(cats[i])), int(cr[i])),
            (sdp.PureDP(float(pure_eps[i])), int(cp[i])),
        ]
    items = [(a, c) for a, c in items if c > 0]
    result, t_s = timed(lambda: compose_pld(items).epsilon_bracket(DELTA), 1)
    lo, hi = result
    print(
        f"sharpdp (auto, target 1e-4): eps = {hi:.8f}  bracket [{lo:.8f}, {hi:.8f}] "
        f"(rel {(hi - lo) / hi:.1e})  {t_s:.3f} s"
    )
    coarse = {}
    for h in (1e-2, 5e-3):
        (c_lo, c_hi), t_c = timed(
            lambda h=h: compose_pld(items, value_discretization=h).epsilon_bracket(DELTA), 1
        )
        coarse[h] = (c_hi, t_c)
        print(
            f"sharpdp (h = {h:g}): eps = {c_hi:.8f}  bracket [{c_lo:.8f}, {c_hi:.8f}]  {t_c:.3f} s"
        )
    pld, common = dp_accounting_plds()

    def run_dpa() -> Any:
        acc = None
        for item, c in items:
            if isinstance(item, sdp.Gaussian):
                q = pld.from_gaussian_mechanism(
                    item.sigma / math.sqrt(c), value_discretization_interval=1e-4
                )
            elif isinstance(item, sdp.Laplace):
                q = pld.from_laplace_mechanism(item.scale, value_discretization_interval=1e-4)
                q = q.self_compose(c)
            elif isinstance(item, sdp.RandomizedResponse):
                kk = item.categories
                p = kk / (math.exp(item.epsilon_) + kk - 1)
                q = pld.from_randomized_response(p, kk, value_discretization_interval=1e-4)
                q = q.self_compose(c)
            else:
                q = pld.from_privacy_parameters(
                    common.DifferentialPrivacyParameters(item.epsilon_, 0.0),
                    value_discretization_interval=1e-4,
                ).self_compose(c)
            acc = q if acc is None else acc.compose(q)
        return acc

    acc, t_d = timed(run_dpa, 1)
    e_d = acc.get_epsilon_for_delta(DELTA)
    print(
        f"dp_accounting: eps = {e_d:.8f}  {t_d:.3f} s   speed-up {t_d / t_s:.1f}x (auto);  "
        f"sharpdp - dp_accounting = {hi - e_d:+.2e}"
    )
    for h, (c_hi, t_c) in coarse.items():
        verdict = "better" if c_hi <= e_d else "worse"
        print(f"  h = {h:g}: {verdict} eps than dp_accounting, speed-up {t_d / t_c:.1f}x")


def all_distinct(n_items: int, seed: int = 2) -> None:
    """10^4 items, every one with its own parameters (no grouping possible)."""
    print(f"== all distinct: {n_items} items ==")
    rng = np.random.default_rng(seed)
    n = n_items // 4
    items: list[Any] = [sdp.Gaussian(float(s)) for s in rng.uniform(20, 100, n)]
    items += [sdp.Laplace(float(b)) for b in rng.uniform(50, 200, n)]
    items += [
        sdp.RandomizedResponse(float(e), int(k))
        for e, k in zip(rng.uniform(0.01, 0.05, n), rng.integers(2, 6, n), strict=True)
    ]
    items += [sdp.PureDP(float(e)) for e in rng.uniform(0.01, 0.05, n)]
    runs = {}
    for h in (1e-2, 5e-3):
        (lo, hi), t_s = timed(
            lambda h=h: compose_pld(items, value_discretization=h).epsilon_bracket(DELTA)
        )
        runs[h] = (hi, t_s)
        print(f"sharpdp (h = {h:g}): eps = {hi:.6f} bracket [{lo:.6f}, {hi:.6f}] {t_s:.2f} s")
    (lo, hi), t_s = timed(
        lambda: compose_pld(items, target_relative_error=1e-2).epsilon_bracket(DELTA)
    )
    print(f"sharpdp (auto, target 1e-2): eps = {hi:.6f} bracket [{lo:.6f}, {hi:.6f}] {t_s:.2f} s")
    pld, common = dp_accounting_plds()

    def run_dpa() -> Any:
        acc = None
        for item in items:
            if isinstance(item, sdp.Gaussian):
                q = pld.from_gaussian_mechanism(item.sigma, value_discretization_interval=1e-4)
            elif isinstance(item, sdp.Laplace):
                q = pld.from_laplace_mechanism(item.scale, value_discretization_interval=1e-4)
            elif isinstance(item, sdp.RandomizedResponse):
                kk = item.categories
                p = kk / (math.exp(item.epsilon_) + kk - 1)
                q = pld.from_randomized_response(p, kk, value_discretization_interval=1e-4)
            else:
                q = pld.from_privacy_parameters(
                    common.DifferentialPrivacyParameters(item.epsilon_, 0.0),
                    value_discretization_interval=1e-4,
                )
            acc = q if acc is None else acc.compose(q)
        return acc

    acc, t_d = timed(run_dpa, 1)
    e_d = acc.get_epsilon_for_delta(DELTA)
    print(f"dp_accounting: eps = {e_d:.6f}  {t_d:.1f} s")
    for h, (hi, t_s) in runs.items():
        verdict = "better" if hi <= e_d else "worse"
        print(f"  h = {h:g}: {verdict} eps than dp_accounting, speed-up {t_d / t_s:.1f}x")


if __name__ == "__main__":
    quick = "--quick" in sys.argv
    homogeneous(quick)
    heterogeneous(10_000, 10 if quick else 25)
    if "--distinct" in sys.argv:
        all_distinct(10_000)

"""Power of the statistical audit (``sharpdp.audit.sample``) against deliberately broken mechanisms.

Run: ``python bench/audit_power.py [--runs 100] [--confidence 0.95]``.

Each row runs ``--runs`` independent audits (seeds 0, 1, …) of one sampler on one pair of inputs
against a claim, and reports how often the claim was refuted (the audit's lower bound exceeded the
claimed ε, or η for bounded range), with the per-audit time. Broken cases (the claim is false; the
detection rate should be ≥ 99%):

* ``EM at 2ε, claims ε-DP``: the exponential mechanism run with 2ε (``Exponential(2ε).select``)
  while claiming ``Exponential(ε)``; 10 candidates, q = (1, 0, …, 0) vs q′ = (0, 1, …, 1), where
  the true max-divergence is c + log((1 + 9e^c)/(e^c + 9)) with c = ε (1.776 at ε = 1);
* ``EM at 2ε, claims ε-BR``: the same, audited as a bounded-range claim on q = (0, 1) vs
  q′ = (1, 0) (true spread 2ε);
* ``Laplace at b/2, claims Laplace(b)``: ``Laplace(b/2).release`` claiming ``Laplace(b)``
  (ε = 1/b; true ε = 2/b), inputs 0 and 1, 40 quantile bins;
* ``RNM-exp (= PF) claims ε-BR``: ``ReportNoisyMax(ε, "exponential", monotonic=True).select`` on
  q = (0, 0) vs q′ = (0, 1), claimed ε-BR; its true spread is ε + ln(2 − e^{−ε}) (Durfee–Rogers 2021,
  "One-shot DP top-k mechanisms", differentialprivacy.org).

Controls (the claim is true; refutations should be rare, at most 1 − confidence in expectation):
the same samplers run correctly.

All samplers are sharpdp's exact samplers. Times are wall-clock per audit on this machine.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

try:
    import sharpdp as sdp
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    import sharpdp as sdp

from sharpdp.audit import sample


@dataclass(frozen=True)
class Case:
    name: str
    broken: bool
    sampler: Callable[[Any, int, np.random.Generator], Any]
    x: Any
    x_prime: Any
    claim: sdp.Guarantee
    n: int
    truth: float  # the pair's true ε (or spread) for the comparison
    kwargs: dict[str, Any]


def _selector(m: Any) -> Callable[[Any, int, np.random.Generator], Any]:
    return lambda q, size, rng: m.select(q, rng, size=size)


def _releaser(m: Any) -> Callable[[Any, int, np.random.Generator], Any]:
    return lambda x, size, rng: m.release(np.full(size, float(x)), rng)


def cases(eps: float) -> list[Case]:
    c = eps  # EM at 2ε has coefficient 2ε/(2Δ) = ε
    many_q = [1.0] + [0.0] * 9
    many_qp = [0.0] + [1.0] * 9
    em_truth = c + math.log((1 + 9 * math.exp(c)) / (math.exp(c) + 9))
    pf_truth = eps + math.log(2 - math.exp(-eps))
    lap_b = 1.0 / eps
    scale_n = 1.0 if eps >= 1 else (1.0 / eps) ** 2
    rnm = sdp.ReportNoisyMax(eps, noise="exponential", monotonic=True)
    return [
        Case(
            "EM at 2ε, claims ε-DP", True, _selector(sdp.Exponential(2 * eps)), many_q, many_qp,
            sdp.Exponential(eps), int(4000 * scale_n), em_truth, {},
        ),
        Case(
            "EM at 2ε, claims ε-BR", True, _selector(sdp.Exponential(2 * eps)), [0.0, 1.0],
            [1.0, 0.0], sdp.BoundedRange(eps), int(4000 * scale_n), 2 * eps, {},
        ),
        Case(
            "Laplace at b/2, claims Laplace(b)", True, _releaser(sdp.Laplace(lap_b / 2)), 0.0,
            1.0, sdp.Laplace(lap_b), int(4000 * scale_n), 2 * eps, {"bins": 40},
        ),
        Case(
            "RNM-exp (= PF) claims ε-BR", True, _selector(rnm), [0.0, 0.0], [0.0, 1.0],
            sdp.BoundedRange(eps), int(20000 * scale_n), pf_truth, {},
        ),
        Case(
            "control: EM at ε, claims ε-DP", False, _selector(sdp.Exponential(eps)), many_q,
            many_qp, sdp.Exponential(eps), int(4000 * scale_n),
            c / 2 + math.log((1 + 9 * math.exp(c / 2)) / (math.exp(c / 2) + 9)), {},
        ),
        Case(
            "control: Laplace(b), claims Laplace(b)", False, _releaser(sdp.Laplace(lap_b)), 0.0,
            1.0, sdp.Laplace(lap_b), int(4000 * scale_n), eps, {"bins": 40},
        ),
        Case(
            "control: RNM-exp claims 2ε-BR", False, _selector(rnm), [0.0, 0.0], [0.0, 1.0],
            sdp.BoundedRange(2 * eps), int(20000 * scale_n), pf_truth, {},
        ),
    ]  # fmt: skip


def run(case: Case, runs: int, confidence: float) -> tuple[int, list[float], list[float]]:
    refuted, times, bounds = 0, [], []
    for seed in range(runs):
        t0 = time.perf_counter()
        report = sample(
            case.sampler, case.x, case.x_prime, case.n, confidence=confidence, claim=case.claim,
            rng=seed, progress=False, **case.kwargs,
        )  # fmt: skip
        times.append(time.perf_counter() - t0)
        refuted += bool(report.refuted)
        value = getattr(report, "epsilon_lower", None)
        bounds.append(float(report.spread_lower if value is None else value))
    return refuted, times, bounds


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=100)
    parser.add_argument("--confidence", type=float, default=0.95)
    parser.add_argument("--epsilon", type=float, nargs="+", default=[1.0, 0.25])
    args = parser.parse_args(argv)
    print(f"statistical audit power: {args.runs} audits per row, confidence {args.confidence}")
    header = (
        f"{'ε':>5}  {'case':<40} {'n/input':>8} {'truth':>7} {'claim':>6} "
        f"{'mean lower bd':>13} {'refuted':>9} {'mean s':>7} {'max s':>7}"
    )
    print(header)
    print("-" * len(header))
    for eps in args.epsilon:
        for case in cases(eps):
            refuted, times, bounds = run(case, args.runs, args.confidence)
            claim = (
                case.claim.eta
                if isinstance(case.claim, sdp.BoundedRange)
                else case.claim.epsilon(0.0)
            )
            print(
                f"{eps:>5g}  {case.name:<40} {case.n:>8} {case.truth:>7.4f} {claim:>6.3g} "
                f"{np.mean(bounds):>13.4f} {refuted:>4}/{args.runs:<4} "
                f"{np.mean(times):>7.3f} {np.max(times):>7.3f}"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Independent mpmath references for the audit tests (nothing here imports sharpdp).

Output laws are computed from the mechanisms' definitions at 50 digits:

* exponential mechanism: P[y] = e^{c q_y}/Σ e^{c q};
* permute-and-flip: by enumerating all n! visiting orders (the max-score candidate accepts with
  probability 1, so one pass decides): P[r] = (1/n!) Σ_π p_r Π_{s before r in π} (1 − p_s);
* report-noisy-max with Laplace noise: mpmath quadrature of ∫ f(x − q_r) Π_{s≠r} F(x − q_s) dx;
* top-k: product of peeling softmaxes;
* x + Z for discrete Laplace/Gaussian Z: direct summation on a window so wide that the mass
  outside is below 10^-60, normalised by the same sum.

Divergences of explicit laws use ``reference.renyi`` / ``reference.hockey_stick`` (tests/).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Sequence

import mpmath as mp

DPS = 50


def em_law(scores: Sequence[float], c: float) -> list[mp.mpf]:
    with mp.workdps(DPS):
        w = [mp.exp(mp.mpf(c) * mp.mpf(s)) for s in scores]
        total = mp.fsum(w)
        return [v / total for v in w]


def pf_law(scores: Sequence[float], c: float) -> list[mp.mpf]:
    with mp.workdps(DPS):
        top = max(scores)
        acc = [mp.exp(mp.mpf(c) * (mp.mpf(s) - top)) for s in scores]
        n = len(scores)
        out = [mp.mpf(0)] * n
        for order in itertools.permutations(range(n)):
            reach = mp.mpf(1)
            for r in order:
                out[r] += reach * acc[r]
                reach *= 1 - acc[r]
        total = math.factorial(n)
        return [v / total for v in out]


def rnm_laplace_law(scores: Sequence[float], scale: float) -> list[mp.mpf]:
    with mp.workdps(30):
        b = mp.mpf(scale)
        qs = [mp.mpf(s) for s in scores]

        def cdf(x: mp.mpf) -> mp.mpf:
            return mp.exp(x / b) / 2 if x < 0 else 1 - mp.exp(-x / b) / 2

        out = []
        for r, qr in enumerate(qs):

            def integrand(x: mp.mpf, r: int = r, qr: mp.mpf = qr) -> mp.mpf:
                value = mp.exp(-abs(x - qr) / b) / (2 * b)
                for s, qs_ in enumerate(qs):
                    if s != r:
                        value *= cdf(x - qs_)
                return value

            points = [min(qs) - 60 * b, *sorted(set(qs)), max(qs) + 60 * b]
            out.append(mp.quad(integrand, points))
        total = mp.fsum(out)
        return [v / total for v in out]


def topk_law(scores: Sequence[float], c: float, k: int) -> dict[tuple[int, ...], mp.mpf]:
    with mp.workdps(DPS):
        w = [mp.exp(mp.mpf(c) * mp.mpf(s)) for s in scores]
        out: dict[tuple[int, ...], mp.mpf] = {}
        for t in itertools.permutations(range(len(scores)), k):
            prob, left = mp.mpf(1), set(range(len(scores)))
            for i in t:
                prob *= w[i] / mp.fsum(w[j] for j in left)
                left.remove(i)
            out[t] = prob
        return out


def shift_laws(kind: str, param: float, a: int, b: int) -> tuple[list[mp.mpf], list[mp.mpf]]:
    """Laws of a + Z and b + Z on a common window (mass outside < 1e-60)."""
    with mp.workdps(DPS):
        p = mp.mpf(param)
        if kind == "laplace":
            w = int(mp.ceil(150 * p)) + 10

            def weight(z: int) -> mp.mpf:
                return mp.exp(-abs(mp.mpf(z)) / p)
        else:
            w = int(mp.ceil(18 * p)) + 10

            def weight(z: int) -> mp.mpf:
                return mp.exp(-(mp.mpf(z) ** 2) / (2 * p**2))

        norm = mp.fsum(weight(z) for z in range(-w - abs(a - b), w + abs(a - b) + 1))
        ys = range(min(a, b) - w, max(a, b) + w + 1)
        return [weight(y - a) / norm for y in ys], [weight(y - b) / norm for y in ys]

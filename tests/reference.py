"""Independent reference computations for the sharpdp test-suite.

Nothing here imports sharpdp. Every quantity is computed from its definition, at 50 significant
digits with mpmath, in one of three ways:

* direct summation over explicit finite distributions (randomized response, the two-point pairs
  GRR_t of bounded range, the four-point pair of (ε, δ)-DP);
* quadrature (``mpmath.quad``) of the Gaussian and Laplace densities;
* brute force: a dense grid followed by golden-section refinement (sup over t for bounded range,
  inf over α for the CKS20 conversion, sup over α of D_α/α).

The few closed forms (DRS/Balle–Wang Gaussian profile, Mironov's Laplace RDP, CKS20, BS16) are
written here from the papers (Dong–Roth–Su 2019 Cor 2.13, Balle–Wang 2018 Thm 8, Mironov 2017
Prop 6, Canonne–Kamath–Steinke 2020 Prop 12, Bun–Steinke 2016 Lemma 3.5) and are themselves
checked against quadrature in the tests.

Conventions: the privacy profile of a pair (P, Q) is
δ(ε) = Σ_y max(0, P(y) − e^ε Q(y)); D_α(P‖Q) = (α − 1)^{-1} log Σ_y P^α Q^{1−α}. A mechanism's value
is the sup over both orders of the pair.

Examples:
    >>> float(rr_renyi(1.0, 1))  # KL of binary RR = ε·tanh(ε/2)
    0.46211715726000974
    >>> round(float(gaussian_epsilon(1.0, 1e-5)), 6)  # Balle–Wang 2018 Thm 8, σ = 1, δ = 1e-5
    4.377178
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from functools import cache
from itertools import pairwise, product

import mpmath as mp

DPS = 50
INF = mp.inf

Dist = list[mp.mpf]


def _mpf(x: object) -> mp.mpf:
    return mp.mpf(x)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------------------
# Explicit finite distributions
# --------------------------------------------------------------------------------------------------


def rr_pair(epsilon: float, categories: int = 2) -> tuple[Dist, Dist]:
    """Output laws of k-ary randomized response on true values 0 and 1."""
    with mp.workdps(DPS):
        e = mp.exp(_mpf(epsilon))
        z = e + (categories - 1)
        p = [e / z] + [1 / z] * (categories - 1)
        q = [1 / z, e / z] + [1 / z] * (categories - 2)
        return p, q


@cache
def _grr_constants(eta: float, prec: int) -> tuple[mp.mpf, mp.mpf]:
    """e^{−η} and 1 − e^{−η} at ``prec`` bits (GRR_t's t-free part, computed once per η)."""
    with mp.workprec(prec):
        eta_ = _mpf(eta)
        return mp.exp(-eta_), -mp.expm1(-eta_)


def grr_pair(eta: float, t: float) -> tuple[Dist, Dist]:
    """The two-point pair GRR_t of η-bounded range (outcomes A, B; losses t and t − η)."""
    with mp.workdps(DPS):
        eta_, t_ = _mpf(eta), _mpf(t)
        exp_minus_eta, one_minus_exp_minus_eta = _grr_constants(eta, mp.mp.prec)
        qa = (mp.exp(-t_) - exp_minus_eta) / one_minus_exp_minus_eta
        p = [mp.exp(t_) * qa, mp.exp(t_ - eta_) * (1 - qa)]
        return p, [qa, 1 - qa]


def approx_dp_pair(epsilon: float, delta: float) -> tuple[Dist, Dist]:
    """Kairouz–Oh–Viswanath's four-point dominating pair of (ε, δ)-DP."""
    with mp.workdps(DPS):
        e, d = mp.exp(_mpf(epsilon)), _mpf(delta)
        a, b = (1 - d) * e / (1 + e), (1 - d) / (1 + e)
        zero = mp.mpf(0)
        return [d, a, b, zero], [zero, b, a, d]


def hockey_stick(p: Dist, q: Dist, epsilon: float) -> mp.mpf:
    """Σ_y max(0, P(y) − e^ε Q(y)); at ε = ∞ the P-mass where Q vanishes."""
    with mp.workdps(DPS):
        eps = _mpf(epsilon)
        if eps == INF:
            return mp.fsum(pi for pi, qi in zip(p, q, strict=True) if qi == 0)
        factor = mp.exp(eps)
        return mp.fsum(max(mp.mpf(0), pi - factor * qi) for pi, qi in zip(p, q, strict=True))


def renyi(p: Dist, q: Dist, alpha: float) -> mp.mpf:
    """D_α(P‖Q) by summation (α = 1: KL, α = ∞: max-divergence)."""
    with mp.workdps(DPS):
        a = _mpf(alpha)
        support = [(pi, qi) for pi, qi in zip(p, q, strict=True) if pi > 0]
        if any(qi == 0 for _, qi in support):
            return INF
        if a == 1:
            return mp.fsum(pi * mp.log(pi / qi) for pi, qi in support)
        if a == INF:
            return max(mp.log(pi / qi) for pi, qi in support)
        return mp.log(mp.fsum(pi**a * qi ** (1 - a) for pi, qi in support)) / (a - 1)


def sym_renyi(p: Dist, q: Dist, alpha: float) -> mp.mpf:
    """max(D_α(P‖Q), D_α(Q‖P)): the value over both orders of a neighbouring pair."""
    return max(renyi(p, q, alpha), renyi(q, p, alpha))


def sym_hockey_stick(p: Dist, q: Dist, epsilon: float) -> mp.mpf:
    """max of the hockey-stick divergence over both orders of the pair."""
    return max(hockey_stick(p, q, epsilon), hockey_stick(q, p, epsilon))


def rr_delta(epsilon0: float, epsilon: float, categories: int = 2) -> mp.mpf:
    """Exact profile of k-ary RR (ε0-DP; k = 2 is the worst case of ε0-DP) by enumeration."""
    return sym_hockey_stick(*rr_pair(epsilon0, categories), epsilon)


def rr_renyi(epsilon0: float, alpha: float, categories: int = 2) -> mp.mpf:
    """Exact D_α of k-ary RR by enumeration."""
    return sym_renyi(*rr_pair(epsilon0, categories), alpha)


def rr_outcomes(epsilons: Sequence[object]) -> Iterator[tuple[mp.mpf, mp.mpf]]:
    """(loss, P-mass) of every outcome of the product of binary ε_i-randomized-response pairs:
    the loss is Σ ±ε_i, the mass Π e^{ε_i}/(1 + e^{ε_i}) over the + signs times Π 1/(1 + e^{ε_i})
    over the − signs (2^n outcomes, not merged)."""
    eps = [_mpf(e) for e in epsilons]
    for signs in product((1, -1), repeat=len(eps)):
        loss = mp.fsum(s * e for s, e in zip(signs, eps, strict=True))
        mass = mp.fprod(
            (mp.exp(e) if s > 0 else 1) / (1 + mp.exp(e)) for s, e in zip(signs, eps, strict=True)
        )
        yield loss, mass


def laplace_pair_delta(t: object, epsilon0: object) -> mp.mpf:
    """δ(t) at any real t of the Laplace pair with ε0 = Δ/b, in closed form: 1 − e^t for t ≤ −ε0,
    1 − e^{(t − ε0)/2} on [−ε0, ε0], 0 above (checked against quadrature in the tests)."""
    tt, e0 = _mpf(t), _mpf(epsilon0)
    if tt >= e0:
        return mp.mpf(0)
    if tt <= -e0:
        return 1 - mp.exp(tt)
    return 1 - mp.exp((tt - e0) / 2)


def approx_dp_delta(epsilon0: float, delta0: float, epsilon: float) -> mp.mpf:
    """Tight profile of (ε0, δ0)-DP: the KOV four-point pair, by enumeration."""
    return sym_hockey_stick(*approx_dp_pair(epsilon0, delta0), epsilon)


# --------------------------------------------------------------------------------------------------
# Brute-force optimisation (dense grid, then golden-section refinement of the best cell)
# --------------------------------------------------------------------------------------------------

_GOLDEN = (mp.sqrt(5) - 1) / 2


def _golden_max(f: Callable[[mp.mpf], mp.mpf], lo: mp.mpf, hi: mp.mpf, iterations: int) -> mp.mpf:
    g = _GOLDEN
    x1, x2 = hi - g * (hi - lo), lo + g * (hi - lo)
    f1, f2 = f(x1), f(x2)
    best = max(f1, f2)
    for _ in range(iterations):
        if f1 < f2:
            lo, x1, f1 = x1, x2, f2
            x2 = lo + g * (hi - lo)
            f2 = f(x2)
        else:
            hi, x2, f2 = x2, x1, f1
            x1 = hi - g * (hi - lo)
            f1 = f(x1)
        best = max(best, f1, f2)
    return best


def grid_sup(
    f: Callable[[mp.mpf], mp.mpf],
    lo: float,
    hi: float,
    *,
    points: int = 400,
    refine: bool = True,
    iterations: int = 110,
) -> mp.mpf:
    """sup of f over [lo, hi]: a dense grid, then golden section in the cells beside the best point.

    Every returned value is an attained value f(x), hence a lower bound on the true sup; with the
    refinement it is the sup to ~1e-40 for functions unimodal on the grid's scale.
    """
    with mp.workdps(DPS):
        lo_, hi_ = _mpf(lo), _mpf(hi)
        xs = [lo_ + (hi_ - lo_) * i / points for i in range(points + 1)]
        values = [f(x) for x in xs]
        i_best = max(range(len(xs)), key=lambda i: values[i])
        best = values[i_best]
        if refine:
            a, b = xs[max(i_best - 1, 0)], xs[min(i_best + 1, points)]
            best = max(best, _golden_max(f, a, b, iterations))
        return best


def grid_inf(f: Callable[[mp.mpf], mp.mpf], lo: float, hi: float, **kwargs: object) -> mp.mpf:
    """inf of f over [lo, hi] (see :func:`grid_sup`); an attained value, so an upper bound."""
    return -grid_sup(lambda x: -f(x), lo, hi, **kwargs)  # type: ignore[arg-type]


def invert_profile(profile: Callable[[mp.mpf], mp.mpf], delta: float) -> mp.mpf:
    """Smallest ε ≥ 0 with profile(ε) ≤ δ, by bisection (profile non-increasing); ∞ if none."""
    with mp.workdps(DPS):
        d = _mpf(delta)
        if profile(mp.mpf(0)) <= d:
            return mp.mpf(0)
        lo, hi = mp.mpf(0), mp.mpf(1)
        while profile(hi) > d:
            lo, hi = hi, 2 * hi
            if hi > 1e7:
                return INF
        for _ in range(400):
            if hi - lo <= mp.mpf(10) ** (-(DPS - 8)) * hi:
                break
            mid = (lo + hi) / 2
            if profile(mid) > d:
                lo = mid
            else:
                hi = mid
        return hi


# --------------------------------------------------------------------------------------------------
# Bounded range: sup over the GRR_t family (brute force over a dense t-grid)
# --------------------------------------------------------------------------------------------------


def br_renyi(eta: float, alpha: float, *, points: int = 400, iterations: int = 110) -> mp.mpf:
    """sup_t D_α(GRR_t) for t ∈ [0, η] (the family is closed under swapping the pair)."""
    with mp.workdps(DPS):
        if _mpf(alpha) == INF:
            return _mpf(eta)  # D_∞(GRR_t) = t, sup over t ∈ [0, η]
        return grid_sup(
            lambda t: renyi(*grr_pair(eta, t), alpha),
            0,
            eta,
            points=points,
            iterations=iterations,
        )


def br_delta(eta: float, epsilon: float, *, points: int = 400, iterations: int = 110) -> mp.mpf:
    """sup_t δ_{GRR_t}(ε) for t ∈ [0, η] (brute-force profile of η-bounded range).

    For ε ≥ 0 only outcome A (loss t) can exceed ε, and δ_{GRR_t}(ε) = (1 − e^{ε−t} − e^{t−η} +
    e^{ε−η})/(1 − e^{−η}) on [ε, η] is concave in t: the golden section in the cells beside the
    best grid point then finds the sup on any grid, its t within 2(η − ε)·0.618^n/points of the
    argmax after n = ``iterations`` steps, its value within ~8(2·0.618^n/points)² of the sup
    (relative; n = 60 and 40 points: 2e-27).
    """
    with mp.workdps(DPS):
        eps = _mpf(epsilon)
        if eps >= _mpf(eta):
            return mp.mpf(0)
        # δ_{GRR_t}(ε) = 0 for t ≤ ε (no outcome has loss above ε), so grid t ∈ [max(ε, 0), η].
        lo = max(eps, mp.mpf(0))
        return grid_sup(
            lambda t: hockey_stick(*grr_pair(eta, t), eps),
            lo,
            eta,
            points=points,
            iterations=iterations,
        )


def br_epsilon(eta: float, delta: float, *, points: int = 400) -> mp.mpf:
    """Smallest ε ≥ 0 with sup_t δ_{GRR_t}(ε) ≤ δ, i.e. sup_t of each pair's own ε_t(δ).

    For GRR_t only outcome A (loss t) can exceed e^ε, so δ_t(ε) = Q(A)(e^t − e^ε)_+ and
    ε_t(δ) = log(e^t − δ/Q(A)) (or 0); the sup over t is taken by brute force.
    """
    with mp.workdps(DPS):
        d = _mpf(delta)

        def eps_t(t: mp.mpf) -> mp.mpf:
            p, q = grr_pair(eta, t)
            if q[0] == 0 or p[0] - q[0] <= d:  # δ_t(0) = P(A) − Q(A) ≤ δ
                return mp.mpf(0)
            return mp.log(mp.exp(t) - d / q[0])

        return grid_sup(eps_t, 0, eta, points=points)


def br_max_kl(eta: float, *, points: int = 400) -> mp.mpf:
    """max_t KL(GRR_t) over a dense t-grid (refined)."""
    return br_renyi(eta, 1, points=points)


# --------------------------------------------------------------------------------------------------
# Additive mechanisms by quadrature
# --------------------------------------------------------------------------------------------------


def _gauss_logpdf(y: mp.mpf, mean: mp.mpf, sigma: mp.mpf) -> mp.mpf:
    return -((y - mean) ** 2) / (2 * sigma**2) - mp.log(sigma * mp.sqrt(2 * mp.pi))


def _laplace_logpdf(y: mp.mpf, mean: mp.mpf, scale: mp.mpf) -> mp.mpf:
    return -abs(y - mean) / scale - mp.log(2 * scale)


def _breakpoints(points: Sequence[mp.mpf]) -> list[mp.mpf]:
    return [-INF, *sorted(set(points)), INF]


def _scaled_quad(integrand: Callable[[mp.mpf], mp.mpf], points: Sequence[mp.mpf]) -> mp.mpf:
    """∫ integrand over ℝ, split at ``points``. mpmath's tanh-sinh stops on an *absolute* error
    estimate, so the integrand is first divided by its largest value at the breakpoints."""
    scale = max((integrand(x) for x in points), default=mp.mpf(0))
    if scale <= 0:
        scale = mp.mpf(1)
    return scale * mp.quad(lambda y: integrand(y) / scale, _breakpoints(points))


def _quad_profile(logp, logq, epsilon, points) -> mp.mpf:  # type: ignore[no-untyped-def]
    eps = _mpf(epsilon)
    factor = mp.exp(eps)

    def integrand(y: mp.mpf) -> mp.mpf:
        return max(mp.mpf(0), mp.exp(logp(y)) - factor * mp.exp(logq(y)))

    return _scaled_quad(integrand, points)


def _quad_renyi(logp, logq, alpha, points) -> mp.mpf:  # type: ignore[no-untyped-def]
    a = _mpf(alpha)
    if a == 1:
        return _scaled_quad(lambda y: mp.exp(logp(y)) * (logp(y) - logq(y)), points)
    total = _scaled_quad(lambda y: mp.exp(a * logp(y) + (1 - a) * logq(y)), points)
    return mp.log(total) / (a - 1)


def gaussian_delta_quad(sigma: float, epsilon: float, sensitivity: float = 1.0) -> mp.mpf:
    """δ(ε) = ∫ max(0, p − e^ε q) for p = N(0, σ²), q = N(Δ, σ²) (both orders are equal)."""
    with mp.workdps(DPS):
        s, d, e = _mpf(sigma), _mpf(sensitivity), _mpf(epsilon)
        crossing = d / 2 - e * s**2 / d  # where p = e^ε q (a quadrature breakpoint only)
        # breakpoints: the means, the crossing, and a geometric ladder left of the crossing (where
        # the integrand lives; its local width can be far below σ in the far tail)
        ladder = [crossing - s * mp.mpf(4) ** j for j in range(-6, 3)]
        pts = [mp.mpf(0), d, crossing, -8 * s, d + 8 * s, *ladder]
        return _quad_profile(
            lambda y: _gauss_logpdf(y, 0, s), lambda y: _gauss_logpdf(y, d, s), e, pts
        )


def gaussian_renyi_quad(sigma: float, alpha: float, sensitivity: float = 1.0) -> mp.mpf:
    """D_α(N(0, σ²) ‖ N(Δ, σ²)) by quadrature."""
    with mp.workdps(DPS):
        s, d, a = _mpf(sigma), _mpf(sensitivity), _mpf(alpha)
        pts = [mp.mpf(0), d, (1 - a) * d]
        return _quad_renyi(
            lambda y: _gauss_logpdf(y, 0, s), lambda y: _gauss_logpdf(y, d, s), a, pts
        )


def laplace_delta_quad(scale: float, epsilon: float, sensitivity: float = 1.0) -> mp.mpf:
    """δ(ε) = ∫ max(0, p − e^ε q) for p = Lap(0, b), q = Lap(Δ, b) (both orders are equal)."""
    with mp.workdps(DPS):
        b, d, e = _mpf(scale), _mpf(sensitivity), _mpf(epsilon)
        crossing = (d - e * b) / 2
        pts = [mp.mpf(0), d, crossing]
        return _quad_profile(
            lambda y: _laplace_logpdf(y, 0, b), lambda y: _laplace_logpdf(y, d, b), e, pts
        )


def two_laplace_delta(epsilon0: float, epsilon: float) -> mp.mpf:
    """δ(ε) of two composed Laplace mechanisms of ε₀ = Δ/b, from the law of one loss under
    P = Lap(0, b): an atom at ε₀ (mass ½), one at −ε₀ (mass e^{−ε₀}/2), and on (−ε₀, ε₀) the
    density e^{(l−ε₀)/2}/4 (l = ε₀(1 − 2y/Δ) for y ∈ (0, Δ)). δ(ε) = E[(1 − e^{ε−L₁−L₂})₊]: the
    atom pairs summed, atom × density integrated once, density × density twice (the inner
    integral in closed form)."""
    with mp.workdps(DPS):
        e0, e = _mpf(epsilon0), _mpf(epsilon)
        atoms = [(e0, mp.mpf(1) / 2), (-e0, mp.exp(-e0) / 2)]

        def density(x: mp.mpf) -> mp.mpf:
            return mp.exp((x - e0) / 2) / 4

        total = mp.mpf(0)
        for a, pa in atoms:
            for b, pb in atoms:
                if a + b > e:
                    total += pa * pb * -mp.expm1(e - a - b)
        for a, pa in atoms:
            lo = max(-e0, e - a)
            if lo < e0:
                total += (
                    2 * pa * mp.quad(lambda x, a=a: density(x) * -mp.expm1(e - a - x), [lo, e0])
                )

        def inner(x1: mp.mpf) -> mp.mpf:  # ∫_{lo}^{ε₀} density(x2)·(1 − e^{ε−x1−x2}) dx2
            lo = max(-e0, e - x1)
            if lo >= e0:
                return mp.mpf(0)
            scale = mp.exp(-e0 / 2) / 4
            return scale * (
                2 * (mp.exp(e0 / 2) - mp.exp(lo / 2))
                + 2 * mp.exp(e - x1) * (mp.exp(-e0 / 2) - mp.exp(-lo / 2))
            )

        return total + mp.quad(lambda x1: density(x1) * inner(x1), [max(-e0, e - e0), e0])


def laplace_renyi_quad(scale: float, alpha: float, sensitivity: float = 1.0) -> mp.mpf:
    """D_α(Lap(0, b) ‖ Lap(Δ, b)) by quadrature (α = 1: KL)."""
    with mp.workdps(DPS):
        b, d = _mpf(scale), _mpf(sensitivity)
        return _quad_renyi(
            lambda y: _laplace_logpdf(y, 0, b),
            lambda y: _laplace_logpdf(y, d, b),
            alpha,
            [mp.mpf(0), d],
        )


# --------------------------------------------------------------------------------------------------
# Closed forms written from the papers cited at each (each checked against quadrature in the tests)
# --------------------------------------------------------------------------------------------------


def gaussian_delta(mu: float, epsilon: float) -> mp.mpf:
    """μ-GDP profile [DRS Cor 2.13; Balle–Wang 2018 Thm 8]: Φ(μ/2 − ε/μ) − e^ε Φ(−μ/2 − ε/μ)."""
    with mp.workdps(DPS):
        m, e = _mpf(mu), _mpf(epsilon)
        if e == INF:
            return mp.mpf(0)
        return mp.ncdf(m / 2 - e / m) - mp.exp(e) * mp.ncdf(-m / 2 - e / m)


def gaussian_epsilon(mu: float, delta: float) -> mp.mpf:
    """Exact ε(δ) of μ-GDP (bisection on :func:`gaussian_delta`)."""
    return invert_profile(lambda e: gaussian_delta(mu, e), delta)


def laplace_renyi(epsilon0: float, alpha: float) -> mp.mpf:
    """Mironov 2017 Prop 6 (λ = 1/ε0); α = 1 is the KL ε0 + e^{−ε0} − 1, α = ∞ is ε0."""
    with mp.workdps(DPS):
        e0, a = _mpf(epsilon0), _mpf(alpha)
        if a == 1:
            return e0 + mp.exp(-e0) - 1
        if a == INF:
            return e0
        inner = a / (2 * a - 1) * mp.exp((a - 1) * e0) + (a - 1) / (2 * a - 1) * mp.exp(-a * e0)
        return mp.log(inner) / (a - 1)


def cks20_epsilon_point(alpha: mp.mpf, tau: mp.mpf, delta: mp.mpf) -> mp.mpf:
    """CKS20 Prop 12: ε = τ + [log(1/δ) + (α−1) log(1−1/α) − log α]/(α−1)."""
    with mp.workdps(DPS):
        a = _mpf(alpha)
        return tau + (mp.log(1 / _mpf(delta)) + (a - 1) * mp.log(1 - 1 / a) - mp.log(a)) / (a - 1)


def cks20_delta_point(alpha: mp.mpf, tau: mp.mpf, epsilon: mp.mpf) -> mp.mpf:
    """CKS20 Prop 12: δ = e^{(α−1)(τ−ε)}/(α−1) · (1 − 1/α)^α."""
    with mp.workdps(DPS):
        a = _mpf(alpha)
        return mp.exp((a - 1) * (tau - _mpf(epsilon))) / (a - 1) * (1 - 1 / a) ** a


def zcdp_cks20_epsilon(rho: float, delta: float, xi: float = 0.0) -> mp.mpf:
    """CKS20 Cor 13: inf over α > 1 of Prop 12 with τ = ξ + αρ (brute force over log(α − 1)).

    Clipped below at 0 (Prop 12 can return a negative ε; every ε ≥ 0 is then valid).
    """
    with mp.workdps(DPS):
        r, x = _mpf(rho), _mpf(xi)

        def f(u: mp.mpf) -> mp.mpf:
            a = 1 + mp.exp(u)
            return cks20_epsilon_point(a, x + a * r, delta)

        return max(mp.mpf(0), grid_inf(f, -25, 25, points=500))


def zcdp_cks20_delta(rho: float, epsilon: float, xi: float = 0.0) -> mp.mpf:
    """CKS20 Cor 13: inf over α > 1 of Prop 12's δ with τ = ξ + αρ, capped at 1."""
    with mp.workdps(DPS):
        r, x = _mpf(rho), _mpf(xi)

        def f(u: mp.mpf) -> mp.mpf:
            a = 1 + mp.exp(u)
            return cks20_delta_point(a, x + a * r, epsilon)

        return min(mp.mpf(1), grid_inf(f, -25, 25, points=500))


def bs16_lemma35_epsilon(rho: float, delta: float, xi: float = 0.0) -> mp.mpf:
    """BS16 Lemma 3.5: ε = ξ + ρ + 2√(ρ log(1/δ))."""
    with mp.workdps(DPS):
        r = _mpf(rho)
        return _mpf(xi) + r + 2 * mp.sqrt(r * mp.log(1 / _mpf(delta)))


def sup_renyi_over_alpha(
    curve: Callable[[mp.mpf], mp.mpf],
    *,
    top: float = 1e4,
    points: int = 300,
    iterations: int = 110,
) -> mp.mpf:
    """sup over α ∈ [1, top] of curve(α)/α (α = 1 included as the KL), brute force on log(α − 1).

    A lower bound on sup_α D_α/α, i.e. on the zCDP parameter of the pair.
    """
    with mp.workdps(DPS):
        kl = curve(mp.mpf(1))
        inner = grid_sup(
            lambda u: curve(1 + mp.exp(u)) / (1 + mp.exp(u)),
            -30,
            float(mp.log(top)),
            points=points,
            iterations=iterations,
        )
        return max(kl, inner)


def laplace_k_fold_epsilon_lower(eps0: float, k: int, delta: float, cells: int) -> float:
    """A lower bound on ε(δ) of k-fold Laplace with ε0 = Δ/b (float arithmetic, numpy FFT).

    The output of (Lap(0, b), Lap(Δ, b)) binned into the cells [jΔ/M, (j+1)Δ/M) of (0, Δ) plus the
    two tails is a post-processing, so its composition is at most as distinguishable as the
    mechanism's. Its losses lie exactly on the grid h = ε0/M: ε0 (P-mass 1/2), −ε0
    (P-mass e^{−ε0}/2) and (M − 2j − 1)h (P-mass (e^{−jh} − e^{−(j+1)h})/2). The k-fold law is
    one FFT power; ε is found by bisection on δ(ε) = Σ p_i (1 − e^{ε − l_i})_+. Float error is
    far below the binning error for the sizes used in the tests (≤ 1e-9 relative in ε).
    """
    import numpy as np

    m = cells
    h = eps0 / m
    pmf = np.zeros(2 * m + 1)  # index i ↔ loss (i − m)h
    pmf[2 * m] = 0.5
    pmf[0] = 0.5 * np.exp(-eps0)
    j = np.arange(m)
    pmf[2 * m - 2 * j - 1] = 0.5 * (np.exp(-j * h) - np.exp(-(j + 1) * h))
    size = 2 * m * k + 1
    n = 1 << (size - 1).bit_length()
    law = np.fft.irfft(np.fft.rfft(pmf, n) ** k, n)[:size]
    law = np.maximum(law, 0.0)
    losses = (np.arange(size) - m * k) * h

    def profile(eps: float) -> float:
        above = losses > eps
        return float(np.sum(law[above] * -np.expm1(eps - losses[above])))

    lo, hi = 0.0, k * eps0
    for _ in range(80):
        mid = 0.5 * (lo + hi)
        if profile(mid) > delta:
            lo = mid
        else:
            hi = mid
    return lo


def _gaussian_delta_any(mu: mp.mpf, t: mp.mpf) -> mp.mpf:
    """E[(1 − e^{t − L})_+] for L ~ N(μ²/2, μ²) at any real t (the same closed form)."""
    return mp.ncdf(mu / 2 - t / mu) - mp.exp(t) * mp.ncdf(-mu / 2 - t / mu)


Piece = tuple[int, mp.mpf, mp.mpf, list[mp.mpf], Callable[[mp.mpf], mp.mpf]]


def _laplace_k_fold_pieces(e0: mp.mpf, k: int) -> Iterator[Piece]:
    """The pieces (r, weight, x, knots, spline) of the k-fold Laplace loss law under P.

    One Laplace loss law: atoms ε0 (mass 1/2) and −ε0 (mass e^{−ε0}/2) plus the density
    (1/4)e^{−ε0/2}e^{l/2} on (−ε0, ε0). Its k-fold law is Σ_r C(k, r) (atoms)^{*(k−r)} * γ^{*r}:
    an atom at x = (k − r − 2j)ε0 of weight C(k, r)C(k−r, j)(1/2)^{k−r−j}(e^{−ε0}/2)^j, shifted by
    γ^{*r}(s) = ((1/4)e^{−ε0/2})^r e^{s/2} IH_r(s), IH_r the r-fold convolution of the indicator
    of (−ε0, ε0) (a B-spline: Σ_i (−1)^i C(r, i)(s − c_i)_+^{r−1}/(r − 1)!, c_i = (2i − r)ε0, on
    the knots c_0..c_r). For r = 0 the weight is that of the atom alone; for r ≥ 1 it includes
    ((1/4)e^{−ε0/2})^r.
    """
    for r in range(k + 1):
        knots = [(2 * i - r) * e0 for i in range(r + 1)]
        # exact integers (math.comb, not mp.binomial: the same values, without gamma functions)
        signed = [(-1) ** i * math.comb(r, i) for i in range(r + 1)]
        factorial = math.factorial(max(r - 1, 0))

        def spline(
            s: mp.mpf,
            r: int = r,
            knots: list[mp.mpf] = knots,
            signed: list[int] = signed,
            factorial: int = factorial,
        ) -> mp.mpf:
            acc = mp.mpf(0)
            for coefficient, c in zip(signed, knots, strict=True):
                if s > c:
                    acc += coefficient * (s - c) ** (r - 1)
            return acc / factorial

        dens = (mp.exp(-e0 / 2) / 4) ** r
        for j in range(k - r + 1):
            w = math.comb(k, r) * math.comb(k - r, j) * mp.mpf(0.5) ** (k - r - j)
            w *= (mp.exp(-e0) / 2) ** j
            yield r, w * dens, (k - r - 2 * j) * e0, knots, spline


def _finite_quad(f: Callable[[mp.mpf], mp.mpf], points: Sequence[mp.mpf]) -> tuple[mp.mpf, mp.mpf]:
    """∫ f over [points[0], points[-1]], split at ``points`` (f analytic on each piece), and
    mpmath's estimate of its error: see :func:`_checked`.

    Gauss–Legendre: on such pieces it reaches the working precision with a fraction of tanh-sinh's
    evaluations. mpmath stops on an *absolute* error estimate, so f is first divided by its
    largest |value| at the points and midpoints (a 1e-308 integrand would "converge" at once).
    """
    probes = [*points, *((a + b) / 2 for a, b in pairwise(points))]
    scale = max(abs(f(x)) for x in probes)
    if scale == 0:
        scale = mp.mpf(1)
    value, error = mp.quad(lambda y: f(y) / scale, points, method="gauss-legendre", error=True)
    return scale * value, scale * error


def _checked(total: mp.mpf, error: mp.mpf) -> mp.mpf:
    """``total``, after checking that the quadratures' error estimates sum to at most 1e-12 of
    the working precision relative to it: a quadrature that did not converge raises instead of
    returning a rough value (a piece far from where the integrand lives may fail alone, harmlessly:
    only the sum's error counts)."""
    if error > mp.mpf(10) ** (12 - mp.mp.dps) * abs(total):
        raise ArithmeticError(f"quadrature did not converge (error {error}, value {total})")
    return total


def _split_at_transition(points: Sequence[mp.mpf], centre: mp.mpf, width: mp.mpf) -> list[mp.mpf]:
    """``points`` plus centre ± {0, 1, 4, 16}·width inside their range: where δ_G(t − s) turns
    from ~0 to ~1 − e^{t − s} (over a few μ), so that each piece stays smooth on its own scale."""
    lo, hi = points[0], points[-1]
    extra = {centre + m * width for m in (-16, -4, -1, 0, 1, 4, 16)}
    return sorted({*points, *(x for x in extra if lo < x < hi)})


def laplace_gaussian_delta(eps0: float, k: int, mu: float, epsilon: float) -> mp.mpf:
    """δ(ε) of k-fold Laplace (ε0 = Δ/b, k ≤ 3) composed with μ-GDP, by quadrature over the
    pieces of :func:`_laplace_k_fold_pieces`: δ(ε) = E[δ_G(ε − L_lap)]."""
    if not 0 <= k <= 3:
        raise ValueError("k ≤ 3 (quadrature over the B-spline pieces)")
    with mp.workdps(DPS):
        e0, m, e = _mpf(eps0), _mpf(mu), _mpf(epsilon)
        total = error = mp.mpf(0)
        for r, w, x, knots, spline in _laplace_k_fold_pieces(e0, k):
            if r == 0:
                total += w * _gaussian_delta_any(m, e - x)
                continue

            def f(s: mp.mpf, x: mp.mpf = x, spline: Callable[[mp.mpf], mp.mpf] = spline) -> mp.mpf:
                return mp.exp(s / 2) * spline(s) * _gaussian_delta_any(m, e - x - s)

            value, err = _finite_quad(f, _split_at_transition(knots, e - x, m))
            total, error = total + w * value, error + w * err
        return _checked(total, error)


def rr_gaussian_delta(eps0: float, k: int, mu: float, epsilon: float) -> mp.mpf:
    """δ(ε) of k-fold binary ε0-randomized response composed with μ-GDP (direct summation)."""
    with mp.workdps(DPS):
        e0, m, e = _mpf(eps0), _mpf(mu), _mpf(epsilon)
        p = mp.exp(e0) / (1 + mp.exp(e0))
        return mp.fsum(
            math.comb(k, j)
            * p ** (k - j)
            * (1 - p) ** j
            * _gaussian_delta_any(m, e - (k - 2 * j) * e0)
            for j in range(k + 1)
        )


def approx_laplace_gaussian_delta(
    eps0: float, delta0: float, k: int, lap_eps0: float, mu: float, epsilon: float
) -> mp.mpf:
    """δ(ε) of k-fold (ε0, δ0)-DP (its KOV pair: mass δ0 at +∞, (1 − δ0)·RR(ε0) otherwise),
    one Laplace (ε0 = ``lap_eps0``) and μ-GDP: 1 − (1 − δ0)^k + (1 − δ0)^k·E[δ_{lap+G}(ε − L_RR)]."""
    with mp.workdps(DPS):
        e0 = _mpf(eps0)
        p = mp.exp(e0) / (1 + mp.exp(e0))
        fin = (1 - _mpf(delta0)) ** k
        inner = mp.fsum(
            math.comb(k, j)
            * p ** (k - j)
            * (1 - p) ** j
            * laplace_gaussian_delta(lap_eps0, 1, mu, float(_mpf(epsilon) - (k - 2 * j) * e0))
            for j in range(k + 1)
        )
        return 1 - fin + fin * inner


def laplace_k_fold_delta(eps0: float, k: int, epsilon: float) -> mp.mpf:
    """δ(ε) of the k-fold Laplace mechanism (ε0 = Δ/b) by quadrature over the pieces of
    :func:`_laplace_k_fold_pieces`, integrated against (1 − e^{ε − l})_+ with ``mpmath.quad`` on
    each B-spline piece. Cost ~k³ quadratures.
    """
    with mp.workdps(DPS):
        e0, e = _mpf(eps0), _mpf(epsilon)
        total = error = mp.mpf(0)
        for r, w, x, knots, spline in _laplace_k_fold_pieces(e0, k):
            t = e - x
            if r == 0:
                total += w * max(mp.mpf(0), 1 - mp.exp(t))
                continue
            if t >= r * e0:
                continue
            pts = [max(t, knots[0])] + [c for c in knots if c > t]

            def f(s: mp.mpf, t: mp.mpf = t, spline: Callable[[mp.mpf], mp.mpf] = spline) -> mp.mpf:
                return (mp.exp(s / 2) - mp.exp(t - s / 2)) * spline(s)

            value, err = _finite_quad(f, pts)
            total, error = total + w * value, error + w * err
        return _checked(total, error)


def br_pair_k_fold_delta(eta: float, k: int, epsilon: float) -> mp.mpf:
    """δ(ε) of k copies of the continuous bounded-range pair: the loss law under P has the
    density p(l) = e^{(η + l)/2}/(2(e^η − 1)) on [−η, η], so the k-fold sum S has the density
    A^k e^{s/2} (2η)^k f_k(s) with A = e^{η/2}/(2(e^η − 1)) and f_k the density of a sum of k
    uniforms on [−η, η] (Irwin–Hall: f_k(s) = IH_k((s + kη)/(2η))/(2η),
    IH_k(x) = Σ_{j ≤ x} (−1)^j C(k, j)(x − j)^{k−1}/(k − 1)!). Integrated against (1 − e^{ε − s})_+
    with ``mpmath.quad`` between the polynomial pieces' knots."""
    with mp.workdps(DPS):
        h, e = _mpf(eta), _mpf(epsilon)
        a = mp.exp(h / 2) / (2 * mp.expm1(h))

        signed = [(-1) ** j * math.comb(k, j) for j in range(k + 1)]  # exact integers

        def irwin_hall(x: mp.mpf) -> mp.mpf:
            # IH_k(x) = IH_k(k − x), summed from the nearer end: near x = k the alternating sum
            # cancels down to (k − x)^{k−1}/(k − 1)! (all 50 digits lost at k = 30, x = 29.5), and
            # such noise kept the quadrature from converging; 10 guard digits for the ≤ 5 it still
            # cancels in the middle (k = 30)
            with mp.workdps(DPS + 10):
                x = min(x, k - x)
                return mp.fsum(
                    signed[j] * (x - j) ** (k - 1) for j in range(int(mp.floor(x)) + 1)
                ) / math.factorial(k - 1)

        def density(s: mp.mpf) -> mp.mpf:
            return a**k * mp.exp(s / 2) * (2 * h) ** (k - 1) * irwin_hall((s + k * h) / (2 * h))

        knots = [-k * h + 2 * h * j for j in range(k + 1)]
        lo = max(e, -k * h)
        pts = [lo] + [c for c in knots if c > lo]
        if len(pts) < 2:  # ε ≥ kη: no loss exceeds ε
            return mp.mpf(0)
        return _checked(*_finite_quad(lambda s: (1 - mp.exp(e - s)) * density(s), pts))


def least_gdp_mu(
    profile: Callable[[mp.mpf], mp.mpf],
    top: float,
    bracket: tuple[str, str] = ("1e-6", "200"),
    points: int = 400,
) -> float:
    """sup over ε in [0, top] of the μ solving δ_μ(ε) = profile(ε) (40 digits): the least μ
    whose Gaussian profile lies above ``profile`` (Dong–Roth–Su 2019, Prop 2.12). A scan of ``points``
    points, then a golden-section search around the largest."""
    with mp.workdps(40):
        tol = mp.mpf(10) ** -30

        def delta_mu(mu: mp.mpf, e: mp.mpf) -> mp.mpf:
            return mp.ncdf(mu / 2 - e / mu) - mp.e**e * mp.ncdf(-mu / 2 - e / mu)

        last: list[mp.mpf] = []  # the previous root: the next one is usually within 1% of it

        def mu_at(e: mp.mpf) -> mp.mpf:
            target = profile(e)
            if target <= 0:
                return mp.mpf(0)
            # f at the bracket's ends is kept: findroot evaluates them again
            seen: dict[mp.mpf, mp.mpf] = {}

            def f(m: mp.mpf) -> mp.mpf:
                if m not in seen:
                    seen[m] = delta_mu(m, e) - target
                return seen[m]

            ends = (mp.mpf(bracket[0]), mp.mpf(bracket[1]))
            # δ_μ(ε) increases with μ, so the root is unique: any sign change brackets it, and a
            # narrow one saves Pegasus the ~10 steps of closing in from the wide bracket (the
            # root is the same to the tolerance: findroot stops on the bracket's width)
            if last and f(last[0] * mp.mpf("0.99")) < 0 < f(last[0] * mp.mpf("1.01")):
                ends = (last[0] * mp.mpf("0.99"), last[0] * mp.mpf("1.01"))
            try:  # Pegasus: bracketing (keeps the sign change) and superlinear
                root = mp.findroot(f, ends, solver="pegasus", tol=tol)
            except ValueError:  # its final check of |f| failed (a steep f): bisect instead
                root = mp.findroot(f, ends, solver="bisect", tol=tol)
            last[:] = [root]
            return root

        step = mp.mpf(top) / points
        scan = [mu_at(i * step) for i in range(points)]
        best = max(range(points), key=lambda i: scan[i])
        lo, hi = max(best - 1, 0) * step, min(best + 1, points) * step
        # golden section: one new evaluation per step, the bracket shrinks by 1/φ (50 steps: 1e-10)
        r = (mp.sqrt(5) - 1) / 2
        m1, m2 = hi - r * (hi - lo), lo + r * (hi - lo)
        f1, f2 = mu_at(m1), mu_at(m2)
        for _ in range(50):
            if f1 > f2:
                hi, m2, f2 = m2, m1, f1
                m1 = hi - r * (hi - lo)
                f1 = mu_at(m1)
            else:
                lo, m1, f1 = m1, m2, f2
                m2 = lo + r * (hi - lo)
                f2 = mu_at(m2)
        return float(max(scan[best], f1, f2))

"""Comparison of measured divergences with a claimed guarantee, naming every violation.

A measured value m violates a claimed value c when m > c + atol + rtol·c. The tolerance is the only
slack and it only forgives excesses of the size of floating-point error: with the defaults
(``rtol = 1e-12``, ``atol = 1e-15``) any excess larger than about 4,500 ulps of the claim (or 1e-15
absolute, for values near 0) is reported. The exact laws are accurate to well within that (a few
ulps for the log-space laws, about 1e-14 relative for permute-and-flip's quadrature), so a correct
claim that is tight (e.g. the exponential mechanism's ε-bounded range, randomized response's
profile) passes, and an excess found at a compared point is never forgiven beyond float error.

The comparisons are at points, and between them the excess is *searched*, not bounded: a
violation confined between the points could in principle be missed (an audit finds
violations; it does not prove their absence).

What is compared, for a claim g (a guarantee or a mechanism):

* Rényi divergences at the orders :data:`ORDERS` (1 = KL, … , ∞ = max-divergence) and an RDP
  claim's own orders, both orders of the pair: D_α ≤ g.renyi(α); then, between consecutive
  orders, the excess D_α − g.renyi(α) is maximised over α (a scan, then Brent's search) on the
  :data:`_REFINED` intervals where it came closest;
* the privacy profile at ε on a grid (0, the pair's own loss values, which are the breakpoints of
  its profile, an even grid, the ε(δ) of the claim at :data:`DELTAS`, and the claim's own ε):
  δ(ε) ≤ g.delta(ε); then the excess is maximised over ε in the same way between grid points
  (a sampled grid let Gaussian(1.1) pass for a pair whose δ(0.8055) is 0.13186 against the
  claim's 0.13159, the excess sitting between two points 0.25 apart);
* the claimed ε(δ) at each δ in :data:`DELTAS` and the claim's own δ: the measured δ at
  ε = g.epsilon(δ) must be ≤ δ;
* the bounded range η: for a :class:`~sharpdp.BoundedRange` claim its η, otherwise the sharpest
  η that :func:`sharpdp.convert` derives from the claim (skipped when none is implied).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

import numpy as np

from sharpdp import _math, _validate
from sharpdp.errors import InvalidParameter, NotImplied, SharpDPError
from sharpdp.guarantees import BoundedRange, Guarantee

__all__ = ["DELTAS", "ORDERS", "AuditFailure", "CheckResult", "Violation", "check_claim"]

#: Rényi orders compared (1 is the KL divergence, inf the max-divergence).
ORDERS: tuple[float, ...] = (
    1.0, 1.001, 1.01, 1.1, 1.25, 1.5, 2.0, 3.0, 4.0, 6.0, 8.0, 12.0, 16.0, 24.0, 32.0, 64.0,
    128.0, 256.0, math.inf,
)  # fmt: skip

#: δ values at which the claim's ε(δ) is tested.
DELTAS: tuple[float, ...] = (
    0.0, 1e-15, 1e-12, 1e-9, 1e-6, 1e-5, 1e-4, 1e-3, 1e-2, 0.05, 0.1, 0.2, 0.3, 0.5,
)  # fmt: skip

RTOL = 1e-12
ATOL = 1e-15
_SHOWN = 4  # violations of each kind shown by str(CheckResult) (all are in .violations)
#: Intervals between compared points searched for a larger excess, per quantity (those whose
#: end points came closest to a violation).
_REFINED = 8


def _ratio(measured: float, allowed: float) -> float:
    """measured/allowed (allowed > 0 always: it includes atol), ∞/∞ read as 1."""
    if math.isinf(measured) and math.isinf(allowed):
        return 1.0
    return measured / allowed


def _largest_excess(
    excess: Callable[[float], float], points: list[tuple[float, float]]
) -> list[tuple[float, float]]:
    """Local maxima of ``excess`` between consecutive ``points`` ((x, excess(x)), sorted by x):
    a scan then Brent's bounded search (:func:`sharpdp._math.minimize_scalar`) on the
    :data:`_REFINED` intervals whose larger end excess is largest. Returns (x, excess(x)) of each
    interval's best interior point."""
    spans = [
        (max(ga, gb), a, b)
        for (a, ga), (b, gb) in itertools.pairwise(points)
        if b > a and math.isfinite(a) and math.isfinite(b)
    ]
    spans.sort(key=lambda t: t[0], reverse=True)
    found = []
    for _, a, b in spans[:_REFINED]:
        x, lowest = _math.minimize_scalar(lambda v: -excess(v), a, b, scan=4, xtol=1e-9 * (b - a))
        found.append((x, -lowest))
    return found


class AuditFailure(SharpDPError, AssertionError):
    """An audit found a violation of a claimed privacy guarantee."""


class Measured(Protocol):
    """What :func:`check_claim` reads from a report."""

    def renyi(self, alpha: float) -> float: ...

    def delta(self, epsilon: float) -> float: ...

    def bounded_range(self) -> float: ...

    def max_divergence(self) -> float: ...

    def epsilon_grid(self) -> list[float]: ...

    def where(self, quantity: str, argument: float | None) -> str: ...


@dataclass(frozen=True, slots=True)
class Violation:
    """One comparison that failed.

    Attributes:
        quantity: ``"renyi"``, ``"delta"``, ``"epsilon"`` or ``"bounded_range"``.
        argument: the order α, the ε, the δ (for ``"epsilon"``), or None.
        measured: the measured value (for ``"epsilon"``: the measured δ at the claimed ε).
        claimed: the claimed value (for ``"epsilon"``: δ).
        claimed_epsilon: for ``"epsilon"``, the claimed ε(δ); otherwise None.
        where: the input pair where the measured value was found (empty for a single pair).
    """

    quantity: str
    argument: float | None
    measured: float
    claimed: float
    claimed_epsilon: float | None = None
    where: str = ""

    def __str__(self) -> str:
        m, c = self.measured, self.claimed
        if self.quantity == "renyi":
            text = f"Rényi divergence of order α={self.argument:g}: measured {m:.12g} > claimed {c:.12g}"
        elif self.quantity == "delta":
            text = f"δ(ε) at ε={self.argument:.12g}: measured {m:.6g} > claimed {c:.6g}"
        elif self.quantity == "epsilon":
            text = (
                f"ε(δ) at δ={self.argument:g}: the claim gives ε={self.claimed_epsilon:.12g}, but the "
                f"measured δ there is {m:.6g} > {c:g}"
            )
        else:
            text = f"bounded range: measured spread {m:.12g} > claimed η={c:.12g}"
        text += f" (excess {m - c:.3g})"
        return text + (f" on {self.where}" if self.where else "")


@dataclass(frozen=True, slots=True)
class CheckResult:
    """The outcome of comparing an audit report with a claimed guarantee.

    Attributes:
        claim: the guarantee compared with.
        violations: every failed comparison.
        compared: how many comparisons were made.
        skipped: quantities the claim does not bound (e.g. no bounded range implied).
        rtol: relative tolerance used.
        atol: absolute tolerance used.
    """

    claim: Guarantee
    violations: tuple[Violation, ...]
    compared: int
    skipped: tuple[str, ...]
    rtol: float
    atol: float

    @property
    def ok(self) -> bool:
        """True when no comparison failed."""
        return not self.violations

    def messages(self) -> list[str]:
        """A human-readable line per violation."""
        return [str(v) for v in self.violations]

    def assert_ok(self) -> None:
        """Raise :class:`AuditFailure` listing every violation, if there is any."""
        if not self.ok:
            raise AuditFailure(str(self))

    def __str__(self) -> str:
        if self.ok:
            return f"{self.claim!r}: all {self.compared} comparisons passed"
        lines = [f"{self.claim!r}: {len(self.violations)} of {self.compared} comparisons failed:"]
        for quantity in ("bounded_range", "renyi", "epsilon", "delta"):
            group = [v for v in self.violations if v.quantity == quantity]
            lines.extend(f"  - {v}" for v in group[:_SHOWN])
            if len(group) > _SHOWN:
                lines.append(f"  - ... and {len(group) - _SHOWN} more of the same kind")
        return "\n".join(lines)


def _tolerances(rtol: float, atol: float) -> tuple[float, float]:
    return _validate.nonnegative("rtol", rtol), _validate.nonnegative("atol", atol)


def _claimed(fn: Callable[[float], float], arg: float) -> float | None:
    try:
        return fn(arg)
    except NotImplied:
        return None


def _own_values(claim: Guarantee, name: str) -> tuple[float, ...]:
    """The claim's own parameter ``name`` (a number or a tuple of them), as floats; () if none."""
    value = getattr(claim, name, None)
    values = value if isinstance(value, tuple) else (value,)
    return tuple(float(v) for v in values if isinstance(v, int | float) and not math.isnan(v))


def check_claim(
    measured: Measured, claim: object, *, rtol: float = RTOL, atol: float = ATOL
) -> CheckResult:
    """Compare ``measured`` (a report) with ``claim``; see the module docstring."""
    if not isinstance(claim, Guarantee):
        raise InvalidParameter(f"claim must be a sharpdp guarantee or mechanism, got {claim!r}")
    rtol, atol = _tolerances(rtol, atol)
    violations: list[Violation] = []
    skipped: list[str] = []
    compared = 0

    def exceeds(m: float, c: float) -> bool:
        return m > c + atol + rtol * abs(c)

    # the claim's own points join the fixed grids: an RDP claim's listed orders, an (ε, δ)
    # claim's ε and δ (a claim between the grids' points was never tested there: ApproxDP(1, 0.015)
    # passed for a pair with δ(1) = 0.02, and RDP((5,), (0.9125,)) for one with D_5 = 0.9217)
    own_orders = _own_values(claim, "orders")
    own_epsilons = _own_values(claim, "epsilon_")
    own_deltas = _own_values(claim, "delta_")

    def excess_at(
        measure: Callable[[float], float], claimed: Callable[[float], float], *, is_delta: bool
    ) -> Callable[[float], float]:
        """The excess m/(c + tolerance) at x, > 1 for a violation (−inf where the claim bounds
        nothing): a ratio, so that where both values vanish (a profile's tail) it is not ranked
        above a visible near miss."""

        def excess(x: float) -> float:
            c = _claimed(claimed, x)
            if c is None or math.isinf(c) or (c >= 1.0 and is_delta):
                return -math.inf
            return _ratio(measure(x), c + atol + rtol * abs(c))

        return excess

    renyi_excess = excess_at(measured.renyi, claim.renyi, is_delta=False)
    renyi_points: list[tuple[float, float]] = []
    for alpha in sorted({*ORDERS, *(a for a in own_orders if a >= 1.0)}):
        c = _claimed(claim.renyi, alpha)
        if c is None or math.isinf(c):
            continue
        compared += 1
        m = measured.renyi(alpha)
        renyi_points.append((alpha, _ratio(m, c + atol + rtol * abs(c))))
        if exceeds(m, c):
            violations.append(Violation("renyi", alpha, m, c, None, measured.where("renyi", alpha)))
    for alpha, _ in _largest_excess(renyi_excess, renyi_points):
        c = _claimed(claim.renyi, alpha)
        compared += 1
        m = measured.renyi(alpha)
        if c is not None and exceeds(m, c):
            violations.append(Violation("renyi", alpha, m, c, None, measured.where("renyi", alpha)))

    eta: float | None
    if isinstance(claim, BoundedRange):
        eta = claim.eta
    else:
        from sharpdp.conversions import convert

        try:
            eta = convert(claim, BoundedRange).eta
        except NotImplied:
            eta = None
    if eta is None or math.isinf(eta):
        skipped.append("bounded_range (the claim implies no finite bounded range)")
    else:
        compared += 1
        m = measured.bounded_range()
        if exceeds(m, eta):
            violations.append(
                Violation(
                    "bounded_range", None, m, eta, None, measured.where("bounded_range", None)
                )
            )

    claimed_eps: list[tuple[float, float]] = []
    for d in sorted({*DELTAS, *(d for d in own_deltas if 0.0 <= d < 1.0)}):
        e = _claimed(claim.epsilon, d)
        if e is None or math.isinf(e):
            continue
        claimed_eps.append((d, e))
        compared += 1
        m = measured.delta(e)
        if exceeds(m, d):
            violations.append(Violation("epsilon", d, m, d, e, measured.where("delta", e)))

    grid = set(measured.epsilon_grid()) | {e for _, e in claimed_eps}
    grid |= {e for e in own_epsilons if 0.0 <= e < math.inf}
    top = max((g for g in grid if math.isfinite(g)), default=1.0)
    grid |= {float(v) for v in np.linspace(0.0, top, 33)}
    delta_points: list[tuple[float, float]] = []
    for eps in sorted(grid):
        c = _claimed(claim.delta, eps)
        if c is None or c >= 1.0:
            continue
        compared += 1
        m = measured.delta(eps)
        delta_points.append((eps, _ratio(m, c + atol + rtol * abs(c))))
        if exceeds(m, c):
            violations.append(Violation("delta", eps, m, c, None, measured.where("delta", eps)))
    for eps, _ in _largest_excess(
        excess_at(measured.delta, claim.delta, is_delta=True), delta_points
    ):
        c = _claimed(claim.delta, eps)
        compared += 1
        m = measured.delta(eps)
        if c is not None and c < 1.0 and exceeds(m, c):
            violations.append(Violation("delta", eps, m, c, None, measured.where("delta", eps)))
    return CheckResult(claim, tuple(violations), compared, tuple(skipped), rtol, atol)

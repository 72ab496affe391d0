"""The data layer's calibration searches (``sharpdp.data._calibrate``): every returned per-round ε
is certified for its target, and it is the largest to the stated relative tolerance (a tolerance
larger is not certified), checked with ``sdp.compose(...).certifies`` independently of the
search; the search itself against functions whose largest point is known in closed form."""

from __future__ import annotations

import math
from collections.abc import Callable

import pytest

import sharpdp as sdp
from sharpdp.data import _calibrate
from sharpdp.errors import NumericalError

RTOL = _calibrate._RTOL


def _synthetic(root: float, kind: str) -> Callable[[float], float]:
    """A non-decreasing δ(η) that equals 1e-6 at ``root`` and exceeds it beyond: smooth, flat then
    rising (pure rounds: δ constant up to a point), with a kink (the winning analysis changes),
    or 0 below a point. In u = η/root − 1, exponents capped at 700 (no overflow)."""

    def grow(t: float) -> float:
        return 1e-6 * math.exp(min(t, 700.0))

    def smooth(u: float) -> float:
        return grow(30.0 * u + 200.0 * u**3)

    def flat(u: float) -> float:
        # 0.6e-6 up to u = −0.1, then rising to 1e-6 at u = 0
        return 0.6e-6 if u <= -0.1 else grow(math.log(0.6) + math.log(1 / 0.6) * (u + 0.1) / 0.1)

    def kink(u: float) -> float:
        return grow(80.0 * u) if u >= -0.03 else grow(-80.0 * 0.03 + 5.0 * (u + 0.03))

    def zero(u: float) -> float:
        return 0.0 if u < -0.5 else grow(40.0 * math.log1p(u))

    law = {"smooth": smooth, "flat": flat, "kink": kink, "zero": zero}[kind]
    return lambda x: law(x / root - 1.0)


@pytest.mark.parametrize("kind", ["smooth", "flat", "kink", "zero"])
@pytest.mark.parametrize("root", [1e-4, 0.0423, 0.35, 7.0])
@pytest.mark.parametrize("start", [0.3, 0.93, 0.999])
def test_the_search_returns_a_certified_point_within_the_tolerance_of_the_largest(
    kind: str, root: float, start: float
) -> None:
    delta_of = _synthetic(root, kind)
    calls: list[float] = []

    def counted(x: float) -> float:
        calls.append(x)
        return delta_of(x)

    lo = start * root
    assert delta_of(lo) <= 1e-6  # every start is certified (the search requires it)
    got = _calibrate._largest(counted, 1e-6, lo, 1e6, first=1.02 if start > 0.9 else 1.25)
    assert got in calls  # a point the search evaluated ...
    assert delta_of(got) <= 1e-6  # ... and certified
    # the largest certified point is `root` (δ is increasing through it): within the tolerance
    assert root * (1.0 - RTOL) <= got <= root
    assert len(calls) <= 13  # (bisection on the verdicts took 7–14 from these starts)


def test_the_search_stops_at_its_cap_and_refuses_an_uncertified_start() -> None:
    assert _calibrate._largest(lambda x: 1e-9 * x, 1e-6, 1.0, 30.0) == 30.0
    with pytest.raises(NumericalError, match="not certified"):
        _calibrate._largest(lambda x: 1.0, 1e-6, 1.0, 30.0)


@pytest.mark.parametrize(
    ("target", "rounds"),
    [(sdp.ApproxDP(1.0, 1e-6), 10), (sdp.ApproxDP(0.5, 1e-8), 30), (sdp.ApproxDP(1.0, 1e-6), 2)],
)
def test_bounded_range_rounds_are_calibrated_to_the_largest_certified_eta(
    target: sdp.ApproxDP, rounds: int
) -> None:
    eta, _ = _calibrate.br_epsilon.__wrapped__(target, rounds)

    def certified(x: float) -> bool:
        return sdp.compose([(sdp.BoundedRange(x), rounds)]).certifies(
            target.epsilon_, target.delta_
        )

    assert certified(eta)
    assert not certified(eta * (1.0 + RTOL))


@pytest.mark.parametrize(
    ("target", "k", "copies"),
    [
        (sdp.ApproxDP(1.0, 1e-6), 10, 1),
        (sdp.ApproxDP(1.0, 1e-6), 3, 1),  # the rounds are pure DP below η = 1/3: δ is flat there
        (sdp.ApproxDP(0.2, 1e-7), 10, 3),
        (sdp.ApproxDP(0.01, 1e-9), 5, 2),
    ],
)
def test_limitdom_is_calibrated_to_the_largest_certified_eta(
    target: sdp.ApproxDP, k: int, copies: int
) -> None:
    mech, _ = _calibrate.limitdom.__wrapped__(
        target, k=k, k_bar=100, copies=copies, sensitivity=1.0, max_keys=3
    )

    def certified(x: float) -> bool:
        items = [(sdp.BoundedRange(x), k * copies), (sdp.ApproxDP(0.0, mech.delta_), copies)]
        return sdp.compose(items).certifies(target.epsilon_, target.delta_)

    assert sdp.compose([(mech, copies)]).certifies(target.epsilon_, target.delta_)
    assert certified(mech.epsilon_)
    assert not certified(mech.epsilon_ * (1.0 + RTOL))


def test_the_data_layer_does_not_import_scipy_optimize() -> None:
    """Importing ``sharpdp.data`` and calibrating a quantile, a top-k over unknown keys and a
    count over unknown keys leaves ``scipy.optimize`` unimported (it cost ~0.6 s of every CLI call
    and every process's first session, for one root search that sharpdp's own Brent method does)."""
    import subprocess
    import sys

    code = (
        "import sys, sharpdp as sdp, sharpdp.data\n"
        "import pandas as pd\n"
        "t = pd.DataFrame({'p': [i % 40 for i in range(400)], 'k': [i % 7 for i in range(400)],"
        " 'x': [float(i % 50) for i in range(400)]})\n"
        "s = sdp.data.Session(t, privacy_unit='p', budget=sdp.ApproxDP(3.0, 1e-6))\n"
        "s.quantile('x', 0.5, bounds=(0, 50), privacy=sdp.ApproxDP(0.5, 1e-8)).explain()\n"
        "s.top_k('k', k=3, privacy=sdp.ApproxDP(0.5, 1e-7), max_groups=2).explain()\n"
        "s.count_by('k', privacy=sdp.ApproxDP(0.5, 1e-7), max_groups=2).run(rng=0)\n"
        "assert 'scipy.optimize' not in sys.modules, 'scipy.optimize imported'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=300)

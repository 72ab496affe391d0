"""Extreme bounds and targets: refused from the parameters alone, or released as finite values.

An engine error raised only when some row exists (an overflow in the grid arithmetic, say) would
tell the analyst something about the data for free, before any spend. So bounds and targets whose
arithmetic could overflow are refused when the query is built, identically on a table with rows
and on one without; whatever is accepted releases finite values inside their own intervals.
"""

from __future__ import annotations

import math
import warnings

import numpy as np
import pandas as pd
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import sharpdp as sdp
import sharpdp.data


def _session(values: bool, rows: int = 50) -> sdp.data.Session:
    """50 persons; ``x`` uniform in (0, 100), or all NULL (no value for any query to see)."""
    rng = np.random.default_rng(7)
    x = rng.uniform(0.0, 100.0, rows) if values else np.full(rows, np.nan)
    table = pd.DataFrame({"person": np.arange(rows, dtype=np.int64), "x": x})
    return sdp.data.Session(table, "person", sdp.PureDP(1e300), seed=1)


def _refusal(values: bool, build: str) -> str:
    """The refusal of ``build`` (a method call on the session ``s``), with nothing spent."""
    s = _session(values)
    with pytest.raises(sdp.InvalidParameter) as err:
        eval(build, {"s": s, "sdp": sdp})
    assert s.accountant.spent() == 0.0
    return str(err.value)


REFUSED = [
    # (x − L)·cells overflows in the engine: it used to fail only when the group had a value
    "s.quantile('x', 0.5, bounds=(-1e307, 1e307), privacy=sdp.PureDP(1.0), max_rows=1)",
    "s.quantile('x', 0.5, bounds=(0, 1e306), privacy=sdp.PureDP(1.0), max_rows=1, cells=2**20)",
    # U − L overflows
    "s.mean('x', bounds=(-1e308, 1e308), privacy=sdp.PureDP(1.0), max_rows=1)",
    "s.sum('x', bounds=(-1.7e308, 1.7e308), privacy=sdp.PureDP(1.0), max_rows=1)",
    # a sum of 2^32 rows at these bounds (or the noise) would pass double precision
    "s.sum('x', bounds=(1e308, 1.7e308), privacy=sdp.PureDP(1.0), max_rows=1)",
    "s.mean('x', bounds=(1e308, 1.7e308), privacy=sdp.PureDP(1.0), max_rows=1)",
    "s.sum('x', bounds=(-1e300, 1e300), privacy=sdp.PureDP(1.0), max_rows=1)",
    "s.sum('x', bounds=(0, 1e200), privacy=sdp.PureDP(1e-200), max_rows=1)",
    # no power-of-two grid between bounds a subnormal apart
    "s.sum('x', bounds=(0.0, 5e-324), privacy=sdp.PureDP(1.0), max_rows=1)",
    "s.mean('x', bounds=(-5e-324, 5e-324), privacy=sdp.PureDP(1.0), max_rows=1)",
    # targets so small that the noise scale is infinite
    "s.count(privacy=sdp.PureDP(1e-320), max_rows=1)",
    "s.count(privacy=sdp.ZCDP(1e-320), max_rows=1)",
    "s.sum('x', bounds=(0, 1), privacy=sdp.PureDP(1e-310), max_rows=1)",
    # workloads and MWEM calibrate their own noise: ε = 0 divided by zero there
    "s.answer(sdp.data.marginals(['x'], way=1, domains={'x': [0.0, 1.0]}), "
    "privacy=sdp.PureDP(0.0))",
    "s.mwem(sdp.data.marginals(['x'], way=1, domains={'x': [0.0, 1.0]}), "
    "privacy=sdp.ApproxDP(0.0, 1e-7))",
    "s.answer(sdp.data.marginals(['x'], way=1, domains={'x': [0.0, 1.0]}), "
    "privacy=sdp.PureDP(1e-310))",
]


@pytest.mark.parametrize("build", REFUSED)
def test_refused_alike_with_and_without_rows(build: str) -> None:
    """The same refusal with values and with none: it depends on the parameters only."""
    assert _refusal(True, build) == _refusal(False, build)


def test_quantile_refusal_names_the_remedy() -> None:
    message = _refusal(True, REFUSED[0])
    assert "(U − L)·cells overflows" in message
    assert "fewer cells" in message


def test_mean_stays_within_bounds_off_the_grid() -> None:
    """Bounds (0, 0.3) are not on any power-of-two grid: the grid's bounds are rounded inwards,
    so with every value above 0.3 the mean is at most 0.3 (it was 0.300049 > 0.3)."""
    df = pd.DataFrame({"person": np.arange(200), "x": np.full(200, 50.0)})
    s = sdp.data.Session(df, "person", sdp.PureDP(1e13), seed=0)
    out = s.mean("x", bounds=(0.0, 0.3), privacy=sdp.PureDP(1e12), max_rows=1).run(rng=0)
    frame = out.to_pandas()
    step = 2.0 ** math.floor(math.log2(0.3 / 2**10))  # the documented default grid
    inner = math.floor(0.3 / step) * step
    assert frame["mean"].iloc[0] == inner  # every value clamps to the grid's upper bound
    assert 0.3 - step < inner <= 0.3
    assert frame["lower"].iloc[0] <= frame["mean"].iloc[0] <= frame["upper"].iloc[0] <= 0.3


@settings(
    max_examples=40,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    kind=st.sampled_from(["sum", "mean"]),
    centre=st.floats(-1e300, 1e300),
    width=st.floats(1e-300, 1e300),
    log_epsilon=st.floats(-300.0, 300.0),
)
def test_accepted_extremes_release_finite_values_inside_their_intervals(
    kind: str, centre: float, width: float, log_epsilon: float
) -> None:
    """Whatever bounds and ε are accepted, the release is finite and inside its interval."""
    lo, hi = centre - width / 2, centre + width / 2
    if not (math.isfinite(lo) and math.isfinite(hi) and lo < hi):
        return
    s = _session(True, 20)
    try:
        q = getattr(s, kind)("x", bounds=(lo, hi), privacy=sdp.PureDP(10.0**log_epsilon))
    except sdp.InvalidParameter:
        return  # refused from the parameters (checked alike with and without rows above)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # an overflow warning is a failure
        frame = q.run(rng=0).to_pandas(level=0.95)
    value, lower, upper = (float(frame[c].iloc[0]) for c in (kind, "lower", "upper"))
    assert math.isfinite(value)
    assert lower <= value <= upper
    if kind == "mean":
        assert lo <= value <= hi


@pytest.mark.parametrize(
    ("budget", "privacy", "rounds", "message"),
    [
        (sdp.ZCDP(1.0), sdp.ZCDP(1e-60), 2, "too small for MWEM"),
        (sdp.ZCDP(1.0), sdp.ZCDP(1e-30), None, "too small for MWEM"),
        # its rounds' Gaussians, at 1,000 rounds, cost more than the ρ charged for the rounds
        (sdp.ZCDP(1.0), sdp.ZCDP(1e-28), None, "too small for MWEM"),
        (sdp.ZCDP(1e300), sdp.ZCDP(1e18), None, "cannot be met by MWEM"),
        (sdp.PureDP(1e300), sdp.PureDP(1e78), None, "cannot be met by MWEM"),
    ],
)
def test_mwem_targets_its_mechanisms_cannot_meet_are_refused_before_the_spend(
    budget: sdp.Guarantee, privacy: sdp.Guarantee, rounds: int | None, message: str
) -> None:
    """ZCDP(1e-60) was charged ρ = 3.4e-30 (a Gaussian's grid keeps its ρ above ~4e-31): more
    than the target. With rounds=None the rounds' mechanisms were built only after n̂'s release:
    a huge target failed there, its budget spent, and at ZCDP(1e-28) 1,000 rounds would have
    cost more than the ρ charged for them."""
    table = pd.DataFrame({"pid": range(8), "a": [0, 1, 1, 0, 1, 0, 1, 1]})
    s = sdp.data.Session(table, "pid", budget)
    w = sdp.data.marginals(["a"], way=1, domains={"a": [0, 1]})
    with pytest.raises(sdp.InvalidParameter, match=message):
        s.mwem(w, privacy=privacy, rounds=rounds, rng=0)
    assert not s.accountant.history()

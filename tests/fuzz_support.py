"""Harness for ``test_fuzz.py``: hostile-value strategies, a time-limited call wrapper that counts
calls per entry point, the validity checks, and the terminal summary of the counts.

``call(name, fn, *args)`` runs ``fn`` under a SIGALRM time limit and returns its value, or
:data:`REJECTED` when it raised a :class:`sharpdp.SharpDPError`. Any other exception (warnings
included: pytest turns them into errors) or a hang fails the example with the entry point's name
and the arguments.
"""

from __future__ import annotations

import math
import os
import reprlib
import signal
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from decimal import Decimal
from fractions import Fraction
from types import FrameType
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings
from hypothesis import strategies as st

import sharpdp as sdp

__all__ = [
    "ALPHAS",
    "BAD_SCORES",
    "COUNTS",
    "DELTAS",
    "EPSILONS",
    "FINITE",
    "FUZZ",
    "NONNEGATIVE",
    "OPEN_PROBABILITIES",
    "POSITIVE",
    "PROBABILITIES",
    "REALS",
    "REJECTED",
    "SCORES",
    "arg",
    "call",
    "check_delta",
    "check_epsilon",
    "check_nonnegative",
    "check_probabilities",
    "draw_args",
    "either",
    "hostile",
    "install_summary",
    "probe",
    "short",
]

#: Examples per fuzz test (each test is one entry point or one parametrised family of them).
EXAMPLES = 200

#: Derandomized: the same examples in every run (reproducible in CI); no database in the repo.
FUZZ = settings(
    derandomize=True,
    database=None,
    deadline=None,
    max_examples=EXAMPLES,
    # No shrinking: a failing call is reported by call() with its entry point and arguments, and
    # shrinking a hang would re-run calls of CALL_SECONDS each (hypothesis also prints the draws).
    phases=[Phase.explicit, Phase.generate],
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.data_too_large,
        HealthCheck.filter_too_much,
        HealthCheck.large_base_example,
    ],
)

#: Time limit of one call. A hang fails the example (SIGALRM interrupts Python code; a single
#: long-running C call is interrupted when it returns).
CALL_SECONDS = 30.0

#: Set SHARPDP_FUZZ_TRACE to a file path to log every call before it runs.
_TRACE = os.environ.get("SHARPDP_FUZZ_TRACE")

TRIED: Counter[str] = Counter()
REJECTS: Counter[str] = Counter()


class _Rejected:
    def __repr__(self) -> str:
        return "REJECTED"


REJECTED: Any = _Rejected()


# -- hostile values ---------------------------------------------------------------------------------

_HOSTILE: list[object] = [
    math.nan, math.inf, -math.inf, 0.0, -0.0, -1.0, 5e-324, -5e-324, 2.2250738585072014e-308,
    1e308, -1e308, 1.7976931348623157e308, 1e-300,
    True, False, None, "1", "nan", "", b"1", 1j, complex(1.0, 0.0),
    np.float64(math.nan), np.float64(math.inf), np.float32(0.1), np.float16(-2.0),
    np.int64(3), np.int8(-1), np.uint64(2**64 - 1), np.bool_(True), np.complex128(1.0),
    Fraction(1, 3), Fraction(10**400, 3), Fraction(1, 10**400), Fraction(-7, 2),
    Decimal("0.5"), Decimal("NaN"), Decimal("-Infinity"), Decimal("1e400"),
    10**400, -(10**400), 2**63, 2**64, -(2**63) - 1,
    [], [1.0], [math.nan], [[1.0], [2.0, 3.0]], (), {}, {"a": 1.0}, set(), object(),
    np.array(0.5), np.array([0.5]), np.array([]), np.array([[1.0, 2.0]]), np.array(["a"]),
    np.array([1, 2], dtype=object), range(3), sdp.PureDP, sdp.PureDP(1.0), sdp,
]  # fmt: skip


def hostile() -> st.SearchStrategy[Any]:
    """Hostile values: specials, wrong types, huge and tiny numbers, containers."""
    return st.one_of(
        st.sampled_from(_HOSTILE),
        st.floats(),  # NaN and ±inf included
        st.integers(-(2**80), 2**80),
        st.fractions(),
        st.floats().map(np.float64),
        st.floats(width=32).map(np.float32),
        st.text(max_size=3),
    )


def either(
    valid: st.SearchStrategy[Any], bad: st.SearchStrategy[Any], odds: int = 2
) -> st.SearchStrategy[Any]:
    """``valid`` ``odds`` times in ``odds + 1``, else ``bad``.

    (``st.one_of`` would not do: it flattens nested ``one_of`` branches and weighs every leaf
    equally, so a hostile strategy with many branches would crowd out the valid ones.)
    """
    return st.integers(0, odds).flatmap(lambda i: bad if i == 0 else valid)


def arg(valid: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    """Valid values two times in three (so that the computations are exercised), else hostile."""
    return either(valid, hostile())


#: How the arguments of one call are drawn: all valid (half the time), one hostile, or each
#: independently valid or hostile.
_MODES = ["valid", "valid", "one-hostile", "any"]


def draw_args(data: Any, valid: list[st.SearchStrategy[Any]]) -> list[Any]:
    """Arguments for one call: valid ones, with hostile values mixed in by a drawn mode."""
    mode = data.draw(st.sampled_from(_MODES))
    bad: set[int] = set()
    if mode == "one-hostile" and valid:
        bad = {data.draw(st.integers(0, len(valid) - 1))}
    elif mode == "any":
        bad = {i for i in range(len(valid)) if data.draw(st.integers(0, 2)) == 0}
    return [data.draw(hostile() if i in bad else v) for i, v in enumerate(valid)]


def _log_uniform(lo: int, hi: int) -> st.SearchStrategy[float]:
    return st.floats(lo, hi, allow_nan=False).map(lambda e: 10.0**e)


_EDGES = [0.0, -0.0, 5e-324, 1e-300, 1e-12, 1.0, 1e300, 1.7976931348623157e308]

#: Finite reals ≥ 0 (edges included: 0, −0.0, subnormal, 1e308).
FINITE = st.one_of(st.floats(0.0, 50.0), _log_uniform(-320, 308), st.sampled_from(_EDGES))
#: ε-like: ≥ 0, ``inf`` included (allowed by guarantees and queries).
EPSILONS = st.one_of(FINITE, st.just(math.inf))
NONNEGATIVE = EPSILONS
POSITIVE = st.one_of(st.floats(1e-3, 100.0), _log_uniform(-320, 308), st.sampled_from(_EDGES[2:]))
REALS = st.one_of(st.floats(-50.0, 50.0), st.sampled_from([-1e308, -5e-324, *_EDGES]))
#: δ-like probabilities in [0, 1] (for queries: δ = 1 is allowed there).
PROBABILITIES = st.one_of(
    st.floats(0.0, 1.0),
    _log_uniform(-320, 0),
    st.sampled_from([0.0, 5e-324, 1e-300, 0.5, 1.0 - 2**-53, 1.0]),
)
DELTAS = PROBABILITIES
#: Guarantee parameters δ ∈ [0, 1).
OPEN_PROBABILITIES = PROBABILITIES.filter(lambda d: d < 1.0)
#: Rényi orders α ∈ [1, ∞].
ALPHAS = st.one_of(
    st.floats(1.0, 300.0),
    _log_uniform(-16, 308).map(lambda v: 1.0 + v),
    st.sampled_from([1.0, math.nextafter(1.0, 2.0), 2.0, 1e308, math.inf]),
)
#: Composition counts (huge ones too: a count is not an allocation).
COUNTS = st.one_of(st.integers(0, 5), st.integers(0, 10**12))

_SCORE = st.one_of(
    st.floats(-10.0, 10.0),
    st.sampled_from([0.0, -math.inf, 1e308, -1e308, 5e-324, -1.7976931348623157e308]),
    st.integers(-(10**6), 10**6),
    st.floats(-1e300, 1e300),
)
#: Valid score vectors (finite scores or −inf, at least one finite), including extreme ones.
SCORES = st.one_of(
    st.lists(_SCORE, min_size=1, max_size=8),
    st.lists(_SCORE, min_size=1, max_size=8).map(np.array),
    st.lists(st.floats(-5.0, 5.0), min_size=1, max_size=6),
)
_BAD_SCORE_VALUES: list[object] = [
    [], [[1.0], [2.0, 3.0]], [[1.0, 2.0]], np.zeros((2, 2)), np.array(["a", "b"]), [None, 1.0],
    ["1", "2"], np.array([1, 2], dtype=object), [True, False], [1j, 2j], np.array([], dtype=float),
    range(3), [Fraction(1, 3), Decimal("0.5")], [-math.inf, -math.inf], [math.nan], [math.inf, 0.0],
]  # fmt: skip
#: Ill-formed score vectors.
BAD_SCORES = st.one_of(
    st.lists(st.floats(), max_size=6), st.sampled_from(_BAD_SCORE_VALUES), hostile()
)


# -- calls ----------------------------------------------------------------------------------------


class _Hang(BaseException):
    """Raised by SIGALRM in the main thread when a call exceeds its time limit."""


@contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: FrameType | None) -> None:
        module = "" if frame is None else str(frame.f_globals.get("__name__", ""))
        if module.startswith(("hypothesis", "_hypothesis")):
            # e.g. hypothesis's gc callback, where an exception would be "ignored" (unraisable):
            # try again once the code under test runs
            signal.setitimer(signal.ITIMER_REAL, 0.05)
            return
        raise _Hang

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)


_SHORT = reprlib.Repr()
_SHORT.maxstring = 60
_SHORT.maxother = 60
_SHORT.maxlist = 8
_SHORT.maxlong = 40


def short(value: object) -> str:
    return _SHORT.repr(value)


def call(name: str, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Run one call of an entry point: its value, or REJECTED for a SharpDPError."""
    TRIED[name] += 1
    shown = ", ".join([*map(short, args), *(f"{k}={short(v)}" for k, v in kwargs.items())])
    if _TRACE:  # debugging a crash that kills the process: the last line is the culprit
        with open(_TRACE, "a", encoding="utf-8") as log:
            log.write(f"{name}({shown})\n")
    try:
        with _time_limit(CALL_SECONDS):
            return fn(*args, **kwargs)
    except sdp.SharpDPError:
        REJECTS[name] += 1
        return REJECTED
    except _Hang:
        pytest.fail(f"{name}({shown}) did not return within {CALL_SECONDS} s", pytrace=False)
    except Exception as err:
        raise AssertionError(f"{name}({shown}) raised {type(err).__name__}: {err}") from err


# -- checks -----------------------------------------------------------------------------------------


def _real(name: str, v: object) -> float:
    assert isinstance(v, float | int), f"{name} returned {v!r}"
    assert not isinstance(v, bool), f"{name} returned {v!r}"
    assert not math.isnan(v), f"{name} returned NaN"
    return float(v)


def check_epsilon(name: str, v: object) -> None:
    assert _real(name, v) >= 0.0, f"{name} returned a negative ε {v!r}"


def check_nonnegative(name: str, v: object) -> None:
    assert _real(name, v) >= 0.0, f"{name} returned {v!r} < 0"


def check_delta(name: str, v: object) -> None:
    assert 0.0 <= _real(name, v) <= 1.0, f"{name} returned δ = {v!r} outside [0, 1]"


def check_probabilities(name: str, p: object) -> None:
    arr = np.asarray(p, dtype=np.float64)
    assert arr.ndim == 1, f"{name} returned {short(p)}"
    assert arr.size > 0, f"{name} returned {short(p)}"
    assert not np.isnan(arr).any(), f"{name} returned NaN in {short(p)}"
    assert np.all(arr >= 0.0), f"{name} returned a negative probability in {short(p)}"
    total = math.fsum(arr.tolist())
    assert abs(total - 1.0) <= 1e-9, f"{name} sums to {total!r}"


def probe(name: str, g: Any, data: Any, *, group: bool = True) -> None:
    """Query a guarantee (or mechanism, composition, report) with drawn arguments."""
    v = call(f"{name}.epsilon", g.epsilon, data.draw(arg(DELTAS)))
    if v is not REJECTED:
        check_epsilon(f"{name}.epsilon", v)
    v = call(f"{name}.delta", g.delta, data.draw(arg(EPSILONS)))
    if v is not REJECTED:
        check_delta(f"{name}.delta", v)
    v = call(f"{name}.renyi", g.renyi, data.draw(arg(ALPHAS)))
    if v is not REJECTED:
        check_nonnegative(f"{name}.renyi", v)
    if group:
        k = data.draw(st.one_of(st.integers(1, 5), st.integers(-3, 10**6), hostile()))
        h = call(f"{name}.group", g.group, k)
        if h is not REJECTED:
            assert isinstance(h, sdp.Guarantee), f"{name}.group returned {h!r}"
            probe(f"{name}.group(k)", h, data, group=False)


# -- the summary ------------------------------------------------------------------------------------


class _Summary:
    """Prints the calls per entry point at the end of the session."""

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        if not TRIED:
            return
        tr = terminalreporter
        tr.write_sep("=", "fuzz: calls per public entry point (tried / rejected with SharpDPError)")
        width = max(map(len, TRIED))
        for name in sorted(TRIED):
            tr.write_line(f"{name:<{width}}  {TRIED[name]:>7}  {REJECTS[name]:>7}")
        tr.write_line(
            f"{'total':<{width}}  {sum(TRIED.values()):>7}  {sum(REJECTS.values()):>7}  "
            f"({len(TRIED)} entry points)"
        )


def install_summary(request: pytest.FixtureRequest) -> None:
    """Register the summary plugin once (used as a module-scoped autouse fixture)."""
    manager = request.config.pluginmanager
    if not manager.has_plugin("sharpdp-fuzz-summary"):
        manager.register(_Summary(), "sharpdp-fuzz-summary")

"""Shared test configuration.

Tests run with ``--import-mode=importlib``, which does not put ``tests/`` on ``sys.path``; the
independent reference implementations in ``tests/reference.py`` are made importable here (as the
top-level module ``reference``) so that test modules can ``from reference import ...``.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# Property tests: no deadline (mpmath references are slow), no example database written into the
# repository, modest example counts (each test may lower them further), and derandomized (the
# examples are a fixed function of each test, so a run is reproducible; bugs found by a local
# exploratory run, e.g. with HYPOTHESIS_PROFILE=explore, are pinned as explicit examples).
settings.register_profile("explore", deadline=None, database=None, max_examples=2000)
settings.register_profile(
    "sharpdp",
    derandomize=True,
    deadline=None,
    database=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "sharpdp"))


def _pin_hypothesis_constants() -> None:
    """Make derandomized examples a function of the test alone. Hypothesis (since 6.13x) also
    draws literals found in the "local" modules loaded so far, so a test's examples depended on
    which other files had run in its worker: a failure a CI worker met did not reproduce when its
    file ran alone. The pool is pinned here to the literals of the library's own source files,
    which stay (they are where edge cases live), read once, whatever is imported later. Private
    Hypothesis API: if it moves, this does nothing and the examples vary as before."""
    try:
        from hypothesis.internal.conjecture import providers
        from hypothesis.internal.constants_ast import Constants, _constants_from_source
    except ImportError:  # pragma: no cover - another Hypothesis version
        return
    if not callable(getattr(providers, "_get_local_constants", None)):  # pragma: no cover
        return
    pinned = Constants()
    package = Path(__file__).resolve().parents[1] / "src" / "sharpdp"
    for path in sorted(package.rglob("*.py")):
        pinned |= _constants_from_source(path.read_bytes(), limit=True)
    providers._get_local_constants = lambda: pinned


if os.environ.get("HYPOTHESIS_PROFILE", "sharpdp") == "sharpdp":
    _pin_hypothesis_constants()

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

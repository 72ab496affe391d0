"""Shared test configuration.

Tests run with ``--import-mode=importlib``, which does not put ``tests/`` on ``sys.path``; the
independent reference implementations in ``tests/reference.py`` are made importable here (as the
top-level module ``reference``) so that test modules can ``from reference import ...``.
"""

from __future__ import annotations

import sys
from pathlib import Path

from hypothesis import HealthCheck, settings

_TESTS = str(Path(__file__).resolve().parent)
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

# Property tests: no deadline (mpmath references are slow), no example database written into the
# repository, modest example counts (each test may lower them further).
settings.register_profile(
    "sharpdp",
    deadline=None,
    database=None,
    max_examples=40,
    suppress_health_check=[HealthCheck.too_slow],
)
settings.load_profile("sharpdp")

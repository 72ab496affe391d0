"""Shared test configuration.

Tests run with ``--import-mode=importlib``, which does not put ``tests/`` on ``sys.path``; the
independent reference implementations in ``tests/reference.py`` are made importable here (as the
top-level module ``reference``) so that test modules can ``from reference import ...``.
"""

from __future__ import annotations

import os
import sys
from collections import Counter
from pathlib import Path

import pytest
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


#: Seconds the slowest test files took in one run of the whole suite (2 workers, 2026-11-29).
#: The files are handed to the workers heaviest first (:func:`pytest_configure` keeps that order:
#: xdist would otherwise sort them by their number of tests), so that a long file does not start
#: last and leave the other worker idle. Only the order depends on these
#: numbers: a stale entry costs time, nothing else. A file not listed weighs 0.05 s per test.
_FILE_SECONDS = {
    "tests/data/test_spark.py": 131,
    "tests/test_fuzz.py": 102,
    "tests/test_guarantees.py": 51,
    "tests/data/test_neighbours.py": 48,
    "tests/test_conversions.py": 47,
    "tests/service/test_load_postgres.py": 46,
    "tests/service/test_load.py": 42,
    "tests/mechanisms/test_select.py": 32,
    "tests/audit/test_sampler_audits.py": 30,
    "tests/service/test_browser.py": 25,
    "tests/cli/test_plot_command.py": 24,
    "tests/test_examples.py": 24,
    "tests/mechanisms/test_calibration.py": 24,
    "tests/service/test_api.py": 23,
    "tests/mechanisms/test_samplers.py": 23,
    "tests/test_inversion.py": 22,
    "tests/data/test_budget.py": 18,
    "tests/test_composition_speed_cases.py": 18,
    "tests/test_plots.py": 17,
    "tests/data/test_unknown_topk.py": 17,
    "tests/test_loss.py": 17,
    "tests/mechanisms/test_limited_domain.py": 17,
    "tests/test_accountant.py": 17,
    "tests/cli/test_demo.py": 16,
    "tests/mechanisms/test_discrete.py": 14,
    "tests/cli/test_cli.py": 14,
    "tests/data/test_quantile.py": 14,
    "tests/test_ledger_postgres.py": 13,
    "tests/data/test_selection.py": 12,
    "tests/test_composition.py": 12,
    "tests/data/test_sums.py": 12,
    "tests/data/test_bounding.py": 12,
    "tests/cli/test_commands.py": 12,
}


def pytest_configure(config: pytest.Config) -> None:
    """Keep the collection order when xdist hands files out (its ``--no-loadscope-reorder``)."""
    if hasattr(config.option, "loadscopereorder"):
        config.option.loadscopereorder = False


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Run the heaviest test files first (see :data:`_FILE_SECONDS`); each file's tests keep
    their order and stay together (the sort is stable)."""
    root = config.rootpath

    def name(item: pytest.Item) -> str:
        try:
            return item.path.relative_to(root).as_posix()
        except ValueError:  # (outside the repository: weighs by its tests)
            return str(item.path)

    per_file = Counter(name(item) for item in items)
    weight = {f: _FILE_SECONDS.get(f, 0.05 * n) for f, n in per_file.items()}
    items.sort(key=lambda item: -weight[name(item)])

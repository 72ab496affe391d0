"""``sharpdp --version`` and ``--help`` stay fast: loading the command line registers every
command without loading numpy, pandas, the data layer, the accounting layer or matplotlib (the
commands import them when they run). Measured with ``python -X importtime -m sharpdp --version``:
≈ 0.7 s before, ≈ 0.2 s after, on a 2-core machine."""

from __future__ import annotations

import json
import subprocess
import sys

HEAVY = (
    "numpy",
    "scipy",
    "pandas",
    "ibis",
    "duckdb",
    "matplotlib",
    "sharpdp.data",
    "sharpdp.accounting",
    "sharpdp.mechanisms",
    "sharpdp.plots",
)

PROBE = f"""
import json, sys
from sharpdp.cli import app
loaded = [m for m in {HEAVY!r} if m in sys.modules]
commands = sorted(c.name or c.callback.__name__ for c in app.registered_commands)
groups = sorted(g.name for g in app.registered_groups)
print(json.dumps({{"loaded": loaded, "commands": commands, "groups": groups}}))
"""


def test_the_command_line_loads_nothing_heavy_and_registers_every_command() -> None:
    out = subprocess.run(
        [sys.executable, "-c", PROBE], capture_output=True, text=True, check=True, timeout=60
    )
    found = json.loads(out.stdout)
    assert found["loaded"] == []
    expected = {"budget", "calibrate", "capacity", "compose", "convert", "demo", "query"}
    assert expected <= set(found["commands"])
    assert "plot" in found["groups"]


def test_version_loads_nothing_heavy() -> None:
    out = subprocess.run(
        [sys.executable, "-X", "importtime", "-m", "sharpdp", "--version"],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    imported = {line.rsplit("|", 1)[-1].strip() for line in out.stderr.splitlines() if "|" in line}
    assert not imported & {"numpy", "pandas", "matplotlib", "sharpdp.data"}

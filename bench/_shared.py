"""Helpers the benchmark scripts share: peers' venvs, cached tables, markdown tables.

Imported by the scripts in ``bench/`` (their directory is on ``sys.path`` when run as
``python bench/<script>.py``) and by the peer packages ``engine_peers`` and ``workloads_peers``.
"""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
VENVS = HERE / ".venvs"
DATA = HERE / ".data"


def venv_python(name: str) -> Path:
    """The interpreter of the venv ``bench/.venvs/<name>``."""
    return VENVS / name / "bin" / "python"


def venv_marker(name: str) -> Path:
    """The file written once the venv is complete."""
    return VENVS / name / ".installed"


def build_venv(
    name: str, installs: Sequence[Sequence[str]], probe: str, log: Any = sys.stderr
) -> str | None:
    """Create ``bench/.venvs/<name>``, run each ``pip install`` argument list, check ``probe``.

    Returns ``None`` on success (or if already built), else a one-line reason; the whole output
    goes to ``bench/.venvs/<name>.log``.
    """
    if venv_marker(name).exists():
        return None
    VENVS.mkdir(parents=True, exist_ok=True)
    logfile = VENVS / f"{name}.log"
    py = str(venv_python(name))
    steps = [[sys.executable, "-m", "venv", "--clear", str(VENVS / name)]]
    steps += [[py, "-m", "pip", "install", "-q", *args] for args in installs]
    steps.append([py, "-c", probe])
    with open(logfile, "w") as out:
        for cmd in steps:
            shown = " ".join(cmd[1:]).replace(str(HERE.parent) + os.sep, "")
            print(f"[setup {name}] {shown}", file=log, flush=True)
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
            if rc != 0:
                out.flush()
                lines = [ln for ln in logfile.read_text().splitlines() if ln.strip()]
                errors = [ln for ln in lines if ln.startswith("ERROR") and "resolver" not in ln]
                tail = errors[:1] or lines[-1:]
                return f"install failed ({shown[:60]}): {tail[0][:160] if tail else rc}"
    venv_marker(name).write_text("\n".join(" ".join(a) for a in installs) + "\n")
    return None


def installed_version(name: str, dist: str) -> str:
    """The version of ``dist`` in the venv ``name`` (``"?"`` if absent)."""
    py = venv_python(name)
    if not py.exists():
        return "?"
    code = f"import importlib.metadata as m; print(m.version({dist!r}))"
    r = subprocess.run(
        [str(py), "-c", code],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONWARNINGS": "ignore"},
    )
    return r.stdout.strip() or "?"


def cached_parquet(filename: str, build: Callable[[], Any]) -> Path:
    """``bench/.data/<filename>``, written from the DataFrame ``build()`` returns if missing."""
    path = DATA / filename
    if not path.exists():
        DATA.mkdir(parents=True, exist_ok=True)
        build().to_parquet(path, index=False)
    return path


def print_table(title: str, header: list[str], lines: list[list[str]]) -> None:
    """A markdown table under a ``##`` title, columns padded to their widest cell."""
    widths = [max([len(h)] + [len(ln[i]) for ln in lines]) for i, h in enumerate(header)]
    print(f"\n## {title}\n")
    print("| " + " | ".join(h.ljust(w) for h, w in zip(header, widths, strict=True)) + " |")
    print("|" + "|".join("-" * (w + 2) for w in widths) + "|")
    for ln in lines:
        print("| " + " | ".join(c.ljust(w) for c, w in zip(ln, widths, strict=True)) + " |")
    sys.stdout.flush()


def load_note() -> str:
    """The machine's load average and core count, for the tables' headers."""
    try:
        one, five, _ = os.getloadavg()
        return f"load average {one:.2f} (1 min) / {five:.2f} (5 min), {os.cpu_count()} cores"
    except OSError:
        return "load unknown"

"""Peer scripts for ``bench/engine.py``: one script per peer, each run in its own venv.

Every script reads a JSON job on its command line (``--job '{"parquet": ..., "unit": ...}'``) and
prints one JSON object on its last stdout line (``{"ok": true, "seconds": ..., "keys": ..., ...}``).
The venvs live under ``bench/.venvs/<peer>`` (gitignored) and are created by
:func:`ensure_venv`, never in the project's own environment.
"""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
VENVS = HERE.parent / ".venvs"


@dataclass(frozen=True)
class Peer:
    name: str
    label: str
    requirements: tuple[str, ...]
    script: str
    probe: str  # import that proves the install worked


PEERS: dict[str, Peer] = {
    p.name: p
    for p in (
        Peer(
            "opendp",
            "OpenDP 0.16 + Polars",
            ("opendp[polars]==0.16.0", "pyarrow"),
            "opendp_peer.py",
            "import opendp, polars",
        ),
        Peer(
            "tumult",
            "Tumult Analytics 0.21",
            ("tmlt.analytics==0.21.0",),
            "tumult_peer.py",
            "import tmlt.analytics, pyspark",
        ),
        Peer(
            "pipelinedp",
            "PipelineDP 0.3",
            ("pipeline-dp==0.3.1", "pandas", "pyarrow"),
            "pipelinedp_peer.py",
            "import pipeline_dp, pandas",
        ),
        Peer(
            "smartnoise",
            "SmartNoise SQL 1.0",
            ("smartnoise-sql==1.0.10", "pandas", "pyarrow"),
            "smartnoise_peer.py",
            "import snsql, pandas",
        ),
    )
}


def venv_python(peer: Peer) -> Path:
    return VENVS / peer.name / "bin" / "python"


def marker(peer: Peer) -> Path:
    return VENVS / peer.name / ".installed"


def venv_ready(peer: Peer) -> bool:
    return marker(peer).exists()


def ensure_venv(peer: Peer, log=sys.stderr) -> str | None:
    """Create and fill the peer's venv unless already done; return None or a one-line reason."""
    if venv_ready(peer):
        return None
    VENVS.mkdir(parents=True, exist_ok=True)
    logfile = VENVS / f"{peer.name}.log"
    env_dir = VENVS / peer.name
    with open(logfile, "w") as out:
        steps = [
            [sys.executable, "-m", "venv", "--clear", str(env_dir)],
            [str(venv_python(peer)), "-m", "pip", "install", "-q", *peer.requirements],
            [str(venv_python(peer)), "-c", peer.probe],
        ]
        for cmd in steps:
            print(f"[setup {peer.name}] {' '.join(cmd)}", file=log, flush=True)
            rc = subprocess.run(cmd, stdout=out, stderr=subprocess.STDOUT).returncode
            if rc != 0:
                out.flush()
                lines = [ln for ln in logfile.read_text().splitlines() if ln.strip()]
                errors = [ln for ln in lines if ln.startswith("ERROR")]
                tail = (errors or lines)[:1] if errors else lines[-1:]
                return f"install failed ({' '.join(cmd[2:4])}): {tail[0][:160] if tail else rc}"
    marker(peer).write_text(" ".join(peer.requirements) + "\n")
    return None


def installed_version(peer: Peer, dist: str) -> str:
    py = venv_python(peer)
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


if __name__ == "__main__":  # python bench/engine_peers/__init__.py [peer ...]
    names = sys.argv[1:] or list(PEERS)
    for n in names:
        reason = ensure_venv(PEERS[n])
        print(n, "ok" if reason is None else reason, flush=True)

"""Peer scripts for ``bench/engine.py``: one script per peer, each run in its own venv.

Every script reads a JSON job on its command line (``--job '{"parquet": ..., "unit": ...}'``) and
prints one JSON object on its last stdout line (``{"ok": true, "seconds": ..., "keys": ..., ...}``).
The venvs live under ``bench/.venvs/<peer>`` (gitignored) and are created by
:func:`ensure_venv`, never in the project's own environment.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import _shared

HERE = Path(__file__).resolve().parent
VENVS = _shared.VENVS


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
    return _shared.venv_python(peer.name)


def venv_ready(peer: Peer) -> bool:
    return _shared.venv_marker(peer.name).exists()


def ensure_venv(peer: Peer, log: Any = sys.stderr) -> str | None:
    """Create and fill the peer's venv unless already done; return None or a one-line reason."""
    return _shared.build_venv(peer.name, [peer.requirements], peer.probe, log)


def installed_version(peer: Peer, dist: str) -> str:
    return _shared.installed_version(peer.name, dist)


if __name__ == "__main__":  # python bench/engine_peers/__init__.py [peer ...]
    names = sys.argv[1:] or list(PEERS)
    for n in names:
        reason = ensure_venv(PEERS[n])
        print(n, "ok" if reason is None else reason, flush=True)

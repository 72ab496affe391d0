"""Peer scripts for ``bench/workloads.py``, each run in its own venv under ``bench/.venvs/``.

One peer: smartnoise-synth's MWEM, in ``bench/.venvs/smartnoise-synth`` (gitignored), made by
``python bench/workloads.py --setup``. Its script reads a JSON job on the command line
(``--job '{...}'``) and prints one JSON object on its last stdout line, as the engine benchmark's
peers do (``bench/engine_peers/_common.py``'s helpers are reused: the script puts that directory
on its ``sys.path``).

The install: smartnoise-synth 1.0.8 (the newest release; it installs on Python 3.10–3.14) with
``--no-deps``, then the dependencies its MWEM and its table transformer import (smartnoise-sql,
numpy, scipy, pandas; Faker for the package's own import). Its other dependencies — opacus and with it
torch (several GiB), mbi (jax), pac-synth — serve the GAN, MST/AIM and pac-synth synthesizers
only; MWEM runs the same code either way.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import _shared  # bench/ is on sys.path: this package is imported by bench/workloads.py


@dataclass(frozen=True)
class Peer:
    name: str
    label: str
    steps: tuple[tuple[str, ...], ...]  # pip install argument lists, in order
    script: str
    probe: str  # the import that proves the install worked
    dist: str  # the distribution whose version is shown


SMARTNOISE_SYNTH = Peer(
    "smartnoise-synth",
    "smartnoise-synth MWEM",
    (
        ("--no-deps", "smartnoise-synth==1.0.8"),
        (
            "smartnoise-sql==1.0.10",
            "Faker>=17",
            "disjoint-set>=0.9,<0.10",
            "scipy",
            "pandas",
            "pyarrow",
        ),
    ),
    "snsynth_mwem_peer.py",
    "import snsynth, snsynth.mwem, pandas",
    "smartnoise-synth",
)

PEERS = {SMARTNOISE_SYNTH.name: SMARTNOISE_SYNTH}


def venv_python(peer: Peer) -> Path:
    return _shared.venv_python(peer.name)


def venv_ready(peer: Peer) -> bool:
    return _shared.venv_marker(peer.name).exists()


def ensure_venv(peer: Peer, log: Any = sys.stderr) -> str | None:
    """Create and fill the peer's venv unless already done; return None or a one-line reason."""
    return _shared.build_venv(peer.name, peer.steps, peer.probe, log)


def installed_version(peer: Peer) -> str:
    return _shared.installed_version(peer.name, peer.dist)

"""Fixtures of the service tests (the helpers live in ``servers.py``, importable from here)."""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from servers import Server  # noqa: E402


@pytest.fixture
def serve() -> Iterator[Callable[..., Server]]:
    started: list[Server] = []

    def start(config: Path, workers: int = 1) -> Server:
        server = Server(config, workers).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()

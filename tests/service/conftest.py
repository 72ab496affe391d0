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

from pg_cluster import Postgres, cluster  # noqa: E402


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


@pytest.fixture(scope="session")
def postgres() -> Iterator[Postgres]:
    """A throwaway PostgreSQL cluster for the session (see ``tests/pg_cluster.py``)."""
    yield from cluster()


@pytest.fixture
def pg_url(postgres: Postgres) -> str:
    """The URL of a fresh, empty database of the session's cluster."""
    return postgres.database()

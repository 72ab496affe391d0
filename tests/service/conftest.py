"""Fixtures of the service tests (the helpers live in ``servers.py``, importable from here)."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

_HERE = str(Path(__file__).resolve().parent)
if _HERE not in sys.path:
    sys.path.insert(0, _HERE)

from servers import Postgres, Server, postgres_bindir  # noqa: E402

IN_CI = os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


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
    """A throwaway PostgreSQL cluster for the session (skips without Debian's ``postgresql``
    package — except with ``CI=true``, where its absence fails)."""
    bindir = postgres_bindir()
    if bindir is None or not (bindir / "pg_ctl").exists():
        message = "PostgreSQL server binaries (initdb, pg_ctl) not found"
        if IN_CI:
            pytest.fail(f"{message}, and CI=true: .ci/run must install Debian's postgresql")
        pytest.skip(f"{message} (apt-get install postgresql)")
    cluster = Postgres(bindir)
    try:
        yield cluster.start()
    finally:
        cluster.stop()


@pytest.fixture
def pg_url(postgres: Postgres) -> str:
    """The URL of a fresh, empty database of the session's cluster."""
    return postgres.database()

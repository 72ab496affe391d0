"""A throwaway PostgreSQL cluster for the tests: Debian's ``postgresql`` package (``.ci/run``
installs it), started in a temporary directory on a free loopback port — as the ``postgres`` user
when running as root, since initdb refuses root. Used by ``tests/test_ledger_postgres.py`` and the
service tests; :func:`cluster` skips without the server binaries, except with ``CI=true``, where
their absence fails.
"""

from __future__ import annotations

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest

IN_CI = os.environ.get("CI", "").strip().lower() in {"true", "1", "yes"}


def free_port() -> int:
    """A free TCP port on 127.0.0.1."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def postgres_bindir() -> Path | None:
    """The newest PostgreSQL server binaries (Debian: /usr/lib/postgresql/<major>/bin), or None."""
    found = sorted(
        (p.parent for p in Path("/usr/lib/postgresql").glob("*/bin/initdb")),
        key=lambda d: int(d.parent.name) if d.parent.name.isdigit() else 0,
    )
    if found:
        return found[-1]
    initdb = shutil.which("initdb")
    return Path(initdb).resolve().parent if initdb else None


class Postgres:
    """A throwaway PostgreSQL cluster on 127.0.0.1 (``start()``, then ``database()``, ``stop()``).

    Args:
        bindir: the server binaries (``initdb``, ``pg_ctl``).
    """

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.base = Path(tempfile.mkdtemp(prefix="sharpdp-service-pg-"))
        self.data = self.base / "data"
        self.port = free_port()
        self.url = f"postgresql://postgres@127.0.0.1:{self.port}"
        self._as: list[str] = []
        if os.geteuid() == 0:  # initdb refuses to run as root: run the cluster as `postgres`
            user = pwd.getpwnam("postgres")
            os.chown(self.base, user.pw_uid, user.pw_gid)
            self._as = ["runuser", "-u", "postgres", "--"]

    def _run(self, *args: str) -> None:
        done = subprocess.run([*self._as, *args], capture_output=True, text=True, timeout=120)
        if done.returncode != 0:
            log = self.base / "log"
            tail = log.read_text(errors="replace")[-2000:] if log.exists() else ""
            raise RuntimeError(f"{args[0]} failed: {done.stdout}{done.stderr}{tail}")

    def start(self) -> Postgres:
        """initdb and start the cluster (trust authentication, loopback only)."""
        self._run(
            str(self.bindir / "initdb"), "-D", str(self.data), "-A", "trust", "-U", "postgres",
            "--no-sync",
        )  # fmt: skip
        self._run(
            str(self.bindir / "pg_ctl"), "-D", str(self.data), "-l", str(self.base / "log"),
            "-o", f"-p {self.port} -k {self.base} -h 127.0.0.1 -c max_connections=200",
            "-w", "-t", "60", "start",
        )  # fmt: skip
        return self

    def database(self) -> str:
        """A fresh, empty database of the cluster: its URL."""
        import psycopg

        name = f"s_{uuid.uuid4().hex}"
        with psycopg.connect(f"{self.url}/postgres", autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"{self.url}/{name}"

    def stop(self) -> None:
        """Stop the cluster (immediate) and remove its files."""
        if (self.data / "postmaster.pid").exists():
            subprocess.run(
                [*self._as, str(self.bindir / "pg_ctl"), "-D", str(self.data), "-m", "immediate",
                 "stop"],
                capture_output=True,
                timeout=60,
            )  # fmt: skip
        shutil.rmtree(self.base, ignore_errors=True)


def cluster() -> Iterator[Postgres]:
    """Start a cluster for a session-scoped fixture (``yield from cluster()``); stop it after.

    Skips when Debian's server binaries are missing, fails instead with ``CI=true``."""
    bindir = postgres_bindir()
    if bindir is None or not (bindir / "pg_ctl").exists():
        message = "PostgreSQL server binaries (initdb, pg_ctl) not found"
        if IN_CI:
            pytest.fail(f"{message}, and CI=true: .ci/run must install Debian's postgresql")
        pytest.skip(f"{message} (apt-get install postgresql)")
    server = Postgres(bindir)
    try:
        yield server.start()
    finally:
        server.stop()

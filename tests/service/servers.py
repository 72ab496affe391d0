"""Servers for the service tests: real uvicorn processes on 127.0.0.1, on free ports.

``serve(config, workers=1)`` starts ``sharpdp serve CONFIG`` (uvicorn, one or several worker
processes) in its own process group and waits until it answers; every server
is stopped at the end of its test (SIGTERM to its group, SIGKILL if it lingers). Nothing is mocked.

:class:`Postgres` is a throwaway PostgreSQL cluster from Debian's ``postgresql`` package (the
server binaries under ``/usr/lib/postgresql/<major>/bin``), listening on 127.0.0.1 only, in a
temporary directory, run as the ``postgres`` user when we are root (``initdb`` refuses root).
``bench/service.py`` uses it too.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import httpx

ADMIN = "admin-test-token"
#: ``sharpdp serve`` as the console script runs it (the import registers the command).
SERVE = "import sharpdp.cli.serve; from sharpdp.cli import main; main()"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class Server:
    """One running service."""

    config: Path
    workers: int = 1
    port: int = 0
    process: subprocess.Popen[bytes] | None = None
    log: Path | None = None
    url: str = field(init=False, default="")

    def start(self, timeout: float = 60.0) -> Server:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        env = {**os.environ, "SHARPDP_ADMIN_TOKEN": ADMIN}
        self.log = self.config.with_name(f"server-{self.port}.log")
        with open(self.log, "wb") as out:
            self.process = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    SERVE,
                    "serve",
                    str(self.config),
                    "--host",
                    "127.0.0.1",
                    "--port",
                    str(self.port),
                    "--workers",
                    str(self.workers),
                    "--log-level",
                    "warning",
                ],
                env=env,
                stdout=out,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        wait_ready(self.url, self.process, timeout, self.log, self.workers)
        return self

    def stop(self) -> None:
        p = self.process
        if p is None or p.poll() is not None:
            return
        os.killpg(p.pid, signal.SIGTERM)
        try:
            p.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait(timeout=15)

    def kill(self) -> None:
        """SIGKILL the whole server (every worker) at once."""
        p = self.process
        assert p is not None
        os.killpg(p.pid, signal.SIGKILL)
        p.wait(timeout=15)


def wait_ready(
    url: str, process: subprocess.Popen[bytes], timeout: float, log: Path, workers: int = 1
) -> None:
    deadline = time.monotonic() + timeout
    answered = 0
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise AssertionError(f"the server exited: {log.read_text(errors='replace')[-3000:]}")
        try:
            if httpx.get(f"{url}/openapi.json", timeout=2.0).status_code == 200:
                answered += 1
                if answered >= workers:  # give every worker a chance to come up
                    if workers > 1:
                        time.sleep(1.0)
                    return
        except httpx.TransportError:
            pass
        time.sleep(0.1)
    raise AssertionError(f"the server did not answer in {timeout} s: {log.read_text()[-3000:]}")


def write_table(path: Path, persons: int = 60) -> Path:
    """A small table: person, dept (a, b, c), value (0..99), 3 rows per person."""
    lines = ["person,dept,value"]
    for p in range(persons):
        for r in range(3):
            lines.append(f"p{p},{'abc'[(p + r) % 3]},{(7 * p + 13 * r) % 100}")
    path.write_text("\n".join(lines) + "\n")
    return path


def write_config(
    directory: Path, budget: str = "pure:1", extra: str = "", ledger: str = "ledger.sqlite"
) -> Path:
    """``service.toml`` serving ``people.csv`` in ``directory``; ``ledger`` is a SQLite file name
    (beside the config) or a ``postgresql://`` URL."""
    table = write_table(directory / "people.csv")
    config = directory / "service.toml"
    config.write_text(
        f"""
[ledger]
path = "{ledger}"

[policy]
budget = "{budget}"
period = "month"

[datasets.people]
path = "{table.name}"
privacy_unit = "person"
max_rows = 1
max_groups = 1
{extra}
"""
    )
    return config


def admin() -> dict[str, str]:
    """The admin's bearer header."""
    return {"Authorization": f"Bearer {ADMIN}"}


def bearer(token: str) -> dict[str, str]:
    """An analyst's bearer header."""
    return {"Authorization": f"Bearer {token}"}


def new_analyst(url: str, name: str, budget: str | None = None, **extra: object) -> str:
    """Create an analyst through the admin route; return its token."""
    body: dict[str, object] = {"name": name, **extra}
    if budget is not None:
        body["budget"] = budget
    r = httpx.post(f"{url}/admin/analysts", json=body, headers=admin(), timeout=30)
    assert r.status_code == 201, r.text
    return str(r.json()["token"])


# -- PostgreSQL -----------------------------------------------------------------------------------
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

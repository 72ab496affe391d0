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
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from pg_cluster import free_port

ADMIN = "admin-test-token"
#: ``sharpdp serve`` as the console script runs it (the import registers the command).
SERVE = "import sharpdp.cli.serve; from sharpdp.cli import main; main()"


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
    """A small table: person, dept (a, b, c), value (0..99), score (value/4, a float), 3 rows
    per person."""
    lines = ["person,dept,value,score"]
    for p in range(persons):
        for r in range(3):
            value = (7 * p + 13 * r) % 100
            lines.append(f"p{p},{'abc'[(p + r) % 3]},{value},{value / 4}")
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

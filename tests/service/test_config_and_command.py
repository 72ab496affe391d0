"""The TOML config (validated, errors naming the key) and the ``sharpdp serve`` command."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import httpx
import pytest
from servers import ADMIN, SERVE, admin, bearer, free_port, wait_ready, write_config

import sharpdp as sdp
from sharpdp.service.app import create_app
from sharpdp.service.config import example_config, load


def test_a_config_is_read_into_frozen_dataclasses(tmp_path: Path) -> None:
    config = load(write_config(tmp_path, budget="zcdp:0.5"))
    assert config.budget == "zcdp:0.5"
    assert config.period == "month"
    assert config.ledger == tmp_path / "ledger.sqlite"
    assert config.state == tmp_path / "ledger.service.sqlite"
    [people] = config.datasets
    assert (people.name, people.engine, people.privacy_unit) == ("people", "duckdb", "person")
    with pytest.raises(AttributeError):
        people.engine = "spark"  # type: ignore[misc]
    flights = example_config(tmp_path).dataset("flights")
    assert flights is not None
    assert flights.privacy_unit == "tailnum"


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ("[other]\nx = 1", "unknown key 'other'"),
        ('[datasets.people2]\npath = "missing.csv"\nprivacy_unit = "p"', "no file at"),
        ('[datasets.people2]\nexample = "titanic"\nprivacy_unit = "p"', "example must be one of"),
        ('[datasets.x]\nexample = "flights"\nprivacy_unit = "p"\nengine = "oracle"', "engine"),
        ('[datasets.x]\nexample = "flights"\nprivacy_unit = "p"\nmax_rows = 0', "max_rows"),
        # a NUL in a path raised ValueError while the config was being checked
        ('[service]\nstate = "a\\u0000b.sqlite"', "NUL character"),
    ],
)
def test_a_bad_config_names_the_key(tmp_path: Path, extra: str, message: str) -> None:
    path = write_config(tmp_path, extra=extra)
    with pytest.raises(sdp.InvalidParameter, match=message):
        load(path)


def test_the_ledger_may_be_a_postgres_url(tmp_path: Path) -> None:
    url = "postgresql://sharpdp:s3cret-pw@127.0.0.1:1/privacy"
    config = load(write_config(tmp_path, ledger=url))
    assert config.ledger == url  # a URL, kept as written (not a path)
    assert config.state == tmp_path / "service.sqlite"  # the state: beside the config
    # nothing listens on port 1: the service refuses to start, without showing the password
    with pytest.raises(sdp.LedgerError) as refused:
        create_app(config, admin_token="x")
    assert "s3cret-pw" not in str(refused.value)
    assert "127.0.0.1:1" in str(refused.value)
    with pytest.raises(sdp.InvalidParameter, match="SQLite file or a postgresql:// URL"):
        load(write_config(tmp_path, ledger="mysql://root@127.0.0.1/privacy"))


def test_a_ledger_directory_that_cannot_be_made_is_a_ledger_error(tmp_path: Path) -> None:
    # (a FileNotFoundError or NotADirectoryError from mkdir, "unexpected" at the terminal)
    (tmp_path / "plain").write_text("a file, not a directory")
    config = load(write_config(tmp_path, ledger=str(tmp_path / "plain" / "sub" / "l.sqlite")))
    with pytest.raises(sdp.LedgerError, match=r"cannot create the directory .* of \[ledger\] path"):
        create_app(config, admin_token="x")


@pytest.mark.parametrize(("budget", "message"), [("approx:1", "approx takes"), ("br:1", "unknown")])
def test_a_bad_budget_policy_is_refused(tmp_path: Path, budget: str, message: str) -> None:
    with pytest.raises(sdp.InvalidParameter, match=message):
        load(write_config(tmp_path, budget=budget))


def test_serve_refuses_a_bad_config_in_one_line(tmp_path: Path) -> None:
    path = write_config(tmp_path, budget="approx:1")
    run = subprocess.run(
        [sys.executable, "-c", SERVE, "serve", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert run.returncode == 2  # invalid input: the config names a bad budget
    assert run.stderr.count("\n") == 1
    assert "approx takes" in run.stderr


def test_serve_on_a_port_in_use_is_one_line(tmp_path: Path) -> None:
    # uvicorn logged the failure over several lines and exited 3 (after the admin token line)
    import socket

    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        run = subprocess.run(
            [sys.executable, "-c", SERVE, "serve", "--example", "--port", str(port)],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
        )
    assert run.returncode == 1
    assert run.stderr.strip() == f"error: cannot listen on 127.0.0.1:{port}: Address already in use"


def test_serve_example_serves_the_flights(tmp_path: Path) -> None:
    port = free_port()
    log = tmp_path / "serve.log"
    env = {**os.environ, "SHARPDP_ADMIN_TOKEN": ADMIN}
    with open(log, "wb") as out:
        process = subprocess.Popen(
            [sys.executable, "-c", SERVE, "serve", "--example", "--port", str(port)],
            cwd=tmp_path,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    url = f"http://127.0.0.1:{port}"
    try:
        wait_ready(url, process, 60.0, log)
        r = httpx.post(
            f"{url}/admin/analysts",
            json={"name": "ana", "budget": "approx:1,1e-6", "period": "month"},
            headers=admin(),
        )
        assert r.status_code == 201, r.text
        token = r.json()["token"]
        body = {
            "dataset": "flights",
            "query": "count_by",
            "column": "carrier",
            "keys": ["AA", "DL", "UA"],
            "privacy": "pure:0.1",
            "max_groups": 1,
            "max_rows": 1,
        }
        out = httpx.post(f"{url}/queries", json=body, headers=bearer(token), timeout=60)
        assert out.status_code == 200, out.text
        assert {row["carrier"] for row in out.json()["rows"]} == {"AA", "DL", "UA"}
        assert (tmp_path / "sharpdp-ledger.sqlite").is_file()  # in the working directory
    finally:
        process.terminate()
        process.wait(timeout=30)

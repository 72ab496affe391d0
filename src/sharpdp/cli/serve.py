"""``sharpdp serve CONFIG``: the query service (FastAPI on uvicorn; the ``service`` extra).

Examples::

    SHARPDP_ADMIN_TOKEN=... sharpdp serve service.toml --port 8000
    sharpdp serve --example          # the flights, SQLite ledger in the working directory

The admin token comes from ``SHARPDP_ADMIN_TOKEN``; without it a random one is made and printed
once on standard error. ``--workers N`` starts N worker processes on one port; they share the
ledger and the service's state file (every spend is one ledger transaction).
"""

from __future__ import annotations

import contextlib
import os
import secrets
import socket
from pathlib import Path
from typing import Annotated

import typer

from sharpdp.cli._common import app, err_console
from sharpdp.errors import InvalidParameter, SharpDPError

__all__ = ["serve"]


@app.command()
def serve(
    config: Annotated[
        Path | None,
        typer.Argument(
            help="the service's TOML config: \\[ledger] path, \\[policy] budget and period, "
            "one \\[datasets.NAME] per data set (path or example, privacy_unit, null_units, schema, "
            "max_rows, max_groups); see the README"
        ),
    ] = None,
    host: Annotated[str, typer.Option(help="the address to listen on")] = "127.0.0.1",
    port: Annotated[int, typer.Option(min=0, max=65535, help="the port")] = 8000,
    workers: Annotated[int, typer.Option(min=1, max=64, help="worker processes")] = 1,
    example: Annotated[
        bool,
        typer.Option(
            "--example", help="serve the flights example (ledger in the working directory)"
        ),
    ] = False,
    log_level: Annotated[str, typer.Option(help="uvicorn's log level")] = "info",
) -> None:
    """Serve private queries over HTTP under durable per-analyst budgets.

    Example: SHARPDP_ADMIN_TOKEN=secret sharpdp serve --example
    """
    try:
        import uvicorn

        from sharpdp.service import app as service_app
        from sharpdp.service import config as service_config
    except ImportError as err:  # pragma: no cover - an optional dependency
        raise InvalidParameter(
            f"sharpdp serve needs the service extra (pip install 'sharpdp[service]'): {err}"
        ) from None
    if example == (config is not None):
        raise typer.BadParameter("give a CONFIG file or --example (one of them)")
    if config is not None:
        service_config.load(config)  # a bad file fails here, once, with its message
        os.environ[service_app.CONFIG_ENV] = str(config.resolve())
    else:
        os.environ[service_app.CONFIG_ENV] = f"example:{Path.cwd()}"
    _check_listen(host, port)
    if not os.environ.get(service_app.ADMIN_TOKEN_ENV):
        token = secrets.token_urlsafe(32)
        os.environ[service_app.ADMIN_TOKEN_ENV] = token
        err_console.print(
            f"{service_app.ADMIN_TOKEN_ENV} is not set; the admin token of this run is {token}",
            highlight=False,
            soft_wrap=True,
        )
    app_path = "sharpdp.service.app:app_from_environment"
    if workers == 1:
        uvicorn.run(app_path, factory=True, host=host, port=port, log_level=log_level)
        return
    # As uvicorn.run does for several workers, with one change: uvicorn makes the listening
    # socket with protocol 0, so asyncio leaves Nagle's algorithm on for the accepted
    # connections (~40 ms added to every response by delayed ACKs); Linux hands TCP_NODELAY on
    # from the listening socket to them.
    from uvicorn.supervisors import Multiprocess

    settings = uvicorn.Config(
        app_path, factory=True, host=host, port=port, workers=workers, log_level=log_level
    )
    sock = settings.bind_socket()
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    Multiprocess(settings, sockets=[sock]).run()


def _check_listen(host: str, port: int) -> None:
    """Refuse, in one line, an address the server cannot listen on (a port in use, a host that
    is not this machine's): uvicorn logged it over several lines and exited 3. Port 0 (any
    free port) is left to uvicorn."""
    if port == 0:
        return
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM, flags=socket.AI_PASSIVE)
    except OSError as err:
        raise SharpDPError(f"cannot listen on {host}:{port}: {err}") from None
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as probe:
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)  # as uvicorn binds
        try:
            probe.bind(address)
        except OSError as err:
            raise SharpDPError(f"cannot listen on {host}:{port}: {err.strerror or err}") from None

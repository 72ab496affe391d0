"""The ``sharpdp`` command (requires the ``cli`` extra: typer and rich).

One module per command group: :mod:`~sharpdp.cli.demo` (the flights analysis),
:mod:`~sharpdp.cli.query` (one private query on any CSV/Parquet file) and
:mod:`~sharpdp.cli.convert` (sharp conversions between privacy notions). Errors print one line and
exit with status 1 (2 for bad usage); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import sys
from typing import Annotated

import typer

from sharpdp._version import __version__
from sharpdp.cli import convert, demo, query  # noqa: F401  (each registers its commands)
from sharpdp.cli._common import app, console
from sharpdp.errors import SharpDPError

__all__ = ["app", "main"]

_DEBUG = {"on": False}


def _version(value: bool) -> None:
    if value:
        console.print(f"sharpdp {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: Annotated[
        bool,
        typer.Option("--version", callback=_version, is_eager=True, help="Print the version."),
    ] = False,
    debug: Annotated[bool, typer.Option("--debug", help="Show tracebacks of errors.")] = False,
) -> None:
    """Differential privacy with every number a valid bound, and the sharpest known.

    Start with `sharpdp demo`: a private analysis of the 336,776 New York flights of 2013.
    """
    _DEBUG["on"] = debug


def main() -> None:
    """Entry point of the ``sharpdp`` console script: every error is one line and an exit code
    (1: refused or invalid, e.g. over budget; 2: bad usage)."""
    try:
        code = app(standalone_mode=False)
    except SharpDPError as err:
        if _DEBUG["on"]:
            raise
        console.print(f"[red]error:[/red] {err}", highlight=False, soft_wrap=True)
        sys.exit(1)
    except typer.TyperException as err:  # usage errors: bad options, bad values
        format_message = getattr(err, "format_message", None)
        message = format_message() if callable(format_message) else str(err)
        if message:  # (no arguments at all: the help was printed instead)
            console.print(
                f"[red]error:[/red] {message} (see sharpdp --help)", highlight=False, soft_wrap=True
            )
        sys.exit(int(getattr(err, "exit_code", 2)))
    except typer.Abort:
        sys.exit(1)
    if isinstance(code, int) and code:
        sys.exit(code)

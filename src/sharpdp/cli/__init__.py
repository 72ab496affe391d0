"""The ``sharpdp`` command (requires the ``cli`` extra: typer and rich).

One module per command group: :mod:`~sharpdp.cli.demo` (the flights analysis),
:mod:`~sharpdp.cli.query` (one private query on any CSV/Parquet file),
:mod:`~sharpdp.cli.convert` (sharp conversions between privacy notions),
:mod:`~sharpdp.cli.compose` (the privacy of a plan of mechanisms),
:mod:`~sharpdp.cli.calibrate` (the least noise for a target),
:mod:`~sharpdp.cli.capacity` (how many runs fit a budget) and :mod:`~sharpdp.cli.budget` (what a
ledger records). Errors print one line on standard error and exit with status 1 (2 for bad
usage, 130 when interrupted); ``--debug`` shows the traceback.
"""

from __future__ import annotations

import sys
import traceback
from typing import Annotated

import typer
from rich.markup import escape

from sharpdp._version import __version__
from sharpdp.cli import budget, calibrate, capacity, compose, convert, demo, plot, query, serve  # noqa: F401
from sharpdp.cli._common import app, console, err_console
from sharpdp.errors import InvalidParameter, SharpDPError

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


def _fail(message: str, code: int) -> None:
    """Print one error line (after the traceback, with ``--debug``) and exit with ``code``, the
    same with or without ``--debug``; ``message`` is markup (callers escape text)."""
    if _DEBUG["on"]:
        traceback.print_exc()
    err_console.print(f"[red]error:[/red] {message}", highlight=False, soft_wrap=True, markup=True)
    sys.exit(code)


def _interrupted(err: BaseException) -> bool:
    """Whether ``err`` is Ctrl-C as the engine reports it: DuckDB catches the signal during a
    query and raises a plain ``RuntimeError("Query interrupted")`` (or its own
    ``InterruptException``), not KeyboardInterrupt. Matched exactly: an error that merely
    mentions an interruption is a failure to report."""
    if type(err).__name__ == "InterruptException":
        return True
    return type(err) is RuntimeError and str(err).strip() == "Query interrupted"


def main() -> None:
    """Entry point of the ``sharpdp`` console script: every error is one line on standard error
    and an exit code: 2 for invalid input (an unknown option or name, a value the command line
    or the library refuses as invalid: ``InvalidParameter``), 1 for a valid request that is
    refused (over budget, a corrupt ledger, a conversion that does not exist, a numerical
    failure), 130 when interrupted."""
    try:
        code = app(standalone_mode=False)
    except InvalidParameter as err:  # the input is invalid, whichever layer noticed it
        _fail(escape(str(err)), 2)
    except SharpDPError as err:
        _fail(escape(str(err)), 1)
    except typer.TyperException as err:  # usage errors: bad options, bad values
        format_message = getattr(err, "format_message", None)
        message = format_message() if callable(format_message) else str(err)
        message = message.replace("Value error, ", "")  # how typer words a refused choice
        message = " ".join(message.split())  # one line (a list of choices spans several)
        if not message:  # (no arguments at all: the help was printed instead)
            sys.exit(int(getattr(err, "exit_code", 2)))
        # the help of the command that refused it (``sharpdp query --help``), named whatever
        # the program was called
        names: list[str] = []
        ctx = getattr(err, "ctx", None)
        while ctx is not None and getattr(ctx, "parent", None) is not None:  # (not the root's)
            names.append(str(ctx.info_name))
            ctx = ctx.parent
        where = " ".join(["sharpdp", *reversed(names)])
        _fail(f"{escape(message)} (see {where} --help)", int(getattr(err, "exit_code", 2)))
    except (typer.Abort, KeyboardInterrupt):  # (click turns Ctrl-C into Abort)
        _fail("interrupted", 130)
    except Exception as err:  # a bug: still one line, the traceback with --debug
        if _interrupted(err):
            _fail("interrupted", 130)
        lines = str(err).strip().splitlines()  # an engine's error may run to many lines
        first = lines[0] if lines else ""
        _fail(
            escape(
                f"unexpected {type(err).__name__}: {first} (run with --debug for the traceback)"
            ),
            1,
        )
    if code == 130:  # typer's own answer to Ctrl-C (a KeyboardInterrupt it caught)
        _fail("interrupted", 130)
    if isinstance(code, int) and code:
        sys.exit(code)

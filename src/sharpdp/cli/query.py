"""``sharpdp query``: one private query on a CSV or Parquet file, from the terminal.

Examples::

    sharpdp query flights.csv count-by carrier --unit tailnum --privacy pure:0.1 --keys AA,DL,UA
    sharpdp query flights.csv count-by origin,month --unit tailnum --keys EWR:1,JFK:1,LGA:1
    sharpdp query flights.parquet top-k dest --k 10 --unit tailnum --privacy approx:0.5,1e-7
    sharpdp query flights.csv mean dep_delay --bounds -30,150 --unit tailnum --privacy pure:0.2
    sharpdp query flights.csv sum dep_delay --bounds 0,3000 --clamp person --unit tailnum
    sharpdp query flights.csv count-by carrier --unit tailnum --privacy pure:0.1 --explain
    sharpdp query survey.csv count-by region --row-level --privacy pure:0.1   (one row per person)

(The flights table holds rows without a tailnum: add ``--drop-null-units`` to the examples above,
or the session refuses the file.)

The budget is kept in ``--ledger`` (per ``--analyst``): the account's first query records
``--budget`` (default ``approx:1,1e-6``), later ones use the recorded budget unless ``--budget``
is given (then it must match). Without a ledger, the query runs under a fresh in-memory budget (one
query, nothing remembered).
"""

from __future__ import annotations

import contextlib
import json
import math
from collections.abc import Iterator
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any, NamedTuple

import typer
from rich.markup import escape
from rich.table import Table

import sharpdp as sdp
from sharpdp._format import upper
from sharpdp.cli._common import (
    NUMBER,
    Digits,
    app,
    console,
    err_console,
    ledger_path,
    parse_budget,
    parse_guarantee,
)
from sharpdp.errors import SharpDPError

__all__ = ["query"]


class Kind(StrEnum):
    """The queries ``sharpdp query`` runs."""

    COUNT = "count"
    COUNT_BY = "count-by"
    SUM = "sum"
    MEAN = "mean"
    QUANTILE = "quantile"
    TOP_K = "top-k"


class Support(StrEnum):
    """What ``quantile --support`` draws."""

    CELLS = "cells"
    POINTS = "points"


class Clamp(StrEnum):
    """What ``sum --clamp`` clamps to the bounds."""

    ROW = "row"
    PERSON = "person"


def _floats(text: str, option: str, n: int) -> tuple[float, ...]:
    # ASCII numbers only (float() also takes "1_0" and other scripts' digits: a typo as a value)
    parts = text.split(",")
    if len(parts) != n or not all(NUMBER.fullmatch(v.strip()) for v in parts):
        raise typer.BadParameter(f"{option}: {text!r} is not {n} comma-separated numbers")
    values = tuple(float(v) for v in parts)
    if any(math.isnan(v) for v in values):
        raise typer.BadParameter(f"{option}: {text!r} is not {n} comma-separated numbers")
    return values


def _split(text: str, separator: str) -> list[str]:
    """``text`` cut at each ``separator`` not escaped by a backslash; ``\\`` + separator is
    the separator itself in a part (other backslashes are kept, for the next split)."""
    parts, current, i = [], [], 0
    while i < len(text):
        if text[i] == "\\" and text[i + 1 : i + 2] == separator:
            current.append(separator)
            i += 2
            continue
        if text[i] == separator:
            parts.append("".join(current))
            current = []
        else:
            current.append(text[i])
        i += 1
    parts.append("".join(current))
    return parts


def _list(text: str | None) -> list[str] | None:
    """A comma-separated option as its items, spaces around each ignored (``AA, DL``); a comma
    inside an item is written ``\\,``."""
    return None if text is None else [v.strip() for v in _split(text, ",") if v.strip() != ""]


_BOOLEANS = {"true": True, "false": False, "1": True, "0": False}

#: How a key's text becomes a value of its column, by the column's Ibis type (other types, text
#: and dates, are passed as text).
_KEY_PARSERS: tuple[tuple[str, Any, str], ...] = (
    ("is_boolean", lambda v: _BOOLEANS[v.strip().lower()], "true or false"),
    ("is_integer", int, "an integer"),
    ("is_floating", float, "a number"),
    ("is_decimal", float, "a number"),
)


def _typed_keys(table: Any, columns: list[str], texts: list[str]) -> list[Any]:
    """``--keys`` as values of the key columns: each key is ``a`` (one column) or ``a:b`` (one
    value per column), each value parsed by its column's type (``--keys 1,2`` on an integer
    column are the integers 1 and 2)."""
    schema = table.schema()
    if not columns or any(c not in schema for c in columns):
        return list(texts)  # the session refuses them, naming what is missing
    parsers = [
        next(
            ((parse, what) for name, parse, what in _KEY_PARSERS if getattr(schema[c], name)()),
            (str, "text"),
        )
        for c in columns
    ]
    keys: list[Any] = []
    for text in texts:
        parts = _split(text, ":") if len(columns) > 1 else [text.replace("\\:", ":")]
        if len(parts) != len(columns):
            raise typer.BadParameter(
                f"--keys: {text!r} is not a key of {', '.join(columns)}: give one value per "
                f"column, separated by ':' (e.g. --keys {':'.join(['v'] * len(columns))},...; "
                "a ':' or ',' inside a value is written '\\:' or '\\,')"
            )
        values = []
        for part, c, (parse, what) in zip(parts, columns, parsers, strict=True):
            try:
                values.append(parse(part))
            except (ValueError, KeyError):
                raise typer.BadParameter(
                    f"--keys: {part!r} is not {what}, as column {c!r} ({schema[c]}) holds"
                ) from None
        keys.append(tuple(values) if len(columns) > 1 else values[0])
    return keys


#: The queries each option applies to (an option given to another query is refused, not ignored).
_APPLIES: dict[str, tuple[Kind, ...]] = {
    "--keys": (Kind.COUNT_BY, Kind.TOP_K, Kind.SUM, Kind.MEAN),
    "--by": (Kind.SUM, Kind.MEAN),
    "--bounds": (Kind.SUM, Kind.MEAN, Kind.QUANTILE),
    "--q": (Kind.QUANTILE,),
    "--k": (Kind.TOP_K,),
    "--max-groups": (Kind.COUNT_BY, Kind.TOP_K, Kind.SUM, Kind.MEAN),
}


def _check_applies(kind: Kind, given: dict[str, bool]) -> None:
    for option, kinds in _APPLIES.items():
        if given[option] and kind not in kinds:
            raise typer.BadParameter(
                f"{option} does not apply to {kind.value} (only to "
                f"{', '.join(k.value for k in kinds)})"
            )


def _key_columns(kind: Kind, column: str | None, by: str | None) -> list[str]:
    if kind is Kind.COUNT_BY and column is not None:
        return column.split(",")
    if kind is Kind.TOP_K and column is not None:
        return [column]
    return [by] if by is not None else []


def _build(session: Any, kind: Kind, column: str | None, options: dict[str, Any]) -> Any:
    privacy = options["privacy"]
    caps = {"max_rows": options["max_rows"]}
    if kind is Kind.COUNT:
        return session.count(privacy=privacy, **caps)
    if column is None:
        raise typer.BadParameter(f"{kind.value} needs a COLUMN")
    if kind in (Kind.SUM, Kind.MEAN, Kind.QUANTILE) and options["bounds"] is None:
        raise typer.BadParameter(f"--bounds: {kind.value} needs bounds, e.g. --bounds 0,100")
    by = options["by"]
    if kind is Kind.COUNT_BY:
        return session.count_by(
            column.split(","),
            keys=options["keys"],
            privacy=privacy,
            max_groups=options["max_groups"],
            **caps,
        )
    if kind is Kind.TOP_K:
        return session.top_k(
            column,
            k=options["k"],
            keys=options["keys"],
            privacy=privacy,
            max_groups=options["max_groups"],
            **caps,
        )
    if kind is Kind.QUANTILE:
        return session.quantile(
            column,
            options["q"],
            bounds=options["bounds"],
            privacy=privacy,
            support=options["support"].value,
            **caps,
        )
    value_args = {
        "bounds": options["bounds"],
        "privacy": privacy,
        "by": by,
        "keys": options["keys"],
        "max_groups": options["max_groups"],
    }
    if kind is Kind.SUM and options["clamp"] is Clamp.PERSON:  # every row counts: no max_rows
        return session.sum(column, clamp="person", **value_args)
    method = session.sum if kind is Kind.SUM else session.mean
    return method(column, **value_args, **caps)


#: The budget of a new account when ``--budget`` is not given.
DEFAULT_BUDGET = "approx:1,1e-6"


def _recorded_budget(ledger: Path | None, analyst: str) -> sdp.Guarantee | None:
    """The budget the ledger records for the analyst (``None``: no ledger file, or none recorded
    yet). Opens the ledger once."""
    if ledger is None or not ledger.exists():
        return None
    try:
        with sdp.Accountant(None, str(ledger), analyst) as account:
            return account.budget
    except sdp.InvalidParameter:  # no budget recorded for this analyst yet
        return None


def _budget(text: str | None, recorded: sdp.Guarantee | None) -> sdp.Guarantee:
    """``--budget`` if given; else the budget the ledger records for the analyst; else the default."""
    if text is not None:
        return parse_budget(text, "--budget")
    return recorded if recorded is not None else parse_guarantee(DEFAULT_BUDGET, "--budget")


@app.command()
def query(
    file: Annotated[
        Path, typer.Argument(help="a CSV or Parquet file", exists=True, dir_okay=False)
    ],
    kind: Annotated[Kind, typer.Argument(help="the query")],
    column: Annotated[
        str | None, typer.Argument(help="the column (count-by: several, comma-separated)")
    ] = None,
    unit: Annotated[str, typer.Option("--unit", help="the column that identifies a person")] = "",
    row_level: Annotated[
        bool, typer.Option("--row-level", help="each row is a person (instead of --unit)")
    ] = False,
    privacy: Annotated[
        str,
        typer.Option(
            help="this query's privacy: pure:ε, approx:ε,δ, zcdp:ρ (count-by and top-k without "
            "--keys find keys privately, which needs δ: a pure or zcdp target then takes δ from "
            "the budget, as the output's title shows)"
        ),
    ] = "pure:0.1",
    budget: Annotated[
        str | None,
        typer.Option(help="the analyst's total budget (default: the ledger's, else approx:1,1e-6)"),
    ] = None,
    ledger: Annotated[
        Path | None,
        typer.Option(help="ledger file keeping the budget", callback=ledger_path),
    ] = None,
    analyst: Annotated[str, typer.Option(help="whose budget")] = "default",
    keys: Annotated[
        str | None,
        typer.Option(
            help="public keys, comma-separated; for several columns each key's values are "
            "separated by ':' (a ',' or ':' inside a value is written '\\,' or '\\:')"
        ),
    ] = None,
    by: Annotated[str | None, typer.Option(help="group sums and means by this column")] = None,
    bounds: Annotated[
        str | None, typer.Option(help="clamping bounds L,U (sum, mean, quantile)")
    ] = None,
    q: Annotated[
        float | None, typer.Option("--q", help="the quantile, in [0, 1] (default 0.5)")
    ] = None,
    support: Annotated[
        Support | None,
        typer.Option(
            help="quantile: draw grid 'cells' (Smith's mechanism) or grid 'points' (for tied "
            "data: integers with few values)"
        ),
    ] = None,
    k: Annotated[
        int | None, typer.Option("--k", help="how many keys top-k releases (default 10)")
    ] = None,
    max_groups: Annotated[int | None, typer.Option(help="keys kept per person (default 1)")] = None,
    max_rows: Annotated[
        int | None, typer.Option(help="rows kept per person and key (default 1)")
    ] = None,
    clamp: Annotated[
        Clamp,
        typer.Option(help="sum: clamp each 'row' (at most --max-rows), or each 'person' total"),
    ] = Clamp.ROW,
    drop_null_units: Annotated[
        bool, typer.Option(help="drop rows whose unit is empty (default: refuse them)")
    ] = False,
    schema: Annotated[
        str | None,
        typer.Option(
            help="a CSV's column types, COL:TYPE,... (e.g. dep_delay:float64,time_hour:timestamp): "
            "every column read as text, declared ones converted, a value that does not parse as "
            "NULL"
        ),
    ] = None,
    level: Annotated[float, typer.Option(help="confidence level of the intervals")] = 0.95,
    seed: Annotated[int | None, typer.Option(help="seed (noise and bounding hash)")] = None,
    explain: Annotated[
        bool, typer.Option("--explain", help="price the query, run nothing")
    ] = False,
    as_json: Annotated[bool, typer.Option("--json", help="print JSON (full precision)")] = False,
    digits: Digits = 6,
) -> None:
    """Run one private query on a CSV or Parquet file, spending from a durable budget.

    Example (flights.csv from the README; its rows without a tailnum are dropped):
    sharpdp query flights.csv count-by carrier --unit tailnum --drop-null-units --privacy pure:0.1
    """
    if not unit and not row_level:
        raise typer.BadParameter(
            "--unit: name the column that identifies a person (or pass --row-level if each row "
            "is a different person)"
        )
    if unit and row_level:
        raise typer.BadParameter("give --unit or --row-level, not both")
    if row_level:  # each row is a person: one row, one key, nothing to cap or drop
        unused = {
            "--max-groups": max_groups is not None,
            "--max-rows": max_rows is not None,
            "--clamp person": clamp is Clamp.PERSON,
            "--drop-null-units": drop_null_units,
        }
        for option, given_here in unused.items():
            if given_here:
                raise typer.BadParameter(
                    f"{option} does not apply to --row-level (each row is a person, with one "
                    "row and one key)"
                )
    if not 0.0 < level < 1.0:  # checked before anything is spent (NaN fails too)
        raise typer.BadParameter(f"--level: the confidence level must be in (0, 1), got {level!r}")
    given = {"--keys": keys, "--by": by, "--bounds": bounds, "--q": q, "--k": k}
    _check_applies(
        kind,
        {option: value is not None for option, value in given.items()}
        | {"--max-groups": max_groups is not None},
    )
    if kind is Kind.COUNT and column is not None:
        raise typer.BadParameter(
            f"count takes no COLUMN (it counts rows), got {column!r}: use count-by {column}"
        )
    if clamp is Clamp.PERSON and kind is not Kind.SUM:
        raise typer.BadParameter("--clamp person applies to sum only")
    if clamp is Clamp.PERSON and max_rows is not None:  # each person's rows all count
        raise typer.BadParameter("--max-rows does not apply to sum --clamp person")
    if support is not None and kind is not Kind.QUANTILE:
        raise typer.BadParameter("--support applies to quantile only")
    key_texts = _list(keys)
    options = {
        "privacy": parse_guarantee(privacy, "--privacy"),
        "keys": key_texts,
        "by": by,
        "bounds": None if bounds is None else _floats(bounds, "--bounds", 2),
        "q": 0.5 if q is None else q,
        "k": 10 if k is None else k,
        "max_groups": 1 if max_groups is None else max_groups,
        "max_rows": 1 if max_rows is None else max_rows,
        "clamp": clamp,
        "support": support or Support.CELLS,
    }
    session_options = {
        "privacy_unit": unit or None,
        "budget": budget,
        "ledger": ledger,
        "analyst": analyst,
        "null_units": "drop" if drop_null_units else "refuse",
        "seed": seed,
        "schema": None if schema is None else _schema(schema),
    }
    with _in_option_words():
        _run(
            file,
            kind,
            column,
            by,
            session_options,
            key_texts,
            options,
            _Output(level, explain, as_json, digits),
        )


def _schema(text: str) -> dict[str, str]:
    """``--schema COL:TYPE,...`` as a mapping (commas inside a type's brackets, as in
    decimal(12,2), belong to the type)."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "(<[") - (char in ")>]")
        if char == "," and depth == 0:
            items.append(text[start:i])
            start = i + 1
    items.append(text[start:])
    pairs: dict[str, str] = {}
    for item in items:
        column, sep, dtype = item.partition(":")
        if not sep or not column.strip() or not dtype.strip():
            raise typer.BadParameter(f"--schema: expected COL:TYPE items, got {item.strip()!r}")
        if column.strip() in pairs:
            raise typer.BadParameter(f"--schema: column {column.strip()!r} is declared twice")
        pairs[column.strip()] = dtype.strip()
    return pairs


#: The library's keyword arguments as they appear in its messages, and the options they are here.
_OPTION_WORDS = (
    ("null_units='drop'", "--drop-null-units"),
    ("schema={column: type}", "--schema COL:TYPE,..."),
    ("schema= declares", "--schema declares"),
    ("schema: ", "--schema: "),
    ("public keys=", "public --keys"),
    ("keys is only used with by=", "--keys is only used with --by"),
    ("max_rows", "--max-rows"),
    ("max_groups", "--max-groups"),
)


@contextlib.contextmanager
def _in_option_words() -> Iterator[None]:
    """Re-raise the library's refusals with its keyword arguments named as this command's
    options (same exception type, so the exit code is unchanged)."""
    try:
        yield
    except SharpDPError as err:
        message = str(err)
        for word, option in _OPTION_WORDS:
            message = message.replace(word, option)
        if message == str(err):
            raise
        raise type(err)(message) from None


class _Output(NamedTuple):
    """How ``query`` prints: the intervals' level, price only, JSON, significant digits."""

    level: float
    explain: bool
    as_json: bool
    digits: int


def _run(
    file: Path,
    kind: Kind,
    column: str | None,
    by: str | None,
    session_options: dict[str, Any],
    key_texts: list[str] | None,
    options: dict[str, Any],
    output: _Output,
) -> None:
    """Open the session, build the query, then price it (``explain``) or run it and print."""
    level, explain, as_json, digits = output
    ledger, seed, analyst = (session_options[k] for k in ("ledger", "seed", "analyst"))
    recorded = _recorded_budget(ledger, analyst)
    budget = _budget(session_options["budget"], recorded)
    if recorded is not None and (type(budget) is not type(recorded) or budget != recorded):
        # (the library's message names its Python API; here the way out is an option)
        raise sdp.LedgerError(
            f"--budget {session_options['budget']} ({budget!r}) is not the budget {recorded!r} "
            f"that {ledger} records for analyst {analyst!r}: leave --budget out to use the "
            "recorded one (a recorded budget changes only through the library: "
            "Accountant.set_budget, with a reason)"
        )
    if explain and recorded is None:
        ledger = None  # pricing writes nothing: no ledger file, no budget recorded for the analyst
    session = sdp.data.Session(
        str(file),
        privacy_unit=session_options["privacy_unit"],
        budget=budget,
        ledger=None if ledger is None else str(ledger),
        analyst=analyst,
        null_units=session_options["null_units"],
        seed=0 if seed is None else seed,
        schema=session_options["schema"],
    )
    if key_texts is not None:
        key_columns = _key_columns(kind, column, by)
        options["keys"] = _typed_keys(session.table, key_columns, key_texts)
    plan = _build(session, kind, column, options)
    explanation = plan.explain()
    if explain:
        if as_json:
            console.print_json(
                json.dumps(
                    {
                        "query": explanation.query,
                        "cost": explanation.cost,
                        "measure": explanation.measure,
                        "route": explanation.route,
                        "spent_after": explanation.spent_after,
                        "fits": explanation.fits,
                    }
                )
            )
        else:
            console.print(str(explanation), highlight=False, markup=False)
        return
    try:
        result = plan.run(rng=seed)
    except sdp.BudgetExceeded as err:
        if session_options["budget"] is not None or recorded is not None:
            raise
        # the analyst never chose this budget: say where it came from and how to change it
        keep = "" if ledger is not None else ", and --ledger to keep it"
        raise sdp.BudgetExceeded(
            f"{err} (the default budget --budget {DEFAULT_BUDGET}: pass --budget for another{keep})"
        ) from err
    frame, failure = result.released_rows(level)  # (paid for: never lost to an interval)
    if failure is not None:
        err_console.print(f"warning: {failure}; the values are shown alone", markup=False)
    spent = session.accountant.spent()  # the odometer as `sharpdp budget` and the service read it
    if as_json:
        from sharpdp.data.release import json_rows  # (loaded by the query already)

        console.print_json(
            json.dumps(
                {
                    "query": explanation.query,
                    "rows": json_rows(frame),
                    "level": level,
                    "cost": explanation.cost,
                    "measure": explanation.measure,
                    "spent": spent,
                }
            )
        )
        return
    from sharpdp.data.release import text_rows  # (loaded by the query already)

    # the query as a line of its own: a table's title wraps to the table's width, which cut
    # "ApproxDP(epsilon=…" mid-word above a narrow table
    console.print(f"[bold]{escape(explanation.query)}[/bold]", highlight=False)
    # column names and keys are the data's text, never markup: "[/c]" failed after the spend
    table = Table(*[escape(str(c)) for c in frame.columns])
    for row in text_rows(frame, result.keys, digits):  # bounds rounded outward, NULL keys shown
        table.add_row(*(escape(cell) for cell in row))
    console.print(table)
    symbol = "ρ" if explanation.measure == "rho" else "ε"
    console.print(
        f"cost {symbol} = {upper(explanation.cost, digits)} ({explanation.route}); "
        f"spent so far {upper(spent, digits)} of {explanation.budget!r}",
        highlight=False,
        markup=False,
    )

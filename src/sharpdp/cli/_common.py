"""What every command shares: the typer app, the consoles, and the spelling of items and budgets.

An item (a mechanism or a guarantee) is written ``name:param[,param]``: ``gaussian:5`` (σ),
``gaussian:5,2`` (σ, sensitivity), ``laplace:2``, ``exponential:0.1``,
``exponential:0.025,monotonic``, ``topk:10,0.1``, ``pure:1``, ``approx:1,1e-6``, ``zcdp:0.1``,
``br:1``. A guarantee used as a budget or target is written the same way: ``pure:0.1``,
``approx:1,1e-6``, ``zcdp:0.01``, ``approxzcdp:0.01,1e-7``.

Printed bounds go through :func:`sharpdp._format.upper` (lower bounds :func:`~sharpdp._format.lower`);
``--json`` carries full precision (:func:`emit_json`). Errors go to standard error, progress bars
too, and only when both streams are terminals (:func:`working`).
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import re
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Annotated, Any, cast

import typer
from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    SpinnerColumn,
    TextColumn,
    TimeElapsedColumn,
)

import sharpdp as sdp

__all__ = [
    "GUARANTEES",
    "NUMBER",
    "Digits",
    "ItemKind",
    "app",
    "console",
    "emit_json",
    "err_console",
    "item_from_mapping",
    "item_kinds",
    "json_value",
    "ledger_path",
    "parse_guarantee",
    "parse_item",
    "parse_number",
    "working",
]

app = typer.Typer(
    help="Differential privacy with every number a valid bound, and the sharpest known.",
    no_args_is_help=True,
    add_completion=False,
    context_settings={"help_option_names": ["-h", "--help"]},
    pretty_exceptions_enable=False,
)
#: Results (standard output).
console = Console()
#: Errors and progress (standard error).
err_console = Console(stderr=True)

#: The ``--digits`` option every command that prints bounds takes.
Digits = Annotated[
    int,
    typer.Option(
        "--digits",
        min=1,
        max=17,
        help="significant digits of printed bounds (upper bounds rounded up, lower ones down)",
    ),
]


@dataclass(frozen=True)
class ItemKind:
    """How one item name is spelled on the command line and in plans.

    Attributes:
        factory: the constructor (``sdp.Gaussian``, ``sdp.PureDP``…).
        params: its numeric parameters in the order ``name:a,b`` gives them (constructor names).
        required: how many of ``params`` must be given (the rest keep the constructor's defaults).
        flags: boolean keyword parameters, switched on by their name (``exponential:0.1,monotonic``).
        integers: the parameters that must be integers.
    """

    factory: Callable[..., sdp.Guarantee]
    params: tuple[str, ...]
    required: int = 1
    flags: tuple[str, ...] = ()
    integers: frozenset[str] = field(default_factory=frozenset)

    def spelling(self, name: str) -> str:
        """``gaussian:sigma[,sensitivity]``."""
        head = ",".join(self.params[: self.required])
        tail = "".join(f"[,{p}]" for p in (*self.params[self.required :], *self.flags))
        return f"{name}:{head}{tail}"


def _items() -> dict[str, ItemKind]:
    # Mechanisms load lazily (sdp.__getattr__), so the table is built on first use.
    selection = ("epsilon", "sensitivity")
    return {
        "gaussian": ItemKind(sdp.Gaussian, ("sigma", "sensitivity")),
        "laplace": ItemKind(sdp.Laplace, ("scale", "sensitivity")),
        "discrete-gaussian": ItemKind(
            sdp.DiscreteGaussian, ("sigma", "sensitivity"), integers=frozenset({"sensitivity"})
        ),
        "discrete-laplace": ItemKind(
            sdp.DiscreteLaplace, ("scale", "sensitivity"), integers=frozenset({"sensitivity"})
        ),
        "exponential": ItemKind(sdp.Exponential, selection, flags=("monotonic",)),
        "permute-and-flip": ItemKind(sdp.PermuteAndFlip, selection, flags=("monotonic",)),
        "topk": ItemKind(
            sdp.TopK,
            ("k", "epsilon", "sensitivity"),
            required=2,
            flags=("monotonic",),
            integers=frozenset({"k"}),
        ),
        "rr": ItemKind(
            sdp.RandomizedResponse, ("epsilon", "categories"), integers=frozenset({"categories"})
        ),
        "pure": ItemKind(sdp.PureDP, ("epsilon",)),
        "approx": ItemKind(sdp.ApproxDP, ("epsilon", "delta"), required=2),
        "zcdp": ItemKind(sdp.ZCDP, ("rho", "xi")),
        "approxzcdp": ItemKind(sdp.ApproxZCDP, ("rho", "delta", "xi"), required=2),
        "br": ItemKind(sdp.BoundedRange, ("eta",)),
        "gdp": ItemKind(sdp.GDP, ("mu",)),
    }


_ITEMS: dict[str, ItemKind] = {}


def item_kinds() -> dict[str, ItemKind]:
    """Items by the name used on the command line (built on first use)."""
    if not _ITEMS:
        _ITEMS.update(_items())
    return _ITEMS


#: Guarantees by the name used on the command line: (constructor, parameter names).
GUARANTEES: dict[str, tuple[type[sdp.Guarantee], tuple[str, ...]]] = {
    "pure": (sdp.PureDP, ("epsilon",)),
    "approx": (sdp.ApproxDP, ("epsilon", "delta")),
    "zcdp": (sdp.ZCDP, ("rho",)),
    "approxzcdp": (sdp.ApproxZCDP, ("rho", "delta")),
}


#: A decimal number as written in ASCII (``1``, ``-0.5``, ``1e-6``, ``.5``, ``inf``); not ``1_0``.
NUMBER = re.compile(
    r"[+-]?(?:(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|inf|infinity)", re.ASCII | re.I
)


def parse_number(text: str, name: str, integer: bool, where: str) -> float | int:
    """``text`` as a number (an ``int`` if ``integer``); ``typer.BadParameter`` naming ``where``
    and ``name`` for anything else, NaN included."""
    if text.strip().lower() == "nan":
        raise typer.BadParameter(f"{where}: {name} must be a number, got NaN")
    if not NUMBER.fullmatch(text.strip()):  # float() would also take "1_0" and non-ASCII digits
        raise typer.BadParameter(f"{where}: {name} must be a number, got {text!r}")
    value = float(text)
    if math.isnan(value):
        raise typer.BadParameter(f"{where}: {name} must be a number, got NaN")
    if integer:
        if not value.is_integer():
            raise typer.BadParameter(f"{where}: {name} must be an integer, got {text!r}")
        # exactly as written when it is written as an integer (float() rounds beyond 2^53:
        # k = 9007199254740993 read as ...992); "1e3" and "10.0" through the float
        digits = text.strip()
        return int(digits) if digits.lstrip("+-").isdigit() else int(value)
    return value


def _build(name: str, kind: ItemKind, kwargs: dict[str, Any], where: str) -> sdp.Guarantee:
    try:
        return kind.factory(**kwargs)
    except sdp.InvalidParameter as err:  # the library's message names the parameter and value
        raise typer.BadParameter(f"{where}: {name}: {err}") from None


def parse_item(text: str, option: str, kinds: Iterable[str] | None = None) -> sdp.Guarantee:
    """``gaussian:5`` → ``sdp.Gaussian(5.0)`` (``typer.BadParameter`` naming ``option``).

    Args:
        text: ``name:param[,param][,flag]``, e.g. ``gaussian:5,2``, ``exponential:0.025,monotonic``.
        option: the option or argument it came from (named in errors).
        kinds: the names accepted (default: every item of :func:`item_kinds`).

    Returns:
        The mechanism or guarantee, validated by its constructor.

    Raises:
        typer.BadParameter: an unknown name, a wrong number of parameters, a parameter that is not
            a number, or one the constructor refuses (its message names the parameter and value).
    """
    table = item_kinds()
    allowed = list(table) if kinds is None else list(kinds)
    name, colon, params = text.strip().partition(":")
    name = name.lower()
    if name not in allowed:
        spelled = ", ".join(table[n].spelling(n) for n in allowed)
        raise typer.BadParameter(f"{option}: unknown {name!r} in {text!r}; write one of {spelled}")
    kind = table[name]
    words = [w.strip() for w in params.split(",")] if colon and params.strip() else []
    flags = {w.lower() for w in words if w.lower() in kind.flags}
    numbers = [w for w in words if w.lower() not in kind.flags]
    for word in numbers:  # a misspelt flag read as a number was reported as a bad sensitivity
        if (
            kind.flags
            and re.fullmatch(r"[A-Za-z_-]{3,}", word)
            and word.lower() not in _NUMBER_WORDS
        ):
            close = difflib.get_close_matches(word.lower(), kind.flags, n=1)
            hint = f"did you mean {close[0]!r}?" if close else f"its flags: {', '.join(kind.flags)}"
            raise typer.BadParameter(f"{option}: {name} has no flag {word!r} in {text!r}; {hint}")
    if not kind.required <= len(numbers) <= len(kind.params):
        raise typer.BadParameter(
            f"{option}: {name} takes {kind.spelling(name)}, got {text!r} "
            f"(e.g. {_example(name, kind)})"
        )
    kwargs: dict[str, Any] = {
        p: parse_number(v, p, p in kind.integers, option)
        for p, v in zip(kind.params, numbers, strict=False)
    }
    kwargs.update(dict.fromkeys(flags, True))
    return _build(name, kind, kwargs, option)


#: Words that parse as numbers (not flags): ``inf`` and ``nan`` reach the constructors' checks.
_NUMBER_WORDS = frozenset(
    sign + word for sign in ("", "+", "-") for word in ("inf", "infinity", "nan")
)


def _example(name: str, kind: ItemKind) -> str:
    samples = {"delta": "1e-6", "k": "10", "categories": "2"}
    return f"{name}:" + ",".join(samples.get(p, "1") for p in kind.params[: kind.required])


def item_from_mapping(entry: Mapping[str, Any], where: str) -> tuple[sdp.Guarantee, int]:
    """A plan's item → ``(mechanism, count)``.

    ``{"mechanism": "gaussian", "sigma": 5, "count": 100}``; the other keys are the constructor's
    parameter names (``sensitivity``, ``monotonic``…); ``count`` defaults to 1.

    Raises:
        typer.BadParameter: a missing or unknown mechanism, an unknown key, a value of the wrong
            type, or one the constructor refuses; ``where`` (e.g. ``plan.toml, item 2``) leads.
    """
    table = item_kinds()
    rest = dict(entry)
    name = rest.pop("mechanism", None)
    if not isinstance(name, str) or name.lower() not in table:
        raise typer.BadParameter(
            f"{where}: 'mechanism' must be one of {', '.join(table)}, got {name!r}"
        )
    name = name.lower()
    kind = table[name]
    count = rest.pop("count", 1)
    if isinstance(count, bool) or not isinstance(count, int) or count < 1:
        raise typer.BadParameter(f"{where}: count must be an integer ≥ 1, got {count!r}")
    known = (*kind.params, *kind.flags)
    kwargs: dict[str, Any] = {}
    for key, value in rest.items():
        if key not in known:
            raise typer.BadParameter(
                f"{where}: {name} takes no {key!r}; it takes {', '.join(known)} (and count)"
            )
        if key in kind.flags:
            if not isinstance(value, bool):
                raise typer.BadParameter(f"{where}: {key} must be true or false, got {value!r}")
        elif isinstance(value, bool) or not isinstance(value, int | float):
            raise typer.BadParameter(f"{where}: {key} must be a number, got {value!r}")
        elif key in kind.integers and not float(value).is_integer():
            raise typer.BadParameter(f"{where}: {key} must be an integer, got {value!r}")
        elif key in kind.integers:
            value = int(value)
        kwargs[key] = value
    missing = [p for p in kind.params[: kind.required] if p not in kwargs]
    if missing:
        raise typer.BadParameter(f"{where}: {name} needs {', '.join(missing)}")
    return _build(name, kind, kwargs, where), count


def parse_guarantee(text: str, option: str, kinds: Iterable[str] | None = None) -> sdp.Guarantee:
    """``approx:1,1e-6`` → ``sdp.ApproxDP(1.0, 1e-6)`` (``typer.BadParameter`` naming ``option``).

    Args:
        text: ``name:param[,param]``.
        option: the option it came from (named in errors).
        kinds: the guarantee names accepted (default: those of :data:`GUARANTEES`).
    """
    return parse_item(text, option, GUARANTEES if kinds is None else kinds)


def parse_budget(text: str, option: str, kinds: Iterable[str] | None = None) -> sdp.Guarantee:
    """:func:`parse_guarantee` for a budget: finite parameters only (``pure:inf``, or a typo such
    as ``pure:1e999``, would be a budget without limit, and a ledger would record it)."""
    found = parse_guarantee(text, option, kinds)
    fields = dataclasses.fields(cast(Any, found))  # the guarantee kinds are dataclasses
    if not all(math.isfinite(getattr(found, f.name)) for f in fields):
        raise typer.BadParameter(f"{option}: a budget must have finite parameters, got {text!r}")
    return found


def json_value(x: object) -> object:
    """``x`` made JSON-safe: non-finite floats as the strings ``"inf"``/``"-inf"`` (NaN is a bug)."""
    if isinstance(x, float):
        if math.isnan(x):
            raise sdp.NumericalError("a NaN reached the output (a bug)")
        if math.isinf(x):
            return "inf" if x > 0 else "-inf"
        return x
    if isinstance(x, Mapping):
        return {str(k): json_value(v) for k, v in x.items()}
    if isinstance(x, list | tuple):
        return [json_value(v) for v in x]
    return x


def emit_json(payload: Mapping[str, Any]) -> None:
    """Print ``payload`` as JSON on standard output: full precision, never wrapped."""
    typer.echo(json.dumps(json_value(payload), indent=2, ensure_ascii=False, allow_nan=False))


@contextmanager
def working(description: str, total: int | None = None) -> Iterator[Callable[[int], None]]:
    """A transient progress bar (a spinner when ``total`` is ``None``) on standard error.

    It shows only when standard output and standard error are both terminals, so pipes, files
    and CI logs stay clean; it disappears when the work ends. Yields ``advance(n)``.
    """
    show = console.is_terminal and err_console.is_terminal
    columns = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns += [BarColumn(), MofNCompleteColumn()]
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=err_console, transient=True, disable=not show) as progress:
        task = progress.add_task(escape(description), total=total)

        def advance(n: int = 1) -> None:
            progress.advance(task, n)

        yield advance


def ledger_path(path: Path | None) -> Path | None:
    """A ``--ledger`` option checked as input (exit 2, as ``budget`` and ``plot`` do for their
    ledger argument): an existing file, or a new one in an existing directory (the library's
    ``LedgerError`` for these is a refusal, exit 1, and meant for programs)."""
    if path is None:
        return None
    if path.exists() and not path.is_file():
        raise typer.BadParameter(f"{str(path)!r} is not a regular file")
    if not path.exists() and not path.parent.is_dir():
        raise typer.BadParameter(
            f"directory {str(path.parent)!r} does not exist (a new ledger is created in it)"
        )
    return path

"""Parameter validation shared by every public constructor and method (principle 7).

Each check raises :class:`~sharpdp.errors.InvalidParameter` naming the parameter and its value, and
returns the value normalised to a Python ``float``/``int`` so frozen types store canonical numbers.
"""

from __future__ import annotations

import json
import math
import numbers
import operator
import os
from collections.abc import Iterable, Sequence
from typing import Any, cast

from sharpdp.errors import InvalidParameter

__all__ = [
    "integer",
    "nonnegative",
    "nonnegative_array",
    "order",
    "positive",
    "probability",
    "real",
    "sequence",
]


def real(name: str, value: object, *, allow_inf: bool = False) -> float:
    """Return ``value`` as a float, rejecting non-reals, booleans, NaN and (unless allowed) ±inf."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise InvalidParameter(
            f"{name} must be a real number, got {value!r} ({type(value).__name__})"
        )
    try:
        x = float(value)
    except OverflowError:  # an int or Fraction beyond the float range: it is ±inf as a float
        x = -math.inf if value < 0 else math.inf
    if math.isnan(x):
        raise InvalidParameter(f"{name} must not be NaN")
    if math.isinf(x) and not allow_inf:
        raise InvalidParameter(f"{name} must be finite, got {x!r}")
    # Normalise -0.0 so that frozen values compare and print canonically.
    return x + 0.0


def nonnegative(name: str, value: object, *, allow_inf: bool = False) -> float:
    """A real ``>= 0`` (``inf`` only when allowed)."""
    x = real(name, value, allow_inf=allow_inf)
    if x < 0:
        raise InvalidParameter(f"{name} must be >= 0, got {x!r}")
    return x


def positive(name: str, value: object, *, allow_inf: bool = False) -> float:
    """A real ``> 0`` (``inf`` only when allowed)."""
    x = real(name, value, allow_inf=allow_inf)
    if x <= 0:
        raise InvalidParameter(f"{name} must be > 0, got {x!r}")
    return x


def probability(name: str, value: object) -> float:
    """A δ-like probability in ``[0, 1)`` (δ = 1 is vacuous and almost always a mistake)."""
    x = real(name, value)
    if not 0.0 <= x < 1.0:
        raise InvalidParameter(f"{name} must be in [0, 1), got {x!r}")
    return x


def order(name: str, value: object) -> float:
    """A Rényi order α in ``[1, inf]`` (α = 1 is the KL divergence, α = inf the max-divergence)."""
    x = real(name, value, allow_inf=True)
    if x < 1.0:
        raise InvalidParameter(f"{name} must be >= 1, got {x!r}")
    return x


def integer(name: str, value: object, *, minimum: int = 1, maximum: int | None = None) -> int:
    """An integer ``>= minimum`` (and ``<= maximum`` if given; numpy integers accepted; floats
    and booleans rejected)."""
    if isinstance(value, bool):
        raise InvalidParameter(f"{name} must be an integer, got {value!r}")
    try:
        k = operator.index(value)  # type: ignore[arg-type]
    except TypeError:
        raise InvalidParameter(
            f"{name} must be an integer, got {value!r} ({type(value).__name__})"
        ) from None
    if k < minimum:
        raise InvalidParameter(f"{name} must be >= {minimum}, got {k}")
    if maximum is not None and k > maximum:
        raise InvalidParameter(f"{name} must be <= {maximum}, got {k}")
    return k


def sequence(name: str, value: object, what: str) -> list[object]:
    """``value``'s items, when it is a sequence: a list, tuple or range, or a one-dimensional
    array (not text, and not a 0-d array, which has no items: numpy raised ``TypeError``).

    Raises:
        InvalidParameter: "``name`` must be ``what``", naming the value.
    """
    vector = getattr(value, "ndim", None) == 1 and hasattr(value, "__iter__")  # numpy's
    if isinstance(value, str | bytes) or not (isinstance(value, Sequence) or vector):
        raise InvalidParameter(f"{name} must be {what}, got {value!r}")
    return list(cast(Iterable[object], value))


def nonnegative_array(name: str, value: object) -> Any:
    """``value`` as a float64 array of reals ``>= 0`` (``inf`` allowed; NaN, negatives, text and
    booleans rejected)."""
    import numpy as np

    raw = np.asarray(value)
    if raw.dtype.kind not in "iuf":
        raise InvalidParameter(f"{name} must be an array of real numbers, got {value!r}")
    x = raw.astype(np.float64)
    if np.isnan(x).any() or (x < 0.0).any():
        raise InvalidParameter(f"{name} must be >= 0 (inf allowed), got {value!r}")
    return x + 0.0


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """A JSON object's ``object_pairs_hook`` that refuses a repeated key."""
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise InvalidParameter(f"JSON repeats the key {key!r}: write each key once")
        out[key] = value
    return out


def json_unique(text: str | bytes, **options: Any) -> Any:
    """``json.loads(text)``, refusing an object that repeats a key.

    Python's ``json`` keeps a repeated key's *last* value without a word (RFC 8259 leaves it to
    the reader), so ``{"count": 1000, "count": 1}`` would read as one run where the writer may have
    meant a thousand: an under-reported privacy cost. TOML refuses repeated keys itself.

    Raises:
        InvalidParameter: a repeated key (named), or nesting too deep to read.
        json.JSONDecodeError: the text is not JSON.
    """
    try:
        return json.loads(text, object_pairs_hook=_unique_keys, **options)
    except RecursionError:  # (nesting beyond the interpreter's recursion limit)
        raise InvalidParameter("JSON nested too deeply") from None


def file_path(name: str, text: str) -> str:
    """``text`` if it can name a file here; else InvalidParameter naming ``name`` (the OS raises
    ValueError for a NUL and UnicodeEncodeError for what the file system's encoding cannot
    hold, wherever the path is first used)."""
    if "\x00" in text:
        raise InvalidParameter(f"{name} contains a NUL character: {text!r}")
    try:
        os.fsencode(text)
    except UnicodeEncodeError as err:
        raise InvalidParameter(f"{name} {text!r} cannot be a file name here: {err}") from None
    return text

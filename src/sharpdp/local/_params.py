"""Validation of the parameters shared by the client and server sides of :mod:`sharpdp.local`."""

from __future__ import annotations

from typing import Any, Final, TypeAlias

import numpy as np
import numpy.typing as npt

from sharpdp import _validate
from sharpdp.errors import InvalidParameter

__all__ = ["SCHEMES", "Scheme", "categories_of", "category_set", "epsilon_of", "k_of", "scheme_of"]

Scheme: TypeAlias = str
"""One of :data:`SCHEMES`: ``"rr"``, ``"oue"`` or ``"hadamard"``."""

#: The local randomizers, in the order :func:`sharpdp.local.choose_scheme` breaks ties (fewest
#: report bits first: ⌈log₂ k⌉, ⌈log₂ K⌉ with K ≤ 2k, then k).
SCHEMES: Final[tuple[str, ...]] = ("rr", "hadamard", "oue")

#: Most categories any scheme accepts: the server's Hadamard transform holds K ≤ 2k ≤ 2^25
#: counts (256 MiB).
MAX_CATEGORIES: Final[int] = 2**24


#: Smallest ε taken: below ~1e-154 the variances' denominator (1 − e^{−ε})² underflows to 0; at
#: 1e-100 every estimate's variance already exceeds 1e199/n (the estimates are noise).
MIN_EPSILON: Final[float] = 1e-100


def epsilon_of(value: object, name: str = "epsilon") -> float:
    """ε: a finite real ≥ :data:`MIN_EPSILON` (ε → 0 makes every estimator's variance infinite)."""
    eps = _validate.positive(name, value)
    if eps < MIN_EPSILON:
        raise InvalidParameter(
            f"{name} must be >= {MIN_EPSILON:g} (smaller ε leaves estimates of variance beyond "
            f"1e199/n, and underflows their formulas), got {value!r}"
        )
    return eps


def k_of(value: object, name: str = "categories") -> int:
    """k: an integer in [2, 2^24]."""
    k = _validate.integer(name, value, minimum=2)
    if k > MAX_CATEGORIES:
        raise InvalidParameter(f"{name} must be <= 2**24, got {k}")
    return k


def scheme_of(value: object, *, allow_auto: bool) -> Scheme:
    """A scheme name (``"auto"`` only where allowed)."""
    allowed = (("auto",) if allow_auto else ()) + SCHEMES
    if not isinstance(value, str) or value not in allowed:
        raise InvalidParameter(f"scheme must be one of {allowed}, got {value!r}")
    return value


def categories_of(values: object, k: int, name: str = "values") -> npt.NDArray[np.int64]:
    """``values`` as a 1-D int64 array of categories in [0, k) (a scalar is one value).

    Rejects floats (even integral ones: a float category is almost always a bug upstream), NaN,
    booleans, strings, ragged or multi-dimensional input, and values outside [0, k).
    """
    try:
        arr = np.asarray(values)
    except (ValueError, TypeError):  # ragged nested sequences
        raise InvalidParameter(
            f"{name} must be a 1-D array of integers, got {_short(values)}"
        ) from None
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise InvalidParameter(f"{name} must be 1-D, got shape {arr.shape}")
    if arr.size == 0:
        raise InvalidParameter(f"{name} must hold at least one value")
    integral = arr.dtype != np.bool_ and np.issubdtype(arr.dtype, np.integer)
    if arr.dtype == object:  # Python ints beyond int64 (then rejected by the range check)
        integral = all(isinstance(x, int | np.integer) and not isinstance(x, bool) for x in arr)
    if not integral:
        raise InvalidParameter(
            f"{name} must be integer categories, got dtype {arr.dtype} ({_short(values)})"
        )
    lo, hi = int(arr.min()), int(arr.max())
    if lo < 0 or hi >= k:
        bad = lo if lo < 0 else hi
        raise InvalidParameter(f"{name} must lie in [0, {k}), got {bad}")
    return arr.astype(np.int64)


def category_set(subset: object, k: int, name: str = "subset") -> npt.NDArray[np.bool_]:
    """A non-empty set of distinct categories in [0, k), as a boolean mask of length k."""
    idx = categories_of(subset, k, name)
    mask = np.zeros(k, dtype=np.bool_)
    mask[idx] = True
    if int(mask.sum()) != idx.size:
        raise InvalidParameter(f"{name} must not repeat a category, got {_short(subset)}")
    return mask


def _short(value: Any, limit: int = 80) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."

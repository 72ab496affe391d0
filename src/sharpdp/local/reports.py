"""The clients' randomized reports: what the server receives, and all it receives."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from sharpdp import _validate
from sharpdp.errors import InvalidParameter
from sharpdp.guarantees import PureDP
from sharpdp.local import _params
from sharpdp.local._schemes import hadamard_size

__all__ = ["Reports", "combine", "report_dtype"]


def report_dtype(scheme: str, k: int) -> np.dtype[Any]:
    """The storage type of one report: the smallest unsigned integer holding the largest index
    (k − 1 for ``rr``, K − 1 for ``hadamard``), and bytes of packed bits for ``oue``."""
    if scheme == "oue":
        return np.dtype(np.uint8)
    top = k - 1 if scheme == "rr" else hadamard_size(k) - 1
    return np.dtype(np.min_scalar_type(top))


@dataclass(frozen=True, slots=True, eq=False)
class Reports:
    """Randomized reports of n clients under one ε-LDP randomizer (a validated, read-only value).

    The raw values never appear here: ``data`` holds only the clients' randomized outputs.

    Attributes:
        scheme: ``"rr"``, ``"oue"`` or ``"hadamard"`` (never ``"auto"``: the chosen scheme).
        epsilon: the ε of every report (each client's report is ε-DP in its own value).
        categories: k, the number of categories.
        data: the reports, read-only. ``rr``: shape (n,), the reported categories in [0, k);
            ``oue``: shape (n, ⌈k/8⌉) uint8, each row the k report bits packed big-endian by
            :func:`numpy.packbits` (pad bits zero); ``hadamard``: shape (n,), indices in [0, K)
            with K the smallest power of two > k.
        n: the number of reports (``data.shape[0]``, checked).

    Raises:
        InvalidParameter: if any field is out of its domain or ``data`` is not a possible output.
    """

    scheme: str
    epsilon: float
    categories: int
    data: npt.NDArray[Any]
    n: int

    def __post_init__(self) -> None:
        scheme = _params.scheme_of(self.scheme, allow_auto=False)
        eps = _params.epsilon_of(self.epsilon)
        k = _params.k_of(self.categories)
        n = _validate.integer("n", self.n, minimum=1)
        data = _checked_data(scheme, k, n, self.data)
        object.__setattr__(self, "scheme", scheme)
        object.__setattr__(self, "epsilon", eps)
        object.__setattr__(self, "categories", k)
        object.__setattr__(self, "n", n)
        object.__setattr__(self, "data", data)

    @property
    def guarantee(self) -> PureDP:
        """Each client's privacy: its report is ε-DP in its own value (ε-local DP)."""
        return PureDP(self.epsilon)

    @property
    def bits_per_report(self) -> int:
        """Bits each client sends: ⌈log₂ k⌉ (rr), k (oue), log₂ K (hadamard)."""
        if self.scheme == "oue":
            return self.categories
        if self.scheme == "rr":
            return (self.categories - 1).bit_length()
        return hadamard_size(self.categories).bit_length() - 1

    def __repr__(self) -> str:
        return (
            f"Reports(scheme={self.scheme!r}, epsilon={self.epsilon!r}, "
            f"categories={self.categories}, n={self.n})"
        )


def _checked_data(scheme: str, k: int, n: int, data: object) -> npt.NDArray[Any]:
    try:
        arr = np.array(data, copy=True)
    except (TypeError, ValueError):
        raise InvalidParameter("data must be a numpy array of reports") from None
    if arr.dtype == np.bool_ or not np.issubdtype(arr.dtype, np.integer):
        raise InvalidParameter(f"data must hold integers, got dtype {arr.dtype}")
    if arr.shape[:1] != (n,):
        raise InvalidParameter(f"data must hold n={n} reports, got shape {arr.shape}")
    if scheme == "oue":
        width = (k + 7) // 8
        if arr.shape != (n, width) or arr.dtype != np.uint8:
            raise InvalidParameter(
                f"oue data must be uint8 of shape (n, ceil(k/8)) = ({n}, {width}), "
                f"got {arr.dtype} {arr.shape}"
            )
        pad = 8 * width - k
        if pad and np.any(arr[:, -1] & np.uint8((1 << pad) - 1)):
            raise InvalidParameter("oue data has bits set beyond the k categories")
    else:
        if arr.ndim != 1:
            raise InvalidParameter(f"{scheme} data must be 1-D, got shape {arr.shape}")
        top = k if scheme == "rr" else hadamard_size(k)
        if int(arr.min()) < 0 or int(arr.max()) >= top:
            raise InvalidParameter(f"{scheme} data must lie in [0, {top}), got an index outside")
        arr = arr.astype(report_dtype(scheme, k))
    arr.setflags(write=False)
    return arr


def combine(reports: Iterable[Reports]) -> Reports:
    """Concatenate batches of reports made with the same scheme, ε and k (e.g. one per client).

    Raises:
        InvalidParameter: for an empty iterable or batches that differ in scheme, ε or k.
    """
    try:
        batches = list(reports)
    except TypeError:  # (None, a number: "'NoneType' object is not iterable")
        raise InvalidParameter(
            f"reports must be a non-empty iterable of Reports, got {reports!r}"
        ) from None
    if not batches or not all(isinstance(b, Reports) for b in batches):
        raise InvalidParameter("reports must be a non-empty iterable of Reports")
    first = batches[0]
    for b in batches[1:]:
        if (b.scheme, b.epsilon, b.categories) != (first.scheme, first.epsilon, first.categories):
            raise InvalidParameter(
                f"cannot combine reports of (scheme, epsilon, categories) = "
                f"{(first.scheme, first.epsilon, first.categories)} and "
                f"{(b.scheme, b.epsilon, b.categories)}"
            )
    data = np.concatenate([b.data for b in batches], axis=0)
    return Reports(first.scheme, first.epsilon, first.categories, data, int(data.shape[0]))

"""Sums and means of a clamped numeric column, in total or per public key.

Values are clamped per row to [g·L_g, g·U_g] ⊆ [L, U] and rounded to a grid of step g
(``floor(x/g + ½)`` in the engine), so every summed value is an integer v ∈ [L_g, U_g],
L_g = ⌈L/g⌉, U_g = ⌊U/g⌋ (rounded inwards, so that a clamped value never leaves [L, U]); the
released sum is g·(Σv + Z) with integer noise Z (exact samplers; no floating-point noise). Rows
whose value is NULL (or NaN) are dropped first (a row-wise filter, which preserves the add/remove-one-person
relation). Under add/remove of a person with ≤ m rows per key (and ≤ κ keys):

* sum: Δ∞ = m·max(|L_g|, |U_g|) grid units per key; or, clamping each person's total per key
  instead of each row (``clamp="person"``: every row counts, rounded to the grid, and the person's
  total is clamped to [L_g, U_g]), Δ∞ = max(|L_g|, |U_g|) whatever the number of rows;
* mean: the centred sum Σ(2v − (L_g + U_g)) has Δ∞ = m·(U_g − L_g) (doubled grid units, to stay
  integral), the count Δ∞ = m; mean = c + g·Ŝ/(2·max(1, N̂)), c = g(L_g + U_g)/2, clipped to
  [g·L_g, g·U_g] (post-processing). The privacy is split evenly between the two: PureDP(ε/2),
  ZCDP(ρ/2) or ApproxDP(ε/2, δ/2) each (valid by composition; the accountant charges their
  composition, which may be sharper). This is the centred estimator of Google's BoundedMean,
  PipelineDP and Tumult.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd

from sharpdp.data import _bounding
from sharpdp.data._noise import IntegerNoise
from sharpdp.data.counts import align, fetch_groups
from sharpdp.data.query import Query
from sharpdp.data.release import AdditiveRelease, MeanRelease

__all__ = ["MeanQuery", "SumQuery"]


@dataclass(frozen=True, kw_only=True)
class _ValueQuery(Query):
    """Shared fields of sums and means.

    Attributes:
        column: the summed column.
        keys: the by-columns (empty for a total).
        public: the public by-keys, or ``None`` for a total.
        grid: (g, L_g, U_g): the grid step and the rounded bounds in grid units.
    """

    column: str
    keys: tuple[str, ...]
    public: tuple[tuple[Any, ...], ...] | None
    grid: tuple[float, int, int]

    def _pairs(self) -> Any:
        step, lo_g, hi_g = self.grid
        table = _bounding.valued_rows(
            self._rows(*self.keys, self.column), self.column, self.keys, self.public
        )
        if self.bounding.clamp_per == "person":
            return _bounding.per_person_total(
                table,
                self.privacy_unit,
                self.keys,
                table[self.column],
                grid=self.grid,
                max_groups=self.bounding.max_groups,
                salt=self.bounding.salt,
            )
        # clamped to the grid's own bounds (inside the bounds): x/step then lies in [L_g, U_g]
        value = _bounding.clamped_grid(table[self.column], lo_g * step, hi_g * step, step)
        return _bounding.per_person_key(
            table, self.privacy_unit, self.keys, value=value, **self._bounding_kwargs()
        )


@dataclass(frozen=True, kw_only=True)
class SumQuery(_ValueQuery):
    """A clamped sum (per key with ``by``). Built by ``Session.sum``.

    Attributes:
        noise: the noise law of each released sum (in grid units).
    """

    noise: IntegerNoise

    def _compute(self) -> pd.DataFrame:
        groups = fetch_groups(self, self.keys, self._pairs(), True)
        return align(groups, self.keys, self.public, ["total"])

    def _finish(self, data: pd.DataFrame, rng: np.random.Generator) -> AdditiveRelease:
        step = self.grid[0]
        frame = data.copy()
        noisy = self.noise.release(frame.pop("total").to_numpy(np.int64), rng=rng)
        frame["sum"] = noisy if step == 1.0 else noisy.astype(np.float64) * step
        return AdditiveRelease(
            query=self.description,
            keys=self.keys,
            frame=frame,
            noise={"sum": self.noise},
            value="sum",
            step=step,
        )


@dataclass(frozen=True, kw_only=True)
class MeanQuery(_ValueQuery):
    """A clamped mean (per key with ``by``): centred noisy sum over noisy count.

    Built by ``Session.mean``. See :class:`~sharpdp.data.release.MeanRelease` for its interval.

    Attributes:
        sum_noise: the noise of the centred sum (doubled grid units).
        count_noise: the noise of the count.
    """

    sum_noise: IntegerNoise
    count_noise: IntegerNoise

    def _compute(self) -> pd.DataFrame:
        groups = fetch_groups(self, self.keys, self._pairs(), True)
        return align(groups, self.keys, self.public, ["total", "count"])

    def _finish(self, data: pd.DataFrame, rng: np.random.Generator) -> MeanRelease:
        step, lo_g, hi_g = self.grid
        frame = data.copy()
        n = frame.pop("count").to_numpy(np.int64)
        centred = 2 * frame.pop("total").to_numpy(np.int64) - (lo_g + hi_g) * n  # Σ(2v − L − U)
        sums = self.sum_noise.release(centred, rng=rng)
        counts = self.count_noise.release(n, rng=rng)
        centre = step * (lo_g + hi_g) / 2.0
        half = step / 2.0
        lower, upper = step * lo_g, step * hi_g
        means = centre + half * sums.astype(np.float64) / np.maximum(counts, 1)
        frame["mean"] = np.clip(means, lower, upper)
        return MeanRelease(
            query=self.description,
            keys=self.keys,
            frame=frame,
            noise={"sum": self.sum_noise, "count": self.count_noise},
            bounds=(lower, upper),
            centre=centre,
            half_step=half,
            sums=np.asarray(sums, dtype=np.int64),
            counts=np.asarray(counts, dtype=np.int64),
        )

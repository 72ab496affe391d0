"""The session: one table, one privacy unit, one budget; queries are built here.

Example:
    >>> import pandas as pd
    >>> import sharpdp as sdp
    >>> t = pd.DataFrame({"who": [1, 1, 2, 3], "fruit": ["fig", "kiwi", "fig", "fig"]})
    >>> s = sdp.data.Session(t, privacy_unit="who", budget=sdp.PureDP(1.0), seed=0)
    >>> q = s.count_by("fruit", keys=["fig", "kiwi"], privacy=sdp.PureDP(0.5))
    >>> q.explain().statistics[0].mechanism.scale   # t = Δ/ε = 1/0.5
    2.0
    >>> r = q.run(rng=0)
    >>> list(r.to_pandas(level=0.9).columns)
    ['fruit', 'count', 'lower', 'upper']
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
import math
import os
import secrets
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ParamSpec, TypeVar, cast

import numpy as np
import pandas as pd

import sharpdp as sdp
from sharpdp import _validate
from sharpdp._format import upper
from sharpdp.accounting.ledger import Ledger
from sharpdp.data import _bounding, _calibrate, _engine, _noise, _partition, _values
from sharpdp.data.answers import WorkloadQuery, WorkloadRelease, choose_noise, resolve_domains
from sharpdp.data.counts import CountQuery
from sharpdp.data.mwem import (
    AdaptivePlan,
    MWEMPlan,
    MWEMQuery,
    Synthetic,
    plan_adaptive,
    plan_mwem,
)
from sharpdp.data.quantiles import QuantileQuery
from sharpdp.data.query import Bounding, Statistic
from sharpdp.data.selection import LimitDomQuery, SelectBestQuery, TopKQuery
from sharpdp.data.sums import MeanQuery, SumQuery
from sharpdp.data.workloads import (
    MAX_ANSWERS,
    MAX_DOMAIN,
    MAX_MATRIX,
    Bins,
    Domain,
    Predicates,
    Workload,
    is_missing,
)
from sharpdp.errors import InvalidParameter
from sharpdp.mechanisms._samplers import RNGLike
from sharpdp.mechanisms.quantile import checked_support

__all__ = ["Session"]

_TARGETS = (sdp.PureDP, sdp.ApproxDP, sdp.ZCDP, sdp.ApproxZCDP)
_GRID_BITS = 10  # sums and means: (U − L)/2^10 rounded down to a power of two (integer columns: 1)
_INTEGER_GRID_BITS = 8  # quantiles: step 1 for integer bounds ≥ 2^8 apart (or an integer column)
_QUANTILE_CELLS = 1024  # default quantile grid unless integer bounds give step 1 (≤ 2^20 cells)
_MAX_QUANTILE_CELLS = 2**40
#: The most MWEM rounds one may ask for (10^4 rounds over a small domain take about 90 s here).
MAX_ROUNDS = 10_000
#: The least ε (or ρ) of a query's target: below it the noise is beyond any use (and its scale
#: would overflow double precision near the subnormals).
MIN_PRIVACY = 1e-100
#: Sums and means: bounds at most this many grid steps from 0, so that a key's total over up to
#: 2^32 rows (or persons) stays inside int64 on every engine (see ``_bounding.ROW_LIMIT``).
GRID_LIMIT = 2**31
#: Sums and means: every released value and interval end stays below this magnitude (2^1000, with
#: room to 2^1024 for the arithmetic that forms them); bounds or targets that could pass it are
#: refused before anything runs, as a condition on the parameters alone (an overflow found only
#: while running would say something about the data).
RELEASE_LIMIT = 2.0**1000
#: The share of a workload's ε (or ρ) spent finding undeclared marginal domains.
DISCOVERY_SHARE = 0.1


# --------------------------------------------------------------------------------------------------
# Parameter checks (each names the parameter; nothing is spent when they raise)
# --------------------------------------------------------------------------------------------------


def _columns(name: str, value: object) -> tuple[str, ...]:
    if isinstance(value, str):
        return (value,)
    if isinstance(value, Sequence) and value and all(isinstance(c, str) for c in value):
        cols = tuple(value)
        if len(set(cols)) != len(cols):
            raise InvalidParameter(f"{name} must not repeat a column, got {list(cols)}")
        return cols
    raise InvalidParameter(
        f"{name} must be a column name or a non-empty list of names, got {value!r}"
    )


#: The largest count the engines compare with their int64 ranks (caps, k, k̄).
_MAX_RANK = 2**63 - 1


def _cap(name: str, value: object) -> int:
    """A contribution cap: an integer in [1, 2⁶³ − 1] (the engines compare it with int64 ranks;
    2⁶³ failed in the engine after ``explain()`` had priced it)."""
    return _validate.integer(name, value, minimum=1, maximum=_MAX_RANK)


def _privacy(value: object) -> sdp.Guarantee:
    if not isinstance(value, _TARGETS):
        raise InvalidParameter(
            f"privacy must be sdp.PureDP, sdp.ApproxDP, sdp.ZCDP or sdp.ApproxZCDP, got {value!r}"
        )
    # an infinite ε or ρ is a valid statement (no privacy) but calls for no noise at all
    if any(not math.isfinite(getattr(value, f.name)) for f in dataclasses.fields(value)):
        raise InvalidParameter(
            f"privacy must have finite parameters to calibrate noise, got {value!r}"
        )
    return value


def _public(name: str, value: object, columns: tuple[str, ...]) -> tuple[tuple[Any, ...], ...]:
    """Public keys: a list of values (one column), of tuples, or a DataFrame with the columns."""
    if isinstance(value, np.ndarray | pd.Series | pd.Index | pd.api.extensions.ExtensionArray):
        value = value.tolist()  # e.g. df["col"].unique(), an extension array for str/category
    if isinstance(value, pd.DataFrame):
        missing = [c for c in columns if c not in value.columns]
        if missing:
            raise InvalidParameter(f"{name}: the key table has no column {missing[0]!r}")
        rows = [tuple(r) for r in value[list(columns)].itertuples(index=False, name=None)]
    elif isinstance(value, Sequence) and not isinstance(value, str | bytes):
        if len(columns) == 1:
            # a row may be a tuple or a list (``df[["k"]].values.tolist()``): no key is a list
            rows = [tuple(v) if isinstance(v, tuple | list) else (v,) for v in value]
        else:
            # a string is one value, not a key of characters
            rows = [
                tuple(v) if isinstance(v, Sequence) and not isinstance(v, str | bytes) else (v,)
                for v in value
            ]
    else:
        raise InvalidParameter(f"{name} must be a list of keys or a DataFrame, got {value!r}")
    if not rows:
        raise InvalidParameter(f"{name} must not be empty")
    for r in rows:
        if len(r) != len(columns):
            raise InvalidParameter(
                f"{name}: each key must have {len(columns)} value(s) ({list(columns)}), got {r!r}"
            )
        for v in r:
            try:
                hash(v)
            except TypeError:  # a list, a bytearray, a dict...: no column's value
                raise InvalidParameter(
                    f"{name}: a key's values must be single values (numbers, text, dates...), "
                    f"got {v!r} ({type(v).__name__}) in {r!r}"
                ) from None
        if any(is_missing(v) for v in r):
            raise InvalidParameter(f"{name}: keys must not be NULL/NaN, got {r!r}")
    if len(set(rows)) != len(rows):
        raise InvalidParameter(f"{name} must not repeat a key")
    return tuple(rows)


#: Column names a query cannot read: those of its results (values and intervals, ranks, workload
#: query names) and of the bounded tables built in the engine.
RESERVED_COLUMNS = frozenset(
    {
        "count",
        "sum",
        "mean",
        "quantile",
        "rank",
        "lower",
        "upper",
        "query",
        "rows",
        "total",
        "persons",
    }
)


def _missing(column: Any) -> Any:
    """Whether a row has no person: NULL, or NaN in a floating column (NaN is not NULL in DuckDB,
    Spark or Arrow, and all NaN rows would be one "person")."""
    missing = column.isnull()
    if column.type().is_floating():
        missing = missing | column.isnan()
    return missing


def _bounds(value: object) -> tuple[float, float]:
    # a tuple or list, or a 1-D array or Series of two numbers (read by position)
    if isinstance(value, np.ndarray | pd.Series) and value.ndim == 1:
        value = list(value.tolist())
    if not isinstance(value, Sequence) or isinstance(value, str | bytes) or len(value) != 2:
        raise InvalidParameter(f"bounds must be a pair (lower, upper), got {value!r}")
    lo = _validate.real("bounds[0]", value[0])
    hi = _validate.real("bounds[1]", value[1])
    if not lo < hi:
        raise InvalidParameter(f"bounds must satisfy lower < upper, got {value!r}")
    return lo, hi


def _finest_step(lo: float, hi: float) -> float:
    """The least power of two that puts both bounds within ``GRID_LIMIT`` steps of 0."""
    ratio = max(abs(lo), abs(hi)) / GRID_LIMIT
    return 2.0 ** math.ceil(math.log2(ratio)) if ratio > 0.0 else 0.0


def _representable(
    what: str, values: _Values, per_unit: int, noise: _noise.IntegerNoise, unit: float
) -> None:
    """Refuse a sum or mean whose released value could overflow double precision.

    A key's total is at most 2^32 rows (or persons) of at most ``per_unit`` grid units each (the
    int64 design of :data:`GRID_LIMIT`), plus noise below :func:`_noise.magnitude` except with
    probability 2e^{−800}; in value units the product with ``unit`` must stay below
    :data:`RELEASE_LIMIT`. A condition on the parameters alone: nothing about the data.
    """
    largest = (2.0**32 * per_unit + _noise.magnitude(noise)) * unit
    if not largest <= RELEASE_LIMIT:
        raise InvalidParameter(
            f"{what}({values.column!r}, bounds={values.clamp}): these bounds with this privacy "
            "target could release values beyond double precision (about 1e301); use narrower "
            "bounds, or rescale the column"
        )


def _halve(privacy: sdp.Guarantee) -> sdp.Guarantee:
    """Half of a target, valid under composition of two (for a mean's sum and count)."""
    if isinstance(privacy, sdp.PureDP):
        return sdp.PureDP(privacy.epsilon_ / 2.0)
    if isinstance(privacy, sdp.ApproxDP):
        return sdp.ApproxDP(privacy.epsilon_ / 2.0, privacy.delta_ / 2.0)
    if isinstance(privacy, sdp.ZCDP):
        return sdp.ZCDP(privacy.rho / 2.0)
    assert isinstance(privacy, sdp.ApproxZCDP)
    return sdp.ZCDP(privacy.rho / 2.0)


#: With unknown keys and a target without δ, the fraction of the budget's δ the key selection takes.
SELECTION_DELTA_FRACTION = 0.1

_ValueQueryT = TypeVar("_ValueQueryT", SumQuery, MeanQuery)


@dataclass(frozen=True)
class _Values:
    """The checked arguments of a sum or a mean (see ``Session._value_setup``)."""

    column: str
    grid: tuple[float, int, int]
    clamp: tuple[float, float]
    cols: tuple[str, ...]
    public: tuple[tuple[Any, ...], ...] | None
    max_rows: int
    max_groups: int | None  # None for a total
    copies: int


_P = ParamSpec("_P")
_Q = TypeVar("_Q")


def _builds_query(method: Callable[_P, _Q]) -> Callable[_P, _Q]:
    """Make a session method that builds a query take its salts all or none: one that raises
    (bad input, a refused target...) gives back the salts it or its sub-queries took, so the
    queries built after it keep the rows they would have kept without it. Building holds the
    session's lock, so salts are taken and given back in order."""

    @functools.wraps(method)
    def build(*args: _P.args, **kwargs: _P.kwargs) -> _Q:
        session = cast("Session", args[0])
        with session._building:
            taken = session._salts_taken
            try:
                return method(*args, **kwargs)
            except BaseException:
                session._salts_taken = taken
                raise

    return build


class Session:
    """Private queries over one table, protecting each person (``privacy_unit``) under a budget.

    Neighbouring relation: add or remove all rows of one person. Every query declares contribution
    bounds (``max_rows`` per key, ``max_groups`` keys per person), enforced in the engine by a
    portable seeded hash (:mod:`sharpdp.data._bounding`); its noise is calibrated to the
    ``privacy=`` target with the sensitivities the bounds imply, and its cost is spent through a
    durable :class:`sharpdp.Accountant` before anything is released.

    **Row-level privacy** (``privacy_unit=None``): each row is one person, so neighbouring tables
    differ in one row. Every person then contributes exactly one row and one key, so every query's
    caps are 1 whatever is declared (``explain()`` shows them), and no bounding runs in the
    engine: a count is the engine's plain ``GROUP BY``. Use it only when no person has several
    rows; otherwise name the column that identifies persons.

    **NULL privacy units** are refused by default (``InvalidParameter`` naming ``privacy_unit``):
    a NULL row belongs to no identifiable person, and treating all NULLs as one person would be
    *unsafe* (a person's NULL rows would change a second "person", doubling the sensitivity).
    ``null_units="drop"`` removes them in the engine instead, which is safe: a row-wise filter maps
    neighbouring tables (one person's rows added) to neighbouring tables; those rows are then never
    used, and how many there were is not reported (it is not a private statistic).

    Args:
        table: a ``.csv``/``.parquet`` path, a pandas/Polars DataFrame, a PyArrow table (run on an
            embedded in-memory DuckDB), or an Ibis table (run on its own backend, e.g. PySpark).
        privacy_unit: the column identifying a person, or ``None``: each row is a person
            (row-level privacy, see above).
        budget: ``sdp.PureDP``, ``sdp.ApproxDP`` or ``sdp.ZCDP`` (enforced by the accountant); it
            lives in the ledger: the account's first session records it, later ones must pass
            the same budget (else ``sdp.LedgerError``) or ``None`` to use the recorded one.
        ledger: ``None`` (in memory), a ledger file path (or ``postgresql://`` URL) shared across
            processes, or an open :class:`~sharpdp.accounting.ledger.Ledger` (shared, not closed).
        analyst: the account charged.
        engine: an Ibis backend to load non-Ibis tables into (default: a connection of its own to
            the process's in-memory DuckDB database).
        null_units: ``"refuse"`` (default) or ``"drop"`` (see above).
        seed: seeds the per-query salts of contribution bounding (default 0; ``None`` draws 128
            random bits). The same seed and the same sequence of built queries keep the same rows
            on every engine (a query refused while it is built takes no salt), so with the same
            ``run(rng=...)`` every engine releases the same values. A public salt costs no
            privacy: for any fixed salt, the rows kept for a person depend only on that person's
            rows, so neighbouring tables stay neighbouring.
        period: the budget period label of the account.
        max_groups: the default κ (keys per person) of queries that do not declare one.
        max_rows: the default m (rows per person per key) of queries that do not declare one.
        schema: a CSV's column types, declared (Ibis type names:
            ``{"dep_delay": "int64", "time_hour": "timestamp"}``). Every column is then read as
            text and each declared one converted by a safe cast: a value that does not parse
            becomes NULL (an integer only from an integer's text, alike on every engine), a
            row-wise map, so no column's type depends on the data (without it, the engine infers
            types from the values, and one person's odd value can turn a number column into
            text). Undeclared columns stay text. Declarable: integers, floats, decimals
            (precision ≤ 38), strings, booleans, dates, times and timestamps. Only for CSV
            paths: other tables carry their own types.

    The set-up checks (the unit column exists, the table is not empty, NULL units) read the
    table and are not private: they are for the data holder who opens the session. A CSV is
    loaded into the engine's memory when the session opens (on DuckDB), so a value that does not
    parse fails there, never in an analyst's query.

    Raises:
        InvalidParameter: an unknown ``privacy_unit`` column, NULL units (with ``"refuse"``), an
            empty table, a CSV that cannot be read, a bad ``schema``, or a bad
            budget/ledger/analyst.
    """

    def __init__(
        self,
        table: object,
        privacy_unit: str | None,
        budget: sdp.Guarantee | None,
        ledger: str | os.PathLike[str] | Ledger | None = None,
        analyst: str = "default",
        engine: Any = None,
        *,
        null_units: str = "refuse",
        seed: int | None = 0,
        period: str = "all",
        max_groups: int = 1,
        max_rows: int = 1,
        schema: Mapping[str, Any] | None = None,
    ) -> None:
        self._max_groups = _cap("max_groups", max_groups)
        self._max_rows = _cap("max_rows", max_rows)
        if null_units not in ("refuse", "drop"):
            raise InvalidParameter(f"null_units must be 'refuse' or 'drop', got {null_units!r}")
        if seed is not None:
            seed = _validate.integer("seed", seed, minimum=0)
        source = _engine.open_table(table, engine, schema)
        if privacy_unit is not None:
            _engine.check_columns(source.table, "privacy_unit", (privacy_unit,))
            _engine.check_scalar_columns(source.table, "privacy_unit", (privacy_unit,))
        # (engines match column names regardless of case: `_SDP_V` would stand for `_sdp_v`)
        taken = [c for c in source.table.columns if c.lower().startswith(_bounding.RESERVED_PREFIX)]
        if taken:
            raise InvalidParameter(
                f"table: column names starting with {_bounding.RESERVED_PREFIX!r} are reserved "
                f"for sharpdp's bounding, got {taken[0]!r}: rename it"
            )
        t = source.table
        unit_missing = None if privacy_unit is None else _missing(t[privacy_unit])
        unit_nulls = 0 if unit_missing is None else unit_missing.sum()
        stats = _engine.execute(source.backend, t.aggregate(rows=t.count(), nulls=unit_nulls))
        rows = int(stats["rows"].iloc[0])
        nulls = stats["nulls"].iloc[0]
        nulls = 0 if pd.isna(nulls) else int(nulls)
        if rows == 0:
            raise InvalidParameter("table is empty (no rows to query)")
        if nulls and null_units == "refuse":
            raise InvalidParameter(
                f"privacy_unit column {privacy_unit!r} has NULL (or NaN) values; rows without a "
                "person cannot be protected as anyone's: clean them, or pass null_units='drop'"
            )
        if nulls == rows:  # as an empty table: nothing to query once they are dropped
            raise InvalidParameter(
                f"table has no rows to query: all {rows} rows have a NULL privacy unit "
                f"({privacy_unit!r})"
            )
        if nulls:
            assert unit_missing is not None
            t = t.filter(~unit_missing)
        # values stay as stored; each query canonicalises the columns it reads (Source.columns)
        source = _engine.Source(t, source.backend, source.engine, rows=rows - nulls)
        self._source = source
        self._unit = privacy_unit
        self._null_units = null_units
        self._accountant = sdp.Accountant(
            budget=budget, ledger=ledger, analyst=analyst, period=period
        )
        self._seed = secrets.randbits(128) if seed is None else seed
        self._salts_taken = 0
        self._building = threading.RLock()

    # -- properties -------------------------------------------------------------------------------
    @property
    def accountant(self) -> sdp.Accountant:
        """The accountant that enforces the budget."""
        return self._accountant

    @property
    def privacy_unit(self) -> str | None:
        """The column identifying a person, or ``None`` when each row is a person."""
        return self._unit

    @property
    def engine(self) -> str:
        """The engine's name (``"duckdb"``, ``"pyspark"``...)."""
        return self._source.engine

    @property
    def table(self) -> Any:
        """The Ibis table queried (NULL units already dropped with ``null_units="drop"``), as
        queries read its values: −0.0 as 0.0 and NaN as NULL in floating-point columns, the time
        24:00:00 as NULL (see :func:`sharpdp.data._engine.canonical_values`)."""
        return _engine.canonical_values(self._source.table)

    def __repr__(self) -> str:
        return (
            f"Session(engine={self.engine!r}, privacy_unit={self._unit!r}, "
            f"budget={self._accountant.budget!r}, analyst={self._accountant.analyst!r})"
        )

    # -- helpers ----------------------------------------------------------------------------------
    def _salt(self) -> str:
        n = self._salts_taken
        self._salts_taken += 1
        return hashlib.sha256(f"sharpdp-bounding:{self._seed}:{n}".encode()).hexdigest()[:32]

    def _common(self) -> dict[str, Any]:
        return {"source": self._source, "accountant": self._accountant, "privacy_unit": self._unit}

    def _target(self, privacy: object) -> sdp.Guarantee:
        """The checked privacy target of a query; zCDP targets are refused on a pure-DP budget,
        which can never pay for them (the discrete Gaussian they call for has no finite pure ε)."""
        target = _privacy(privacy)
        name, value = (
            ("rho", target.rho)
            if isinstance(target, sdp.ZCDP | sdp.ApproxZCDP)
            else ("epsilon", cast(Any, target).epsilon_)
        )
        if not value >= MIN_PRIVACY:  # the noise would be over 1e100 times the sensitivity
            raise InvalidParameter(
                f"privacy must have {name} ≥ {MIN_PRIVACY:g} (> 0), got {target!r}"
            )
        if isinstance(self._accountant.budget, sdp.PureDP) and isinstance(
            target, sdp.ZCDP | sdp.ApproxZCDP
        ):
            raise InvalidParameter(
                f"privacy {target!r}: the budget {self._accountant.budget!r} is pure DP and "
                "cannot pay for a zCDP target (its Gaussian noise is not pure DP); pass "
                "privacy=sdp.PureDP(epsilon)"
            )
        return target

    def _with_selection_delta(self, target: sdp.Guarantee) -> sdp.Guarantee:
        """The target of a query over unknown keys: releasing a key that only one person holds
        needs δ > 0, so a ``PureDP(ε)`` (``ZCDP(ρ)``) target becomes ``ApproxDP(ε, δ_s)``
        (``ApproxZCDP(ρ, δ_s)``) with δ_s = :data:`SELECTION_DELTA_FRACTION` of the budget's δ;
        ``explain()`` shows the resulting target. A budget without δ cannot pay for it. A target
        with δ = 0 (``ApproxDP(ε, 0)``) is its pure form, and is treated as such."""
        if isinstance(target, sdp.ApproxDP | sdp.ApproxZCDP):
            if target.delta_ > 0.0:
                return target
            if isinstance(target, sdp.ApproxDP):
                target = sdp.PureDP(target.epsilon_)
            else:
                target = sdp.ZCDP(target.rho, target.xi)
        budget_delta = getattr(self._accountant.budget, "delta_", 0.0)
        if budget_delta <= 0.0:
            raise InvalidParameter(
                f"privacy: unknown keys (keys=None) need δ > 0, which neither {target!r} nor the "
                f"budget {self._accountant.budget!r} has; pass public keys= instead"
            )
        delta = budget_delta * SELECTION_DELTA_FRACTION
        if isinstance(target, sdp.PureDP):
            return sdp.ApproxDP(target.epsilon_, delta)
        assert isinstance(target, sdp.ZCDP)
        return sdp.ApproxZCDP(target.rho, delta, target.xi)

    def _check(self, parameter: str, columns: tuple[str, ...]) -> None:
        _engine.check_columns(self._source.table, parameter, columns)
        _engine.check_scalar_columns(self._source.table, parameter, columns)
        if self._unit is not None and self._unit in columns:
            raise InvalidParameter(f"{parameter} must not be the privacy unit {self._unit!r}")
        schema = self._source.table.schema()
        for c in columns:
            if schema[c].is_interval():  # (the engines' intervals have no pandas form to release)
                raise InvalidParameter(
                    f"{parameter}: column {c!r} holds durations ({schema[c]}), which cannot be "
                    "released as keys: convert them to a number of seconds (or days) first"
                )
            # DuckDB and Spark match names regardless of case: a key `ROWS` read in the place
            # of the bounding's `rows` released key value × persons, past the sensitivity
            if c.lower() in RESERVED_COLUMNS:
                raise InvalidParameter(
                    f"{parameter}: the column name {c!r} is one that sharpdp's results or its "
                    f"bounding use, in any case ({', '.join(sorted(RESERVED_COLUMNS))}): rename "
                    "the column to query it"
                )

    def _numeric(self, column: str, purpose: str = "to sum") -> bool:
        """Check ``column`` is numeric (not boolean); return whether it is an integer column."""
        self._check("column", (column,))
        with _engine.quiet():
            dtype = self._source.table.schema()[column]
        if not dtype.is_numeric() or dtype.is_boolean():
            raise InvalidParameter(f"column {column!r} must be numeric {purpose}, it is {dtype}")
        return bool(dtype.is_integer())

    def _grid(
        self, integer: bool, lo: float, hi: float, granularity: float | None
    ) -> tuple[float, int, int]:
        if not math.isfinite(hi - lo):
            raise InvalidParameter(
                f"bounds ({lo!r}, {hi!r}) are too far apart: U − L overflows double precision"
            )
        if granularity is None:
            if integer and lo.is_integer() and hi.is_integer():
                step = 1.0  # integer values on an integer grid: no rounding at all
            else:
                width = (hi - lo) / 2.0**_GRID_BITS
                step = 2.0 ** math.floor(math.log2(width)) if width > 0.0 else 0.0
            # bounds far from 0 need a coarser grid: at most GRID_LIMIT steps from 0 to either bound
            step = max(step, _finest_step(lo, hi))
            if not step > 0.0:  # bounds a few subnormals apart: no power-of-two grid inside them
                raise InvalidParameter(f"bounds ({lo!r}, {hi!r}) are too close together for a grid")
        else:
            step = _validate.positive("granularity", granularity)
        # rounded inwards, so that clamped values (and a mean) never leave the bounds
        lo_q, hi_q = lo / step, hi / step
        if not (math.isfinite(lo_q) and math.isfinite(hi_q)):  # (a subnormal step: 1/1e-320)
            raise InvalidParameter(
                f"granularity {step!r} is too fine for the bounds ({lo}, {hi}): pass "
                f"granularity >= {_finest_step(lo, hi)!r}"
            )
        lo_g = math.ceil(lo_q)
        hi_g = math.floor(hi_q)
        if hi_g <= lo_g:
            raise InvalidParameter(f"granularity {step!r} is coarser than the bounds ({lo}, {hi})")
        if max(abs(lo_g), abs(hi_g)) > GRID_LIMIT:
            raise InvalidParameter(
                f"granularity {step!r} is too fine for the bounds ({lo}, {hi}): they lie over 2^31 "
                f"steps from 0; pass granularity >= {_finest_step(lo, hi)!r}"
            )
        return step, lo_g, hi_g

    def _caps(self, max_rows: object, max_groups: object) -> tuple[int, int]:
        """The query's caps, the session's defaults where not given; (1, 1) with row-level
        privacy (a person is one row: one row, one key), once the given ones are validated."""
        caps = (
            self._max_rows if max_rows is None else _cap("max_rows", max_rows),
            self._max_groups if max_groups is None else _cap("max_groups", max_groups),
        )
        return (1, 1) if self._unit is None else caps

    def _public(
        self, name: str, value: object, columns: tuple[str, ...]
    ) -> tuple[tuple[Any, ...], ...]:
        """:func:`_public` keys, each value checked against its column's type and converted to the
        value the engine returns for it (an engine would fail on a mismatch only while running,
        after the spend, and pandas would match nothing: see :mod:`sharpdp.data._values`)."""
        return _values.canonical(self._source.table, name, columns, _public(name, value, columns))

    def _by(
        self,
        by: str | Sequence[str] | None,
        keys: object,
        *,
        name: str = "keys",
        column: str | None = None,
        required: str | None = None,
    ) -> tuple[tuple[str, ...], tuple[tuple[Any, ...], ...] | None]:
        """The by-columns and their public keys (parameter ``name``): ``((), None)`` without ``by``.

        ``column``, if given, must not be a by-column. With ``by``, the keys are optional unless
        ``required`` is given: then it is the message raised when they are missing.
        """
        if by is None:
            if keys is not None:
                raise InvalidParameter(f"{name} is only used with by=")
            return (), None
        cols = _columns("by", by)
        self._check("by", cols)
        if column is not None and column in cols:
            raise InvalidParameter(f"by must not contain column {column!r}")
        if keys is None:
            if required is not None:
                raise InvalidParameter(required)
            return cols, None
        return cols, self._public(name, keys, cols)

    # -- counts -----------------------------------------------------------------------------------
    @_builds_query
    def count(self, *, privacy: sdp.Guarantee, max_rows: int | None = None) -> CountQuery:
        """The number of rows, each person contributing at most ``max_rows``.

        Args:
            privacy: the target (``PureDP``/``ApproxDP``/``ZCDP``/``ApproxZCDP``).
            max_rows: rows per person kept (Δ = ``max_rows``) (default: the session's).

        Returns:
            The :class:`~sharpdp.data.counts.CountQuery` (run it to release).
        """
        target = self._target(privacy)
        m, _ = self._caps(max_rows, None)
        plan = _noise.calibrate_integer_noise(target, m, 1)
        stat = Statistic("count", plan.mechanism, 1, float(m), plan.route)
        return CountQuery(
            description=f"count() with privacy {target!r}",
            bounding=Bounding(m, None, self._salt()),
            statistics=(stat,),
            keys=(),
            public=None,
            noise=plan.mechanism,
            **self._common(),
        )

    @_builds_query
    def count_by(
        self,
        columns: str | Sequence[str],
        keys: object = None,
        *,
        privacy: sdp.Guarantee,
        max_groups: int | None = None,
        max_rows: int | None = None,
    ) -> CountQuery:
        """Row counts per key of ``columns``: over public ``keys``, or over keys found privately.

        With ``keys`` (a list of values, of tuples for several columns, or a DataFrame) every key is
        released, zeros included; rows of other keys are dropped before bounding. Without, a key
        present in the bounded data is released iff its noisy count is ≥ τ, the least threshold
        whose δ for new keys fits the δ of ``privacy`` (see :mod:`sharpdp.data._partition`): the
        noise is then calibrated to the pure part (``ApproxDP(ε, δ)`` ⇒ discrete Laplace with
        κ·m/t = ε; ``ApproxZCDP(ρ, δ)`` ⇒ discrete Gaussian with κm²/(2σ²) = ρ) and
        ``ApproxDP(0, δ_new)`` is charged beside it.

        Args:
            columns: the key column(s).
            keys: the public keys, or ``None`` for unknown keys.
            privacy: the target of the whole release.
            max_groups: κ, keys per person kept (default: the session's).
            max_rows: m, rows per person per key kept (default: the session's).

        Returns:
            The :class:`~sharpdp.data.counts.CountQuery`.

        Raises:
            InvalidParameter: unknown columns, bad keys or caps, or unknown keys with a target or a
                budget that has no δ.
        """
        cols = _columns("columns", columns)
        self._check("columns", cols)
        target = self._target(privacy)
        m, kappa = self._caps(max_rows, max_groups)
        salt = self._salt()
        bounding = Bounding(m, kappa, salt)
        what = f"count_by({list(cols)}, keys={'public' if keys is not None else 'unknown'})"
        if keys is not None:
            public = self._public("keys", keys, cols)
            copies = min(kappa, len(public))
            plan = _noise.calibrate_integer_noise(target, m, copies)
            stat = Statistic("count", plan.mechanism, copies, float(m), plan.route)
            return CountQuery(
                description=f"{what} with privacy {target!r}",
                bounding=bounding,
                statistics=(stat,),
                keys=cols,
                public=public,
                noise=plan.mechanism,
                **self._common(),
            )
        target = self._with_selection_delta(target)
        if isinstance(target, sdp.ApproxDP):
            pure: sdp.Guarantee = sdp.PureDP(target.epsilon_)
            delta = target.delta_
        elif isinstance(target, sdp.ApproxZCDP):
            pure, delta = sdp.ZCDP(target.rho, target.xi), target.delta_
        else:
            raise InvalidParameter(
                f"privacy: unknown keys (keys=None) need a target with delta > 0 "
                f"(sdp.ApproxDP or sdp.ApproxZCDP), got {target!r}; or pass public keys="
            )
        if delta <= 0.0:
            raise InvalidParameter(f"privacy: unknown keys need delta > 0, got {target!r}")
        if isinstance(self._accountant.budget, sdp.PureDP | sdp.ZCDP):
            raise InvalidParameter(
                f"keys=None: partition selection spends δ > 0, which the budget "
                f"{self._accountant.budget!r} cannot pay; pass public keys="
            )
        plan = _noise.calibrate_integer_noise(pure, m, kappa)
        tau, delta_new = _partition.threshold(plan.mechanism, m, kappa, delta)
        stats = (
            Statistic("count", plan.mechanism, kappa, float(m), plan.route),
            Statistic(
                "new keys",
                sdp.ApproxDP(0.0, delta_new),
                1,
                None,
                f"threshold τ = {tau}: δ_new = 1 − (1 − P[Z ≥ τ − m])^κ with the exact noise tail",
            ),
        )
        return CountQuery(
            description=f"{what} with privacy {target!r}",
            bounding=bounding,
            statistics=stats,
            keys=cols,
            public=None,
            noise=plan.mechanism,
            tau=tau,
            notes=(
                f"keys released when the noisy count is ≥ τ = {tau} "
                f"(δ_new = {upper(delta_new, 4)})",
            ),
            **self._common(),
        )

    # -- sums and means ---------------------------------------------------------------------------
    def _value_setup(
        self,
        column: str,
        bounds: object,
        by: str | Sequence[str] | None,
        keys: object,
        max_rows: object,
        max_groups: object,
        granularity: float | None,
    ) -> _Values:
        if not isinstance(column, str):
            raise InvalidParameter(f"column must be a column name, got {column!r}")
        integer = self._numeric(column)
        lo, hi = _bounds(bounds)
        m, kappa = self._caps(max_rows, max_groups)
        grid = self._grid(integer, lo, hi, granularity)
        cols, public = self._by(
            by,
            keys,
            column=column,
            required="keys: sums and means by group need public keys (find them privately first "
            "with count_by(..., keys=None))",
        )
        if public is None:
            return _Values(column, grid, (lo, hi), (), None, m, None, 1)
        return _Values(column, grid, (lo, hi), cols, public, m, kappa, min(kappa, len(public)))

    def _value_query(
        self,
        kind: type[_ValueQueryT],
        what: str,
        target: sdp.Guarantee,
        values: _Values,
        statistics: tuple[Statistic, ...],
        clamp_per: str = "row",
        **fields: Any,
    ) -> _ValueQueryT:
        """The sum or mean query of ``values`` (salted last, once its noise is calibrated)."""
        v = values
        per = ", clamp='person'" if clamp_per == "person" else ""
        rows = None if clamp_per == "person" else v.max_rows
        return kind(
            description=f"{what}({v.column!r}, bounds={v.clamp}{per}, by={list(v.cols) or None}) "
            f"with privacy {target!r}",
            bounding=Bounding(rows, v.max_groups, self._salt(), v.clamp, v.grid[0], clamp_per),
            statistics=statistics,
            column=v.column,
            keys=v.cols,
            public=v.public,
            grid=v.grid,
            **fields,
            **self._common(),
        )

    @_builds_query
    def sum(
        self,
        column: str,
        bounds: tuple[float, float],
        *,
        privacy: sdp.Guarantee,
        max_rows: int | None = None,
        by: str | Sequence[str] | None = None,
        keys: object = None,
        max_groups: int | None = None,
        granularity: float | None = None,
        clamp: str = "row",
    ) -> SumQuery:
        """The sum of ``column`` clamped to ``bounds`` (per public key with ``by``).

        Values are rounded to a grid of step ``granularity`` (default: 1 for an integer column with
        integer bounds; else the power of two just below
        (U − L)/2^10; coarser when a bound lies over 2^31 steps from 0), so the noise is integer
        and exact; see :mod:`sharpdp.data.sums`. The grid's bounds are rounded inwards, so every
        clamped value, and a mean, stays within ``bounds``. Rounding moves each value by less
        than a step (the interval covers the rounded data). NULL values are skipped.

        Two ways to bound a person's contribution to one key's sum:

        * ``clamp="row"`` (default): each row is clamped to ``bounds`` and at most ``max_rows``
          rows count; sensitivity ``max_rows``·max(|L|, |U|).
        * ``clamp="person"``: every row counts, and the person's *total* over their rows of the
          key is clamped to ``bounds``; sensitivity max(|L|, |U|), whatever the number of rows
          (``max_rows`` does not apply). Better when persons have many small rows, e.g. the total
          delay of an aircraft's flights.

        Args:
            column: a numeric column.
            bounds: (L, U), L < U.
            privacy: the target.
            max_rows: rows per person (per key) kept (default: the session's); only with
                ``clamp="row"``.
            by: by-column(s), or ``None`` for one total.
            keys: the public by-keys (required with ``by``).
            max_groups: by-keys per person kept (default: the session's).
            granularity: the grid step (see above).
            clamp: ``"row"`` or ``"person"`` (see above).

        Returns:
            The :class:`~sharpdp.data.sums.SumQuery`.

        Raises:
            InvalidParameter: ``clamp`` is neither, or ``max_rows`` is given with ``"person"``.
        """
        target = self._target(privacy)
        if clamp not in ("row", "person"):
            raise InvalidParameter(f"clamp must be 'row' or 'person', got {clamp!r}")
        if clamp == "person" and max_rows is not None:
            raise InvalidParameter(
                "max_rows does not apply with clamp='person': every row counts and each person's "
                "total per key is clamped to the bounds"
            )
        v = self._value_setup(column, bounds, by, keys, max_rows, max_groups, granularity)
        step, lo_g, hi_g = v.grid
        rows = 1 if clamp == "person" else v.max_rows
        per_unit = max(abs(lo_g), abs(hi_g))
        sens = rows * per_unit
        plan = _noise.calibrate_integer_noise(target, sens, v.copies)
        _representable("sum", v, per_unit, plan.mechanism, step)
        stat = Statistic("sum", plan.mechanism, v.copies, float(sens), plan.route, unit=step)
        return self._value_query(
            SumQuery, "sum", target, v, (stat,), clamp_per=clamp, noise=plan.mechanism
        )

    @_builds_query
    def mean(
        self,
        column: str,
        bounds: tuple[float, float],
        *,
        privacy: sdp.Guarantee,
        max_rows: int | None = None,
        by: str | Sequence[str] | None = None,
        keys: object = None,
        max_groups: int | None = None,
        granularity: float | None = None,
    ) -> MeanQuery:
        """The mean of ``column`` clamped to ``bounds``: centred noisy sum / noisy count.

        The privacy is split evenly between the centred sum and the count (see
        :mod:`sharpdp.data.sums`); the interval of ``to_pandas`` is the conservative ratio interval
        of :class:`~sharpdp.data.release.MeanRelease`. Arguments as for :meth:`sum`.

        Returns:
            The :class:`~sharpdp.data.sums.MeanQuery`.
        """
        target = self._target(privacy)
        v = self._value_setup(column, bounds, by, keys, max_rows, max_groups, granularity)
        step, lo_g, hi_g = v.grid
        m, copies = v.max_rows, v.copies
        half = _halve(target)
        sum_sens = m * (hi_g - lo_g)
        sum_plan = _noise.calibrate_integer_noise(half, sum_sens, copies)
        count_plan = _noise.calibrate_integer_noise(half, m, copies)
        _representable("mean", v, hi_g - lo_g, sum_plan.mechanism, step / 2.0)
        return self._value_query(
            MeanQuery,
            "mean",
            target,
            v,
            (
                Statistic(
                    "centred sum (2·value − (L + U), grid units)",
                    sum_plan.mechanism,
                    copies,
                    float(sum_sens),
                    sum_plan.route,
                    unit=step / 2.0,
                ),
                Statistic("count", count_plan.mechanism, copies, float(m), count_plan.route),
            ),
            notes=(f"privacy split evenly: {half!r} for the centred sum and for the count",),
            sum_noise=sum_plan.mechanism,
            count_noise=count_plan.mechanism,
        )

    # -- quantiles --------------------------------------------------------------------------------
    @_builds_query
    def quantile(
        self,
        column: str,
        q: float,
        bounds: tuple[float, float],
        *,
        privacy: sdp.Guarantee,
        max_rows: int | None = None,
        by: str | Sequence[str] | None = None,
        keys: object = None,
        max_groups: int | None = None,
        cells: int | None = None,
        support: str = "cells",
    ) -> QuantileQuery:
        """The private ``q``-quantile of ``column`` clamped to ``bounds`` (per public key with ``by``).

        Smith 2011's interval exponential mechanism (:class:`sharpdp.Quantile`, sampled exactly) on
        the engine's histogram of grid cells; see :mod:`sharpdp.data.quantiles`. The grid has
        ``cells`` cells of width (U − L)/cells (default: step 1 when L and U are integers and the
        column is an integer column or U − L ≥ 2^8, up to 2^20 cells; else 1024 cells); values are
        rounded to the nearest grid point (NULL and NaN values skipped) and the released value is
        the midpoint of the sampled cell. With ``support="points"`` the mechanism draws a grid point
        instead, scored by the distance from q·n to the ranks its rows occupy, and releases it:
        the choice for tied data (integers with few distinct values, a constant column), at the
        same privacy cost.

        Privacy: the run is η-bounded-range with η the largest value whose ``copies`` runs meet
        ``privacy`` (``PureDP(ε)``: η = ε/copies; ``ZCDP(ρ)``: copies·ρ_BR(η) ≤ ρ with the tight
        BR constant ≤ η²/8; ``ApproxDP(ε, δ)``: the exact BR profile, or the sharp composition of
        ``copies`` rounds; ``ApproxZCDP(ρ, δ)``: as ``ZCDP(ρ)``, a BR round needs no δ), copies =
        1, or min(``max_groups``, #keys) with ``by``. The score −|r_t − qn| has sensitivity
        Δ = m·max(q, 1 − q) under add/remove of a person with ≤ m = ``max_rows`` rows.

        Accuracy: ``run(...).to_pandas(level)`` gives a data-independent ``rank_error`` w (see
        :class:`~sharpdp.data.release.QuantileRelease`): the released rank is within d* + w of
        q·n, where d* is ≤ 1 when no two rows share a grid point (≤ ½ unless q·n lies beyond the
        ranks of the grid's end cells, e.g. q = 0 with a row at L) but up to the largest number
        of rows sharing one. Smith's mechanism gives a tie no width, so on heavily tied data (a
        constant column, integers with few distinct values) the value may fall anywhere between
        the tie's neighbours, whatever ε; ``support="points"`` has no d* term (some grid point's
        rank range always holds q·n). There is no value interval, as explained there.

        Args:
            column: a numeric column.
            q: the quantile, in [0, 1] (0.5: the median).
            bounds: (L, U), finite, L < U; values are clamped into it.
            privacy: the target.
            max_rows: m, rows per person (per by-key) kept (default: the session's).
            by: by-column(s), or ``None`` for one quantile.
            keys: the public by-keys (required with ``by``).
            max_groups: κ, by-keys per person kept (default: the session's).
            cells: the number of grid cells (see above), 1 ≤ cells ≤ 2^40.
            support: ``"cells"`` (Smith's mechanism, the default) or ``"points"`` (grid points;
                for tied data).

        Returns:
            The :class:`~sharpdp.data.quantiles.QuantileQuery`.

        Raises:
            InvalidParameter: q outside [0, 1], bad bounds or cells, a bad ``support``, a
                non-numeric or unknown column, ``by`` without public ``keys``, or a bad target.
        """
        target = self._target(privacy)
        support = checked_support(support)
        qq = _validate.real("q", q)
        if not 0.0 <= qq <= 1.0:
            raise InvalidParameter(f"q must be in [0, 1], got {qq!r}")
        if not isinstance(column, str):
            raise InvalidParameter(f"column must be a column name, got {column!r}")
        integer = self._numeric(column, "for a quantile")
        lo, hi = _bounds(bounds)
        if cells is None:
            step_one = lo.is_integer() and hi.is_integer() and hi - lo <= 2**20
            if step_one and (integer or hi - lo >= 2.0**_INTEGER_GRID_BITS):
                n_cells = int(hi - lo)
            else:
                n_cells = _QUANTILE_CELLS
        else:
            n_cells = _validate.integer("cells", cells, minimum=1)
            if n_cells > _MAX_QUANTILE_CELLS:
                raise InvalidParameter(f"cells must be <= 2**40, got {n_cells}")
        # the engine computes (x − L)·cells/(U − L): an overflow there would fail only when a row
        # exists, a signal about the data, so such bounds are refused from the parameters alone
        if not math.isfinite((hi - lo) * n_cells):
            raise InvalidParameter(
                f"bounds ({lo!r}, {hi!r}) are too far apart for {n_cells} cells: (U − L)·cells "
                "overflows double precision; narrow the bounds or pass fewer cells"
            )
        if not (hi - lo) / n_cells > 0.0:  # every cell 0 wide: each release would read L
            raise InvalidParameter(
                f"bounds ({lo!r}, {hi!r}) are too close together for {n_cells} cells: a cell's "
                "width (U − L)/cells underflows to 0; widen the bounds or pass fewer cells"
            )
        m, kappa = self._caps(max_rows, max_groups)
        cols, public = self._by(
            by,
            keys,
            column=column,
            required="keys: quantiles by group need public keys (a group's quantile is released "
            "even when it has no rows; find keys privately first with count_by(keys=None))",
        )
        copies = 1 if public is None else min(kappa, len(public))
        eta, route = _calibrate.br_epsilon(target, copies)
        mech = sdp.Quantile(eta, qq, (lo, hi), cells=n_cells, max_rows=m, support=support)
        sens = mech.sensitivity
        points = support == "points"
        return QuantileQuery(
            description=f"quantile({column!r}, q={qq:g}, bounds={(lo, hi)}, "
            f"by={list(cols) or None}{', support=points' if points else ''}) "
            f"with privacy {target!r}",
            bounding=Bounding(m, kappa if cols else None, self._salt(), (lo, hi)),
            statistics=(
                Statistic(
                    f"quantile q={qq:g}",
                    mech,
                    copies,
                    sens,
                    (
                        "exponential mechanism over grid points, η-BR (McSherry–Talwar 2007; "
                        if points
                        else "Smith 2011 interval exponential mechanism, η-BR ("
                    )
                    + f"Durfee–Rogers 2019); {route}",
                    selection=True,
                    detail=(
                        "rank score −dist(qn, [#{x < t}, #{x ≤ t}]) over "
                        f"{n_cells + 1} grid points"
                        if points
                        else f"rank score −|r − qn| over {n_cells} grid cells"
                    )
                    + f" of {mech.grid:g}, sensitivity Δ = m·max(q, 1 − q) = {sens:g}, "
                    f"c = η/(2Δ) = {mech.coefficient!r}",
                ),
            ),
            notes=(
                f"released: {'the sampled grid point' if points else 'the midpoint of the sampled grid cell'}"
                "; accuracy in rank (rank_error in to_pandas), no value interval "
                "(QuantileRelease says why)",
            ),
            column=column,
            keys=cols,
            public=public,
            mechanism=mech,
            **self._common(),
        )

    # -- selection --------------------------------------------------------------------------------
    def _selection_setup(
        self, column: str, keys: object, by: str | Sequence[str] | None, by_keys: object
    ) -> tuple[tuple[Any, ...], tuple[str, ...], tuple[tuple[Any, ...], ...] | None]:
        if not isinstance(column, str):
            raise InvalidParameter(f"column must be a column name, got {column!r}")
        self._check("column", (column,))
        if keys is None:
            raise InvalidParameter("keys must list the public candidates of column")
        candidates = tuple(k[0] for k in self._public("keys", keys, (column,)))
        cols, groups = self._by(
            by,
            by_keys,
            name="by_keys",
            column=column,
            required="by_keys: the by-groups of a top-k must be public; list them",
        )
        return candidates, cols, groups

    @_builds_query
    def top_k(
        self,
        column: str,
        k: int,
        *,
        keys: object = None,
        privacy: sdp.Guarantee,
        max_groups: int | None = None,
        max_rows: int | None = None,
        by: str | Sequence[str] | None = None,
        by_keys: object = None,
        k_bar: int | None = None,
    ) -> TopKQuery | LimitDomQuery:
        """The private top-``k`` values of ``column`` by bounded count (per by-group with ``by``).

        **Public keys** (``keys=[...]``): one-shot Gumbel top-k (:class:`sharpdp.TopK`) with score
        range ``max_rows`` (monotonic counts; see :mod:`sharpdp.data.selection`), calibrated to
        ``privacy``; exactly k keys per group. With ``by``, one top-k per public by-group
        (``by_keys``, required), charged min(κ, #groups) times; the per-round ε is the largest at
        which all k·copies bounded-range rounds meet ``privacy`` under the sharpest composition
        (:func:`sharpdp.data._calibrate.br_epsilon`).

        **Unknown keys** (``keys=None``): Durfee–Rogers 2019's LimitDom
        (:class:`~sharpdp.data.selection.LimitDomQuery`): the engine returns only the top k̄ + 1
        bounded counts per group (ties broken by key), and keys are released in noisy order until
        the noisy threshold ⊥ — at most k, possibly fewer or none; keys and ranks only, no counts.
        Releasing a key that only one person holds needs δ > 0: with ``ApproxDP(ε, δ)`` or
        ``ApproxZCDP(ρ, δ)`` that δ is used; a ``PureDP(ε)``/``ZCDP(ρ)`` target gets δ = a tenth
        of the budget's δ (``SELECTION_DELTA_FRACTION``; shown by ``explain()``), and a budget
        without δ is refused. The charge per
        by-group is k η-BR rounds and ``ApproxDP(0, δ_L)``; under ``ApproxDP(ε, δ)`` a fraction of
        δ goes to the ⊥ parts and the rest to the rounds' composition, η the largest the sharp
        composition certifies (:func:`sharpdp.data._calibrate.limitdom`). With ``by``, groups are
        ``by_keys`` if given (copies = min(κ, #by_keys)), else the groups present in the data
        (copies = κ: a person's ≤ κ (by-group, key) pairs reach ≤ κ groups).

        Args:
            column: the candidate column.
            k: how many to release (1 ≤ k; ≤ the number of candidates with public keys).
            keys: the public candidates, or ``None`` for unknown keys (LimitDom).
            privacy: the target.
            max_groups: κ, (by-group, candidate) pairs per person kept (default: the session's).
            max_rows: m, rows per person per pair kept (default: the session's).
            by: by-column(s) or ``None``.
            by_keys: the public by-groups (required with ``by`` and public ``keys``).
            k_bar: unknown keys only: k̄ ≥ k, how many top counts the engine returns per group
                (default max(2k, 100)). The threshold sits above the (k̄ + 1)-th count, so a
                larger k̄ releases more keys; it costs no privacy while κ ≤ k̄ (a person moves
                ≤ min(κ, k̄) of the counts), only k̄ + 1 rows per group from the engine.

        Returns:
            A :class:`~sharpdp.data.selection.TopKQuery` (public keys) or
            :class:`~sharpdp.data.selection.LimitDomQuery` (unknown keys).

        Raises:
            InvalidParameter: bad k, keys, columns or caps; unknown keys with a target or a budget
                without δ > 0.
        """
        target = self._target(privacy)
        kk = _validate.integer("k", k, minimum=1, maximum=_MAX_RANK)
        if keys is None:
            return self._top_k_unknown(column, kk, target, max_groups, max_rows, by, by_keys, k_bar)
        if k_bar is not None:
            raise InvalidParameter("k_bar is only used with unknown keys (keys=None)")
        candidates, cols, groups = self._selection_setup(column, keys, by, by_keys)
        if kk > len(candidates):
            raise InvalidParameter(f"k must be <= the {len(candidates)} candidates, got {kk}")
        m, kappa = self._caps(max_rows, max_groups)
        copies = 1 if groups is None else min(kappa, len(groups))
        # the k·copies rounds are calibrated together on their sharpest composition
        eta, _ = _calibrate.br_epsilon(target, kk * copies)
        mech = sdp.TopK(kk, eta, sensitivity=float(m), monotonic=True)
        return TopKQuery(
            description=f"top_k({column!r}, k={kk}, by={list(cols) or None}) with privacy "
            f"{target!r}",
            bounding=Bounding(m, kappa, self._salt()),
            statistics=(
                Statistic(
                    f"top-{kk}",
                    mech,
                    copies,
                    float(m),
                    "one-shot Gumbel ≡ k peeling exponential mechanisms, each ε-BR on monotonic "
                    "scores (Durfee–Rogers 2019); calibrated on its exact k-fold BR curve",
                    selection=True,
                ),
            ),
            column=column,
            candidates=candidates,
            by=cols,
            groups=groups,
            mechanism=mech,
            **self._common(),
        )

    def _top_k_unknown(
        self,
        column: str,
        k: int,
        target: sdp.Guarantee,
        max_groups: int | None,
        max_rows: int | None,
        by: str | Sequence[str] | None,
        by_keys: object,
        k_bar: int | None,
    ) -> LimitDomQuery:
        """``top_k`` over unknown keys (see :meth:`top_k`)."""
        target = self._with_selection_delta(target)
        if not isinstance(target, sdp.ApproxDP | sdp.ApproxZCDP) or target.delta_ <= 0.0:
            raise InvalidParameter(
                f"privacy: top_k over unknown keys (keys=None, LimitDom) needs a target with "
                f"delta > 0 (sdp.ApproxDP or sdp.ApproxZCDP), got {target!r}; or pass public keys="
            )
        if not isinstance(column, str):
            raise InvalidParameter(f"column must be a column name, got {column!r}")
        self._check("column", (column,))
        # the engine compares k̄ with int64 ranks (k̄ = 2⁶³ failed there after explain() priced it)
        kb = (
            min(max(2 * k, 100), _MAX_RANK)
            if k_bar is None
            else _validate.integer("k_bar", k_bar, minimum=1, maximum=_MAX_RANK)
        )
        if kb < k:
            raise InvalidParameter(f"k_bar must be >= k={k}, got {kb}")
        cols, groups = self._by(by, by_keys, name="by_keys", column=column)
        m, kappa = self._caps(max_rows, max_groups)
        if isinstance(self._accountant.budget, sdp.PureDP | sdp.ZCDP):
            raise InvalidParameter(
                f"keys=None: LimitDom spends δ > 0, which the budget "
                f"{self._accountant.budget!r} cannot pay; pass public keys="
            )
        if not cols:
            copies = 1
        elif groups is None:
            copies = kappa
        else:
            copies = min(kappa, len(groups))
        mech, route = _calibrate.limitdom(
            target, k=k, k_bar=kb, copies=copies, sensitivity=float(m), max_keys=kappa
        )
        where = "per by-group " if cols else ""
        return LimitDomQuery(
            description=f"top_k({column!r}, k={k}, keys=unknown, by={list(cols) or None}) with "
            f"privacy {target!r}",
            bounding=Bounding(m, kappa, self._salt()),
            statistics=(
                Statistic(
                    f"top-{k} of unknown keys (LimitDom, k̄ = {kb})",
                    mech,
                    copies,
                    float(m),
                    "Durfee–Rogers 2019 Algorithm 1, dominated by k η-BR rounds and "
                    f"ApproxDP(0, δ_L) (sharpdp.LimitDom); {route}",
                    selection=True,
                    detail=f"score range {m:g} (monotonic counts), ≤ {mech.restricted} count(s) "
                    f"moved per group; threshold h⊥ = h₍ₖ̄₊₁₎ + {mech.threshold_offset!r}; "
                    f"η = {upper(mech.epsilon_)} per round, δ_L = {upper(mech.delta_)} per run",
                ),
            ),
            notes=(
                f"releases {where}the keys in noisy order until ⊥: at most {k}, possibly fewer or "
                "none; keys and ranks only, no counts",
            ),
            column=column,
            by=cols,
            groups=groups,
            mechanism=mech,
            **self._common(),
        )

    @_builds_query
    def select_best(
        self,
        column: str,
        *,
        keys: object = None,
        privacy: sdp.Guarantee,
        max_groups: int | None = None,
    ) -> SelectBestQuery | LimitDomQuery:
        """One exponential mechanism choosing the candidate approved by the most persons.

        Each person approves at most ``max_groups`` of the public ``keys`` (its values of
        ``column``, capped by the seeded hash); a candidate's score is its number of approving
        persons (score range 1, monotonic: P[y] ∝ exp(ε·score_y)).

        Without ``keys`` the candidates are unknown: this is ``top_k(column, 1, keys=None,
        max_rows=1)``, LimitDom with k = 1 (Durfee–Rogers 2019), which releases the best
        candidate only if its noisy count beats a noisy threshold above the runner-up's, and
        needs δ > 0 (see :meth:`top_k`).

        Args:
            column: the candidate column.
            keys: the public candidates, or ``None`` for unknown ones (LimitDom).
            privacy: the target.
            max_groups: κ, approvals per person (default: the session's).

        Returns:
            The :class:`~sharpdp.data.selection.SelectBestQuery`, or with unknown keys the
            :class:`~sharpdp.data.selection.LimitDomQuery`.
        """
        if keys is None:
            unknown = self.top_k(column, 1, privacy=privacy, max_groups=max_groups, max_rows=1)
            return cast(LimitDomQuery, unknown)  # (keys=None: always LimitDom)
        target = self._target(privacy)
        candidates, _, _ = self._selection_setup(column, keys, None, None)
        kappa = self._caps(None, max_groups)[1]
        # an ApproxZCDP(ρ, δ) target is met by a ρ-zCDP selection, which needs no δ
        pure = sdp.ZCDP(target.rho, target.xi) if isinstance(target, sdp.ApproxZCDP) else target
        mech = sdp.calibrate(sdp.Exponential, pure, sensitivity=1.0, monotonic=True)
        return SelectBestQuery(
            description=f"select_best({column!r}) with privacy {target!r}",
            bounding=Bounding(1, kappa, self._salt()),
            statistics=(
                Statistic(
                    "best",
                    mech,
                    1,
                    1.0,
                    "exponential mechanism on approval counts, ε-BR (McSherry–Talwar 2007; "
                    "Rogers–Steinke 2021 Lemma 3)",
                    selection=True,
                ),
            ),
            column=column,
            candidates=candidates,
            mechanism=mech,
            **self._common(),
        )

    # -- workloads --------------------------------------------------------------------------------
    def _discovery_split(
        self, target: sdp.Guarantee, columns: tuple[str, ...]
    ) -> tuple[sdp.Guarantee, sdp.Guarantee]:
        """(each discovery's target, the rest's target) when ``columns`` need their domain found.

        Discovery takes :data:`DISCOVERY_SHARE` of ε (or ρ) and half of δ (all of δ under a zCDP
        target, whose δ only pays for discovery), split evenly over the columns; the parts
        compose (basic composition, Dwork–Roth 2014 Thm 3.16; zCDP adds, Bun–Steinke 2016
        Lemma 2.3) to within the target, and the accountant charges their sharp composition.
        """
        u = len(columns)
        f = DISCOVERY_SHARE
        target = self._with_selection_delta(target)
        if isinstance(target, sdp.ApproxDP):
            eps, delta = target.epsilon_, target.delta_
            return sdp.ApproxDP(f * eps / u, delta / (2 * u)), sdp.ApproxDP(
                (1 - f) * eps, delta / 2
            )
        assert isinstance(target, sdp.ApproxZCDP)
        rho, delta = target.rho, target.delta_
        return sdp.ApproxZCDP(f * rho / u, delta / u), sdp.ZCDP((1 - f) * rho)

    def _typed_values(
        self, parameter: str, column: str, values: tuple[Any, ...], bins: Bins | None
    ) -> tuple[Any, ...]:
        """Values of ``column`` in its type (:mod:`sharpdp.data._values`); with a :class:`Bins`
        domain, bin labels (left edges), which must be the domain's own."""
        if bins is None:
            rows = tuple((v,) for v in values)
            return tuple(
                r[0] for r in _values.canonical(self._source.table, parameter, (column,), rows)
            )
        labels = set(bins.labels)
        for v in values:
            if v not in labels:
                raise InvalidParameter(
                    f"{parameter}: {v!r} is not a bin label of column {column!r}; its bins "
                    f"{bins!r} are labelled by their left edges {list(bins.labels)[:6]}"
                    + ("..." if bins.count > 6 else "")
                )
        return values

    def _typed_workload(self, workload: Workload) -> Workload:
        """``workload`` with its declared domains and predicate values in their columns' types."""
        domains: list[tuple[str, Domain]] = []
        for c, domain in workload.domains:
            if isinstance(domain, Bins):
                self._numeric(c, "to bin")
                domains.append((c, domain))
            else:
                domains.append((c, self._typed_values(f"domains[{c!r}]", c, domain, None)))
        typed = dataclasses.replace(workload, domains=tuple(domains))
        if not isinstance(typed, Predicates):
            return typed
        queries = []
        for name, conditions in typed.queries:
            parts = []
            for c, allowed in conditions:
                dom = typed.domain(c)
                bins = dom if isinstance(dom, Bins) else None
                parts.append((c, self._typed_values(f"predicates[{name!r}]", c, allowed, bins)))
            queries.append((name, tuple(parts)))
        return dataclasses.replace(typed, queries=tuple(queries))

    def _workload_setup(
        self, workload: object, privacy: object, max_rows: object
    ) -> tuple[Workload, sdp.Guarantee, int, sdp.Guarantee, tuple[tuple[str, CountQuery], ...]]:
        if not isinstance(workload, Workload):
            raise InvalidParameter(
                "workload must be built by sdp.data.marginals(...) or sdp.data.predicates(...), "
                f"got {workload!r}"
            )
        self._check("workload", workload.columns)
        target = self._target(privacy)
        m = self._caps(max_rows, None)[0]
        workload = self._typed_workload(workload)
        unknown = workload.needs_domains
        answers_target = target
        discovery: tuple[tuple[str, CountQuery], ...] = ()
        if unknown:
            share, answers_target = self._discovery_split(target, unknown)
            discovery = tuple(
                (c, self.count_by(c, keys=None, privacy=share, max_groups=m, max_rows=1))
                for c in unknown
            )
        return workload, target, m, answers_target, discovery

    @_builds_query
    def workload(
        self,
        workload: Workload,
        *,
        privacy: sdp.Guarantee,
        max_rows: int | None = None,
        mechanism: str = "auto",
    ) -> WorkloadQuery:
        """Plan the answers to a workload of counting queries (``run()`` releases them).

        Each person contributes at most ``max_rows`` distinct rows of the workload's columns (m),
        each satisfying at most C of the k queries, so the answer vector has ℓ1 ≤ m·C and
        ℓ2 ≤ m·√C; the discrete Laplace (ℓ1) or the Gaussian (ℓ2), each calibrated exactly to
        ``privacy``, whichever has the smaller expected error per answer, is added to every
        answer (see :mod:`sharpdp.data.answers`). Marginal columns without a declared domain have
        it found privately first (partition selection of their values, taking a tenth of ε or ρ and
        half of δ, all of it under a zCDP target; needs δ > 0), and the whole is charged as one
        composition.

        Args:
            workload: from :func:`sdp.data.marginals` or :func:`sdp.data.predicates`.
            privacy: the target of the whole release.
            max_rows: m (default: the session's).
            mechanism: ``"auto"``, ``"laplace"`` or ``"gaussian"``.

        Returns:
            The :class:`~sharpdp.data.answers.WorkloadQuery`.

        Raises:
            InvalidParameter: a bad workload (unknown columns, domains), target or mechanism.
        """
        workload, target, m, answers_target, discovery = self._workload_setup(
            workload, privacy, max_rows
        )
        known = resolve_domains(workload, {})
        answers = 0 if workload.needs_domains else workload.query_count(known)
        if answers > MAX_ANSWERS:
            raise InvalidParameter(
                f"workload: {workload.describe_size(known)} are {answers} answers, over the limit "
                f"{MAX_ANSWERS} (2^22): fewer columns, values or a smaller way"
            )
        c = workload.overlap(known)
        if c == 0:
            raise InvalidParameter("workload: no query can count any row (empty predicates)")
        plan = choose_noise(answers_target, m, c, mechanism)
        detail = (
            f"{workload.describe_size(known)}; a row satisfies ≤ C = {c}: sensitivity "
            f"ℓ1 {m * c}, ℓ2 {upper(m * math.sqrt(c))}, ℓ∞ {m}"
        )
        stats = [s for _, q in discovery for s in q.statistics]
        stats.append(
            Statistic("answers", plan.item, plan.copies, float(m), plan.route, detail=detail)
        )
        notes = [plan.comparison]
        if discovery:
            notes.append(
                f"domains of {[col for col, _ in discovery]} found privately (partition selection "
                f"with {discovery[0][1].description.split(' with privacy ')[1]} each); the answers "
                f"get {answers_target!r}"
            )
        kind = type(workload).__name__.lower()
        return WorkloadQuery(
            description=f"answer({kind} of {list(workload.columns)}) with privacy {target!r}",
            bounding=Bounding(1, m, self._salt(), key="distinct row"),
            statistics=tuple(stats),
            notes=tuple(notes),
            workload=workload,
            max_rows=m,
            overlap=c,
            plan=plan,
            discovery=discovery,
            **self._common(),
        )

    def answer(
        self,
        workload: Workload,
        *,
        privacy: sdp.Guarantee,
        max_rows: int | None = None,
        mechanism: str = "auto",
        rng: RNGLike = None,
    ) -> WorkloadRelease:
        """Answer a workload now: ``self.workload(...).run(rng)`` (spends, then releases).

        Example:
            >>> import pandas as pd
            >>> import sharpdp as sdp
            >>> t = pd.DataFrame({"who": range(6), "a": [0, 0, 1, 1, 1, 0], "b": [0, 1] * 3})
            >>> s = sdp.data.Session(t, privacy_unit="who", budget=sdp.ZCDP(1.0))
            >>> w = sdp.data.marginals(["a", "b"], way=1, domains={"a": [0, 1], "b": [0, 1]})
            >>> r = s.answer(w, privacy=sdp.ZCDP(0.5), max_rows=1, rng=0)
            >>> r.mechanism, list(r.to_pandas().columns)
            ('gaussian', ['query', 'a', 'b', 'count', 'lower', 'upper'])

        See :meth:`workload` for the arguments.
        """
        query = self.workload(workload, privacy=privacy, max_rows=max_rows, mechanism=mechanism)
        release = query.run(rng)
        assert isinstance(release, WorkloadRelease)
        return release

    @_builds_query
    def mwem_query(
        self,
        workload: Workload,
        *,
        privacy: sdp.Guarantee,
        rounds: int | None = None,
        max_rows: int | None = None,
    ) -> MWEMQuery:
        """Plan an MWEM run over the workload's columns (``run()`` releases the synthetic data).

        See :mod:`sharpdp.data.mwem`: T rounds of (exponential-mechanism selection of the worst
        answered query, a noisy measurement, a multiplicative-weights update) over the product of
        the columns' domains (≤ 2²⁰ cells), charged as one composition. Columns without a declared
        domain have it found privately first (as in :meth:`workload`).

        Args:
            workload: from :func:`sdp.data.marginals` or :func:`sdp.data.predicates`.
            privacy: the target of the whole run.
            rounds: T; ``None`` (default) chooses it after the noisy n̂ is released:
                T = min(G, ⌈(ε·n̂·√ln|X| / (10 ln G))^{2/3}⌉) for G groups of disjoint queries
                (marginals, or predicates), each round getting an equal share of what n̂ leaves.
            max_rows: m, distinct rows per person (default: the session's).

        Raises:
            InvalidParameter: a bad workload, a declared domain over 2²⁰ cells, a bad target.
        """
        workload, target, m, rest, discovery = self._workload_setup(workload, privacy, max_rows)
        if isinstance(workload, Predicates):
            unknown = [c for c in workload.columns if workload.domain(c) is None]
            if unknown:
                raise InvalidParameter(
                    f"MWEM over predicates needs the domain of every column: pass domains= for "
                    f"{unknown} (sdp.data.predicates(..., domains={{...}}))"
                )
        known = resolve_domains(workload, {})
        sizes = [len(v) for v in known.values()]
        if math.prod(sizes) > MAX_DOMAIN:
            raise InvalidParameter(
                f"MWEM: the domain has {math.prod(sizes)} cells, over the limit {MAX_DOMAIN} "
                "(2^20): declare fewer columns, values or bins"
            )
        if not workload.needs_domains:
            groups, cells = len(workload.groups(known)), math.prod(sizes)
            if groups * cells > MAX_MATRIX:
                raise InvalidParameter(
                    f"MWEM: {groups} query groups over {cells} cells make a matrix of "
                    f"{groups * cells} entries, over the limit {MAX_MATRIX} (2^25): fewer "
                    "columns, values or marginals"
                )
        stats = [s for _, q in discovery for s in q.statistics]
        plan: MWEMPlan | AdaptivePlan
        if rounds is None:
            plan = plan_adaptive(rest, m)
            shown = "chosen after n̂"
            stats += [
                Statistic("n̂", plan.total, 1, float(m), "noisy number of bounded rows"),
                Statistic(
                    "rounds",
                    plan.rest,
                    1,
                    None,
                    "T rounds of ρ_rest/T (ε_rest/T) each, T chosen from the released n̂: "
                    "valid for every T (adaptive composition)",
                ),
            ]
            notes = [
                "rounds: T = min(G, ⌈(ε·n̂·√ln|X| / (10 ln G))^{2/3}⌉) ≤ 1000 after n̂ is "
                "released (HLM12 Thm 2.2's bound minimised; G groups: marginals or predicates); "
                "each round selects a group (exponential mechanism, sampled exactly) and "
                "measures it whole"
                + (
                    "; each selection is charged ε²/8 (bounded range), so an ε²/2 analysis "
                    "would afford 2.5× fewer rounds at the same noise"
                    if isinstance(plan.rest, sdp.ZCDP)
                    else ""
                )
            ]
        else:
            t = _validate.integer("rounds", rounds, minimum=1)
            if t > MAX_ROUNDS:
                raise InvalidParameter(
                    f"rounds must be <= {MAX_ROUNDS} (each round scans the domain), got {t}"
                )
            shown = str(t)
            plan = plan_mwem(rest, m, t)
            stats += [
                Statistic("n̂", plan.total, 1, float(m), "noisy number of bounded rows"),
                Statistic(
                    "selections",
                    plan.selection,
                    t,
                    float(m),
                    "exponential mechanism on |q(A) − q(D)|, ε-bounded range (Rogers–Steinke "
                    "2021 Lemma 3), sampled exactly",
                    selection=True,
                    detail=f"score |q(A) − q(D)|, sensitivity {m} (not monotonic)",
                ),
                Statistic(
                    "measurements",
                    plan.items[2][0],
                    t,
                    float(m),
                    plan.route,
                    detail=f"one group of disjoint queries per round: ℓ1, ℓ2 ≤ {m}",
                ),
            ]
            notes = [
                f"{t} rounds; an analysis charging each selection ε²/2 (pure ε-DP) instead of "
                f"its bounded-range ε²/8 affords {plan.classical_rounds} at the same noise"
                + (
                    f" ({t / plan.classical_rounds:.2f}× more rounds here)"
                    if 0 < plan.classical_rounds < t
                    else ""
                )
            ]
        if discovery:
            notes.append(f"domains of {[c for c, _ in discovery]} found privately first")
        return MWEMQuery(
            description=f"mwem({type(workload).__name__.lower()} of {list(workload.columns)}, "
            f"rounds={shown}) with privacy {target!r}",
            bounding=Bounding(1, m, self._salt(), key="distinct row"),
            statistics=tuple(stats),
            notes=tuple(notes),
            workload=workload,
            max_rows=m,
            plan=plan,
            discovery=discovery,
            typed=self._typed_workload,
            **self._common(),
        )

    def mwem(
        self,
        workload: Workload,
        *,
        privacy: sdp.Guarantee,
        rounds: int | None = None,
        max_rows: int | None = None,
        rng: RNGLike = None,
    ) -> Synthetic:
        """Run MWEM now: ``self.mwem_query(...).run(rng)`` (spends, then releases).

        Returns:
            The :class:`~sharpdp.data.mwem.Synthetic` distribution (``to_pandas()``,
            ``answer(workload)``, ``sample(n)``).
        """
        query = self.mwem_query(workload, privacy=privacy, rounds=rounds, max_rows=max_rows)
        release = query.run(rng)
        assert isinstance(release, Synthetic)
        return release

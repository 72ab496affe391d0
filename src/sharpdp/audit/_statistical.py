"""Statistical (black-box) audit: lower bounds on ε, or on the bounded-range spread, from samples.

Procedure of :func:`sample` (a one-event hypothesis test in the style of Jagielski et al. 2020 and
Ding et al. 2018, with the event chosen on held-out data):

1. draw ``n`` outputs of the sampler on x and ``n`` on x′, i.i.d.;
2. split each sample into a *selection* half and an *estimation* half;
3. on the selection halves only, choose an event E and an order: E is the set of outcomes (or
   bins) whose empirical log-likelihood ratio log((a+½)/(b+½)) exceeds a threshold, or the best
   of a user-given family; the threshold and order maximise the bound of step 4 computed on the
   selection counts;
4. on the estimation halves, Clopper–Pearson bounds at level γ/2 each (γ = 1 − confidence): a
   lower bound p_lo on P(E) under the likelier input and an upper bound p′_hi under the other;
5. report ε_lo = log((p_lo − δ)/p′_hi) (0 when p_lo ≤ δ).

Validity: the event depends only on the selection halves, which are independent of the estimation
halves, so conditionally on E the two bounds hold together with probability ≥ 1 − γ (union bound).
On that event, for any mechanism that is (ε, δ)-DP on this pair in both orders,
P(E) ≤ e^ε P′(E) + δ gives ε ≥ log((P(E) − δ)/P′(E)) ≥ ε_lo. So ε_lo exceeds the pair's true ε(δ)
with probability at most 1 − confidence. Only one test is made on the estimation data (the order is
chosen on the selection data), so no multiplicity correction is needed.

:func:`sample_bounded_range` lower-bounds the spread sup Z − inf Z of the privacy loss instead: for
any events E1, E2, log(P(E1)/P′(E1)) ≤ sup Z and log(P(E2)/P′(E2)) ≥ inf Z (a ratio of masses is a
weighted mean of the pointwise ratios), so the spread is at least the difference; with four
Clopper–Pearson bounds at level γ/4 each the lower bound is valid with probability ≥ confidence.

Clopper–Pearson bounds come from ``scipy.stats.beta.ppf`` and are widened by a relative 1e-9
against its rounding. Assumption: each call ``sampler(x, size, rng)`` returns ``size`` i.i.d. draws.
"""

from __future__ import annotations

import math
import sys
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from sharpdp import _format, _validate
from sharpdp.errors import InvalidParameter, NotImplied
from sharpdp.guarantees import BoundedRange, Guarantee
from sharpdp.mechanisms._samplers import RNGLike, as_generator

__all__ = ["RangeSampleReport", "SampleReport", "clopper_pearson", "sample", "sample_bounded_range"]

FloatArray: TypeAlias = npt.NDArray[np.float64]
IntArray: TypeAlias = npt.NDArray[np.int64]
Sampler: TypeAlias = Callable[[Any, int, np.random.Generator], Any]
Event: TypeAlias = Callable[[Any], Any] | Collection[Any]

_UNSEEN = "<outcomes not seen in the selection half>"
_CHUNKS = 16  # the sampler is called in this many chunks per input (for the progress bar)
_WIDEN = 1e-9  # relative widening of Clopper–Pearson bounds against scipy's rounding


# -- Clopper–Pearson --------------------------------------------------------------------------------


def clopper_pearson(k: npt.ArrayLike, n: int, level: float) -> tuple[FloatArray, FloatArray]:
    """One-sided Clopper–Pearson bounds for a binomial proportion.

    Args:
        k: successes (array-like of integers in [0, n]).
        n: trials.
        level: the error probability of *each* bound (e.g. γ/2).

    Returns:
        (lower, upper): P(p < lower) ≤ level and P(p > upper) ≤ level, for every p. The lower
        bound is the level-quantile of Beta(k, n − k + 1) (0 if k = 0); the upper bound is
        1 − (the lower bound for the n − k failures), computed that way so that it stays accurate
        near 1 (1 if k = n). Both are widened by 1e-9 relative (of p, resp. of 1 − p) against
        the rounding of ``scipy.stats.beta.ppf``, and the upper bound is rounded up.
    """
    n = _validate.integer("n", n, minimum=1)
    level = _validate.real("level", level)
    if not 0.0 < level < 1.0:
        raise InvalidParameter(f"level must be in (0, 1), got {level!r}")
    try:
        kk = np.asarray(k, dtype=np.float64)
    except (TypeError, ValueError):
        raise InvalidParameter(f"k must be integers in [0, n], got {k!r}") from None
    if not bool(np.all((kk >= 0) & (kk <= n) & (kk == np.floor(kk)))):
        raise InvalidParameter(f"k must be integers in [0, n={n}], got {k!r}")
    lower = _cp_lower(kk, n, level)
    upper = np.nextafter(1.0 - _cp_lower(n - kk, n, level), 2.0)
    return lower, np.minimum(1.0, upper)


def _cp_lower(k: FloatArray, n: int, level: float) -> FloatArray:
    from scipy.stats import beta

    lower = np.zeros_like(k)
    pos = k > 0
    if pos.any():
        lower[pos] = beta.ppf(level, k[pos], n - k[pos] + 1.0)
    return np.asarray(lower * (1.0 - _WIDEN))


def _log_ratio_bound(
    a: FloatArray, b: FloatArray, n: int, level: float, delta: float
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """log((CP_lo(a) − δ)/CP_hi(b)) (−inf where CP_lo(a) ≤ δ), with the two bounds."""
    lo, _ = clopper_pearson(a, n, level)
    _, hi = clopper_pearson(b, n, level)
    num = lo - delta
    with np.errstate(divide="ignore"):
        value = np.where(num > 0.0, np.log(np.maximum(num, 1e-300)) - np.log(hi), -np.inf)
    return value, lo, hi


# -- reports --------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SampleReport:
    """Result of :func:`sample`: a lower bound on ε valid with probability ≥ ``confidence``.

    Attributes:
        epsilon_lower: ε_lo ≥ 0; the pair's true ε(δ) is below it with probability ≤ 1 − confidence.
        delta: the δ of the bound.
        confidence: the confidence level.
        n: draws per input.
        n_selection: draws per input used to choose the event.
        n_estimation: draws per input used for the bounds.
        event: the event E (outcome labels, bin intervals, or the given event).
        likelier: ``"x"`` if E was tested as likelier under x (P(E) ≤ e^ε P′(E) + δ), else
            ``"x_prime"``.
        counts: (hits of E in the estimation half of the likelier input, hits under the other).
        p_lower: the Clopper–Pearson lower bound on P(E) under the likelier input.
        p_other_upper: the upper bound on P(E) under the other input.
        seconds: wall-clock time of the audit.
        claim: the guarantee tested, if any.
        claimed_epsilon: its ε at ``delta``, if a claim was given.
    """

    epsilon_lower: float
    delta: float
    confidence: float
    n: int
    n_selection: int
    n_estimation: int
    event: object
    likelier: str
    counts: tuple[int, int]
    p_lower: float
    p_other_upper: float
    seconds: float
    claim: Guarantee | None = None
    claimed_epsilon: float | None = None

    @property
    def refuted(self) -> bool | None:
        """True when ε_lo exceeds the claimed ε(δ) (the claim is refuted at this confidence);
        None without a claim."""
        if self.claimed_epsilon is None:
            return None
        return self.epsilon_lower > self.claimed_epsilon

    def __str__(self) -> str:
        text = (
            f"ε ≥ {_format.lower(self.epsilon_lower)} (δ = {self.delta:g}) with confidence "
            f"{self.confidence:g}; "
            f"event {_describe(self.event)} likelier under {self.likelier}, estimation counts "
            f"{self.counts[0]}/{self.n_estimation} vs {self.counts[1]}/{self.n_estimation}; "
            f"n = {self.n} per input, {self.seconds:.3g} s"
        )
        if self.claimed_epsilon is not None:
            verdict = "REFUTED" if self.refuted else "not refuted"
            text += f"; claim {self.claim!r} (ε = {_format.upper(self.claimed_epsilon)}): {verdict}"
        return text


@dataclass(frozen=True, slots=True)
class RangeSampleReport:
    """Result of :func:`sample_bounded_range`: a lower bound on the spread sup Z − inf Z.

    Attributes:
        spread_lower: η_lo ≥ 0; the pair's true bounded-range spread is below it with probability
            ≤ 1 − confidence.
        confidence: the confidence level.
        n: draws per input.
        n_selection: draws per input used to choose the events.
        n_estimation: draws per input used for the bounds.
        event_high: E1, tested as likelier under x (bounds log P(E1)/P′(E1) ≤ sup Z from below).
        event_low: E2, tested as likelier under x′ (bounds log P(E2)/P′(E2) ≥ inf Z from above).
        counts: estimation hits (E1 under x, E1 under x′, E2 under x′, E2 under x).
        bounds: the four Clopper–Pearson bounds in the same order (lower, upper, lower, upper).
        seconds: wall-clock time.
        claim: the bounded-range claim tested, if any.
    """

    spread_lower: float
    confidence: float
    n: int
    n_selection: int
    n_estimation: int
    event_high: object
    event_low: object
    counts: tuple[int, int, int, int]
    bounds: tuple[float, float, float, float]
    seconds: float
    claim: BoundedRange | None = None

    @property
    def refuted(self) -> bool | None:
        """True when η_lo exceeds the claimed η; None without a claim."""
        if self.claim is None:
            return None
        return self.spread_lower > self.claim.eta

    def __str__(self) -> str:
        text = (
            f"bounded-range spread ≥ {_format.lower(self.spread_lower)} with confidence "
            f"{self.confidence:g}; "
            f"events {_describe(self.event_high)} / {_describe(self.event_low)}; "
            f"n = {self.n} per input, {self.seconds:.3g} s"
        )
        if self.claim is not None:
            text += f"; claim {self.claim!r}: {'REFUTED' if self.refuted else 'not refuted'}"
        return text


def _describe(event: object, limit: int = 80) -> str:
    text = repr(event)
    return text if len(text) <= limit else text[: limit - 3] + "..."


# -- drawing ----------------------------------------------------------------------------------------


class _Progress:
    """A rich progress bar when wanted and available (never required)."""

    def __init__(self, enabled: bool | None, total: int) -> None:
        self._bar: Any = None
        self._task: Any = None
        if enabled is None:
            enabled = sys.stderr.isatty()
        if not enabled:
            return
        try:
            from rich.progress import Progress
        except ImportError:  # rich is an optional dependency (the ``cli`` extra)
            return
        self._bar = Progress(transient=True)
        self._task = self._bar.add_task("audit: sampling", total=total)

    def __enter__(self) -> _Progress:
        if self._bar is not None:
            self._bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._bar is not None:
            self._bar.stop()

    def advance(self, k: int) -> None:
        if self._bar is not None:
            self._bar.advance(self._task, k)


def _draw(
    sampler: Sampler, x: object, n: int, rng: np.random.Generator, bar: _Progress
) -> npt.NDArray[Any]:
    chunk = -(-n // _CHUNKS)
    parts = []
    done = 0
    while done < n:
        m = min(chunk, n - done)
        out = sampler(x, m, rng)
        try:
            arr = np.asarray(out)
        except (TypeError, ValueError):
            arr = np.empty(len(out), dtype=object)
            arr[:] = list(out)
        if arr.ndim == 0 or arr.shape[0] != m:
            raise InvalidParameter(
                f"sampler(x, {m}, rng) must return {m} outputs, got {_describe(out)}"
            )
        parts.append(arr)
        done += m
        bar.advance(m)
    return np.concatenate(parts)


# -- coding outputs into cells ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Cells:
    """Cell ids of the four half-samples and a description of each cell."""

    x_sel: IntArray
    x_est: IntArray
    xp_sel: IntArray
    xp_est: IntArray
    count: int
    describe: Callable[[IntArray], object]


def _discrete_cells(halves: list[npt.NDArray[Any]]) -> _Cells:
    if any(h.dtype.kind == "f" or h.dtype.kind == "c" for h in halves):
        raise InvalidParameter(
            "the sampler returns real numbers: pass bins= (bin edges or a number of bins) or "
            "events= for real-valued outputs"
        )
    sizes = [len(h) for h in halves]
    if all(h.dtype != object and h.ndim in (1, 2) for h in halves):
        allv = np.concatenate(halves)
        labels, inverse = np.unique(allv, return_inverse=True, axis=0 if allv.ndim == 2 else None)
        inverse = inverse.reshape(-1)
        label_list: list[object] = [
            tuple(row) if allv.ndim == 2 else row for row in labels.tolist()
        ]
    else:
        index: dict[object, int] = {}
        flat: list[int] = []
        for h in halves:
            for v in h.tolist():
                key = tuple(v) if isinstance(v, list) else v
                try:
                    flat.append(index.setdefault(key, len(index)))
                except TypeError:  # (a 3-D array's rows, dicts: "unhashable type")
                    raise InvalidParameter(
                        "the sampler's outputs must be hashable values or 1-D rows (tuples), "
                        f"got {type(key).__name__} {key!r:.80}"
                    ) from None
        inverse = np.asarray(flat, dtype=np.int64)
        label_list = list(index)
    ids = np.split(inverse.astype(np.int64), np.cumsum(sizes)[:-1])
    # Outcomes never seen in the selection halves are pooled into one cell (so the event depends
    # only on the selection data: "every outcome unseen there" is a fixed set given that data).
    seen = np.zeros(len(label_list), dtype=bool)
    seen[ids[0]] = True
    seen[ids[2]] = True
    remap = np.full(len(label_list), -1, dtype=np.int64)
    remap[seen] = np.arange(int(seen.sum()))
    unseen = int(seen.sum())
    remap[~seen] = unseen
    names: list[object] = [label_list[i] for i in np.flatnonzero(seen)] + [_UNSEEN]

    def describe(cells: IntArray) -> object:
        out = [names[int(c)] for c in sorted(cells.tolist())]
        try:
            return tuple(sorted(out, key=lambda v: (v == _UNSEEN, v)))
        except TypeError:
            return tuple(out)

    mapped = [remap[i] for i in ids]
    return _Cells(mapped[0], mapped[1], mapped[2], mapped[3], unseen + 1, describe)


def _bin_cells(halves: list[npt.NDArray[Any]], bins: object) -> _Cells:
    values = []
    for h in halves:
        try:
            v = np.asarray(h, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameter("bins= needs real-valued outputs") from None
        if v.ndim != 1 or not np.isfinite(v).all():  # (±inf gave bins with NaN edges)
            raise InvalidParameter("bins= needs a 1-D array of finite real outputs (no NaN, ±inf)")
        values.append(v)
    if isinstance(bins, int | np.integer) and not isinstance(bins, bool):
        k = _validate.integer("bins", bins, minimum=2)
        pooled = np.concatenate([values[0], values[2]])
        edges = np.unique(np.quantile(pooled, np.linspace(0.0, 1.0, k + 1)[1:-1]))
    else:
        try:
            edges = np.asarray(bins, dtype=np.float64)
        except (TypeError, ValueError):
            raise InvalidParameter(
                f"bins must be an int or a 1-D array of edges, got {bins!r}"
            ) from None
        if edges.ndim != 1 or edges.size == 0 or not np.all(np.isfinite(edges)):
            raise InvalidParameter("bins must be a non-empty 1-D array of finite edges")
        if np.any(np.diff(edges) <= 0):
            raise InvalidParameter("bin edges must be strictly increasing")
    cells = [np.searchsorted(edges, v, side="right").astype(np.int64) for v in values]
    bounds = np.concatenate([[-np.inf], edges, [np.inf]])

    def describe(chosen: IntArray) -> object:
        # Merge consecutive bins into half-open intervals [lo, hi).
        out: list[tuple[float, float]] = []
        for c in sorted(int(v) for v in chosen.tolist()):
            lo, hi = float(bounds[c]), float(bounds[c + 1])
            if out and out[-1][1] == lo:
                out[-1] = (out[-1][0], hi)
            else:
                out.append((lo, hi))
        return tuple(out)

    return _Cells(cells[0], cells[1], cells[2], cells[3], edges.size + 1, describe)


# -- choosing events ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Choice:
    score: float
    forward: bool  # E likelier under x
    members: IntArray | int  # cell ids (threshold sets) or the index of a given event


def _best_threshold_set(
    cells: _Cells, n_sel: int, level: float, delta: float, forward: bool
) -> _Choice:
    a = np.bincount(cells.x_sel, minlength=cells.count).astype(np.float64)
    b = np.bincount(cells.xp_sel, minlength=cells.count).astype(np.float64)
    if not forward:
        a, b = b, a
    llr = np.log((a + 0.5) / (b + 0.5))
    order = np.argsort(-llr, kind="stable")
    score, _, _ = _log_ratio_bound(np.cumsum(a[order]), np.cumsum(b[order]), n_sel, level, delta)
    j = int(np.argmax(score))
    return _Choice(float(score[j]), forward, np.sort(order[: j + 1]))


def _event_hits(event: Event, outputs: npt.NDArray[Any]) -> int:
    if callable(event):
        hits = np.asarray(event(outputs), dtype=bool)
        if hits.shape != (len(outputs),):
            raise InvalidParameter(
                f"event {_describe(event)} must return one bool per output, got shape {hits.shape}"
            )
        return int(hits.sum())
    members = set(event)
    return sum(1 for v in outputs.tolist() if (tuple(v) if isinstance(v, list) else v) in members)


def _check_events(events: object) -> list[Event]:
    if isinstance(events, str | bytes) or not isinstance(events, Sequence):
        raise InvalidParameter(f"events must be a sequence of events, got {_describe(events)}")
    out = list(events)
    if not out:
        raise InvalidParameter("events must not be empty")
    for e in out:
        if not callable(e) and not isinstance(e, Collection):
            raise InvalidParameter(
                f"each event must be a callable (outputs -> bools) or a collection of outcomes, "
                f"got {_describe(e)}"
            )
    return out


# -- entry points -------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Data:
    x_sel: npt.NDArray[Any]
    x_est: npt.NDArray[Any]
    xp_sel: npt.NDArray[Any]
    xp_est: npt.NDArray[Any]
    n_sel: int
    n_est: int


def _collect(
    sampler: object,
    x: object,
    x_prime: object,
    n: object,
    rng: RNGLike,
    progress: bool | None,
) -> _Data:
    if not callable(sampler):
        raise InvalidParameter(
            f"sampler must be callable as sampler(x, size, rng), got {sampler!r}"
        )
    nn = _validate.integer("n", n, minimum=4)
    if progress is not None and not isinstance(progress, bool):
        raise InvalidParameter(f"progress must be None or a bool, got {progress!r}")
    gen = as_generator(rng)
    with _Progress(progress, 2 * nn) as bar:
        xs = _draw(sampler, x, nn, gen, bar)
        xps = _draw(sampler, x_prime, nn, gen, bar)
    if xs.shape[1:] != xps.shape[1:]:
        raise InvalidParameter(
            f"outputs on x and x_prime have different shapes ({xs.shape[1:]} vs {xps.shape[1:]})"
        )
    n_sel = nn // 2
    return _Data(xs[:n_sel], xs[n_sel:], xps[:n_sel], xps[n_sel:], n_sel, nn - n_sel)


def _confidence(confidence: object) -> float:
    c = _validate.real("confidence", confidence)
    if not 0.0 < c < 1.0:
        raise InvalidParameter(f"confidence must be in (0, 1), got {c!r}")
    return c


def _cells(data: _Data, bins: object) -> _Cells:
    halves = [data.x_sel, data.x_est, data.xp_sel, data.xp_est]
    if bins is not None:
        return _bin_cells(halves, bins)
    return _discrete_cells(halves)


def sample(
    sampler: Sampler,
    x: object,
    x_prime: object,
    n: int,
    *,
    confidence: float = 0.95,
    delta: float = 0.0,
    claim: Guarantee | None = None,
    bins: int | npt.ArrayLike | None = None,
    events: Sequence[Event] | None = None,
    rng: RNGLike = None,
    progress: bool | None = None,
) -> SampleReport | RangeSampleReport:
    """Statistical audit of a black-box sampler on two inputs: a lower bound on ε.

    Args:
        sampler: ``sampler(x, size, rng)`` returning ``size`` i.i.d. outputs (an array: hashable
            values, rows for tuples such as top-k outputs; real numbers need ``bins`` or
            ``events``).
        x: the first input.
        x_prime: the second input.
        n: draws per input (half choose the event, half estimate).
        confidence: probability that the bound is valid (the bound exceeds the truth with
            probability at most 1 − confidence).
        delta: the δ of the bound ε ≥ log((P(E) − δ)/P′(E)).
        claim: a guarantee to test: the report says whether ε_lo exceeds ``claim.epsilon(delta)``.
            A :class:`~sharpdp.BoundedRange` claim runs :func:`sample_bounded_range` instead.
        bins: for real outputs, bin edges or a number of bins (edges at quantiles of the pooled
            selection halves); events are then unions of bins.
        events: instead of threshold sets, a family of candidate events (callables mapping an
            output array to a bool array, or collections of outcomes); the best one is chosen on
            the selection halves.
        rng: a seed or a ``numpy.random.Generator`` (passed to ``sampler``).
        progress: show a rich progress bar (default: when stderr is a terminal and rich is
            installed; never required).

    Returns:
        A :class:`SampleReport` (a :class:`RangeSampleReport` for a bounded-range claim).
    """
    if isinstance(claim, BoundedRange):
        if delta != 0.0:
            raise InvalidParameter(f"delta does not apply to a bounded-range claim, got {delta!r}")
        return sample_bounded_range(
            sampler, x, x_prime, n, confidence=confidence, claim=claim, bins=bins,
            events=events, rng=rng, progress=progress,
        )  # fmt: skip
    start = time.perf_counter()
    conf = _confidence(confidence)
    d = _validate.real("delta", delta)
    if not 0.0 <= d < 1.0:
        raise InvalidParameter(f"delta must be in [0, 1), got {d!r}")
    if claim is not None and not isinstance(claim, Guarantee):
        raise InvalidParameter(f"claim must be a sharpdp guarantee or mechanism, got {claim!r}")
    claimed: float | None = None
    if claim is not None:
        try:
            claimed = claim.epsilon(d)
        except NotImplied as err:
            raise InvalidParameter(f"the claim {claim!r} gives no ε at δ={d}: {err}") from None
    family = None if events is None else _check_events(events)
    if family is not None and bins is not None:
        raise InvalidParameter("pass at most one of bins= and events=")
    data = _collect(sampler, x, x_prime, n, rng, progress)
    level = (1.0 - conf) / 2.0
    if family is None:
        cells = _cells(data, bins)
        best = max(
            (_best_threshold_set(cells, data.n_sel, level, d, fw) for fw in (True, False)),
            key=lambda c: c.score,
        )
        members = np.asarray(best.members)
        x_hits = int(np.isin(cells.x_est, members).sum())
        xp_hits = int(np.isin(cells.xp_est, members).sum())
        event = cells.describe(members)
    else:
        sel = np.array(
            [[_event_hits(e, data.x_sel), _event_hits(e, data.xp_sel)] for e in family],
            dtype=np.float64,
        )
        f, _, _ = _log_ratio_bound(sel[:, 0], sel[:, 1], data.n_sel, level, d)
        g, _, _ = _log_ratio_bound(sel[:, 1], sel[:, 0], data.n_sel, level, d)
        i_f, i_g = int(np.argmax(f)), int(np.argmax(g))
        forward = bool(f[i_f] >= g[i_g])
        chosen = family[i_f if forward else i_g]
        best = _Choice(0.0, forward, i_f if forward else i_g)
        x_hits, xp_hits = _event_hits(chosen, data.x_est), _event_hits(chosen, data.xp_est)
        event = chosen
    hits = (x_hits, xp_hits) if best.forward else (xp_hits, x_hits)
    value, lo, hi = _log_ratio_bound(
        np.array([hits[0]], dtype=np.float64), np.array([hits[1]], dtype=np.float64),
        data.n_est, level, d,
    )  # fmt: skip
    eps_lo = max(0.0, float(value[0]))
    return SampleReport(
        epsilon_lower=eps_lo,
        delta=d,
        confidence=conf,
        n=data.n_sel + data.n_est,
        n_selection=data.n_sel,
        n_estimation=data.n_est,
        event=event,
        likelier="x" if best.forward else "x_prime",
        counts=hits,
        p_lower=float(lo[0]),
        p_other_upper=float(hi[0]),
        seconds=time.perf_counter() - start,
        claim=claim,
        claimed_epsilon=claimed,
    )


def sample_bounded_range(
    sampler: Sampler,
    x: object,
    x_prime: object,
    n: int,
    *,
    confidence: float = 0.95,
    claim: BoundedRange | None = None,
    bins: int | npt.ArrayLike | None = None,
    events: Sequence[Event] | None = None,
    rng: RNGLike = None,
    progress: bool | None = None,
) -> RangeSampleReport:
    """Statistical audit of the bounded-range spread sup Z − inf Z of a black-box sampler.

    Chooses, on the selection halves, E1 (likelier under x) and E2 (likelier under x′), and
    bounds log(P(E1)/P′(E1)) + log(P′(E2)/P(E2)) from below with four Clopper–Pearson bounds at
    level (1 − confidence)/4 each on the estimation halves (see the module docstring).

    Args:
        sampler, x, x_prime, n, confidence, bins, events, rng, progress: as for :func:`sample`.
        claim: a :class:`~sharpdp.BoundedRange` to test (refuted when the bound exceeds its η).

    Returns:
        A :class:`RangeSampleReport`.
    """
    start = time.perf_counter()
    conf = _confidence(confidence)
    if claim is not None and not isinstance(claim, BoundedRange):
        raise InvalidParameter(f"claim must be a BoundedRange, got {claim!r}")
    family = None if events is None else _check_events(events)
    if family is not None and bins is not None:
        raise InvalidParameter("pass at most one of bins= and events=")
    data = _collect(sampler, x, x_prime, n, rng, progress)
    level = (1.0 - conf) / 4.0
    if family is None:
        cells = _cells(data, bins)
        high = _best_threshold_set(cells, data.n_sel, level, 0.0, True)
        low = _best_threshold_set(cells, data.n_sel, level, 0.0, False)
        m_high, m_low = np.asarray(high.members), np.asarray(low.members)
        hits = (
            int(np.isin(cells.x_est, m_high).sum()),
            int(np.isin(cells.xp_est, m_high).sum()),
            int(np.isin(cells.xp_est, m_low).sum()),
            int(np.isin(cells.x_est, m_low).sum()),
        )
        event_high, event_low = cells.describe(m_high), cells.describe(m_low)
    else:
        sel = np.array(
            [[_event_hits(e, data.x_sel), _event_hits(e, data.xp_sel)] for e in family],
            dtype=np.float64,
        )
        f, _, _ = _log_ratio_bound(sel[:, 0], sel[:, 1], data.n_sel, level, 0.0)
        g, _, _ = _log_ratio_bound(sel[:, 1], sel[:, 0], data.n_sel, level, 0.0)
        event_high, event_low = family[int(np.argmax(f))], family[int(np.argmax(g))]
        hits = (
            _event_hits(event_high, data.x_est),
            _event_hits(event_high, data.xp_est),
            _event_hits(event_low, data.xp_est),
            _event_hits(event_low, data.x_est),
        )
    k = np.array(hits, dtype=np.float64)
    lo, hi = clopper_pearson(k, data.n_est, level)
    bounds = (float(lo[0]), float(hi[1]), float(lo[2]), float(hi[3]))
    if bounds[0] > 0.0 and bounds[2] > 0.0:
        spread = (
            math.log(bounds[0]) - math.log(bounds[1]) + math.log(bounds[2]) - math.log(bounds[3])
        )
    else:
        spread = 0.0
    return RangeSampleReport(
        spread_lower=max(0.0, spread),
        confidence=conf,
        n=data.n_sel + data.n_est,
        n_selection=data.n_sel,
        n_estimation=data.n_est,
        event_high=event_high,
        event_low=event_low,
        counts=hits,
        bounds=bounds,
        seconds=time.perf_counter() - start,
        claim=claim,
    )

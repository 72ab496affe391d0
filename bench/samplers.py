"""Throughput of sharpdp's exact samplers against OpenDP's and numpy's (float, inexact) samplers.

Run: ``python bench/samplers.py [--n 1000000] [--repeats 3]``.

For each distribution and parameter, draws ``n`` samples and reports the best of ``repeats`` runs
in samples per second:

* sharpdp: ``discrete_gaussian(sigma, size=n)`` / ``discrete_laplace(scale, size=n)`` (exact,
  CKS20 on numpy arrays), returning an int64 array;
* OpenDP: ``make_gaussian`` / ``make_laplace`` on ``vector_domain(atom_domain(T=int), size=n)``,
  applied to a zero vector (exact, CKS20 in Rust; the time includes OpenDP's conversion of the
  Python list in and out, which is part of using it from Python). Needs ``pip install opendp``;
  the column is skipped if it is not installed;
* numpy: ``rng.normal`` / ``rng.laplace`` (continuous floats, *not* exact or discrete; shown as
  the speed of light of noise generation in numpy).

A second table gives the latency of a single draw (microseconds), where per-call overhead
dominates. A third times exact selection over ``--candidates`` scores (default 10^7):
``Exponential.select`` and ``TopK(10).select`` (exact races, see ``sharpdp.mechanisms._race``)
against a plain numpy float Gumbel-argmax (``argmax(c·q + rng.gumbel(size=n))``, resp.
``argpartition`` for the top 10), which is fast but not exact.
With the defaults the whole run takes about 3 minutes, nearly all of it in OpenDP.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

try:
    from sharpdp.mechanisms import _samplers as samplers
except ImportError:  # running from a checkout without installing
    sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))
    from sharpdp.mechanisms import _samplers as samplers

dp: Any = None  # opendp.prelude, if installed
OPENDP: str | None = None  # its version
try:
    import opendp.prelude as _opendp

    _opendp.enable_features("contrib")
    dp, OPENDP = _opendp, importlib.metadata.version("opendp")
except ImportError:
    pass

CASES: list[tuple[str, float]] = [
    ("gaussian", 1.0),
    ("gaussian", 10.0),
    ("gaussian", 1000.0),
    ("gaussian", 3.7),  # a float that is not a short dyadic: σ² has ~100-bit terms
    ("laplace", 1.0),
    ("laplace", 10.0),
    ("laplace", 1000.0),
    ("laplace", 3.7),
]


def best_time(run: Callable[[], object], repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        best = min(best, time.perf_counter() - start)
    return best


def sharpdp_runner(kind: str, param: float, n: int | None) -> Callable[[], object]:
    rng = np.random.default_rng(1)
    if kind == "gaussian":
        return lambda: samplers.discrete_gaussian(param, size=n, rng=rng)
    return lambda: samplers.discrete_laplace(param, size=n, rng=rng)


def opendp_runner(kind: str, param: float, n: int | None) -> Callable[[], object] | None:
    if dp is None:
        return None
    make: Any = dp.m.make_gaussian if kind == "gaussian" else dp.m.make_laplace
    if n is None:
        metric = dp.absolute_distance(T=int)
        meas = make(dp.atom_domain(T=int), metric, scale=param)
        return lambda: meas(0)
    metric = dp.l2_distance(T=int) if kind == "gaussian" else dp.l1_distance(T=int)
    meas = make(dp.vector_domain(dp.atom_domain(T=int), size=n), metric, scale=param)
    zeros = [0] * n
    return lambda: meas(zeros)


def numpy_runner(kind: str, param: float, n: int | None) -> Callable[[], object]:
    rng = np.random.default_rng(1)
    if kind == "gaussian":
        return lambda: rng.normal(0.0, param, size=n)
    return lambda: rng.laplace(0.0, param, size=n)


def throughput_table(n: int, repeats: int) -> None:
    print(f"Throughput, samples/s, best of {repeats} runs of n = {n:,} samples")
    header = f"{'distribution':<22}{'sharpdp':>12}"
    if OPENDP is not None:
        header += f"{'OpenDP':>12}{'sharpdp/OpenDP':>16}"
    header += f"{'numpy float':>14}{'sharpdp/numpy':>15}"
    print(header)
    print("-" * len(header))
    for kind, param in CASES:
        name = f"{kind} {'sigma' if kind == 'gaussian' else 'scale'}={param:g}"
        ours = n / best_time(sharpdp_runner(kind, param, n), repeats)
        row = f"{name:<22}{ours:>12.3g}"
        runner = opendp_runner(kind, param, n)
        if runner is not None:
            theirs = n / best_time(runner, repeats)
            row += f"{theirs:>12.3g}{ours / theirs:>16.1f}"
        flt = n / best_time(numpy_runner(kind, param, n), repeats)
        row += f"{flt:>14.3g}{ours / flt:>15.2f}"
        print(row)


def latency_table(calls: int) -> None:
    print(f"\nLatency of one draw (size=None), microseconds, mean of {calls} calls")
    columns = ["sharpdp", *(["OpenDP"] if OPENDP is not None else []), "numpy float"]
    header = f"{'distribution':<22}" + "".join(f"{c:>14}" for c in columns)
    print(header)
    print("-" * len(header))
    for kind, param in CASES:
        name = f"{kind} {'sigma' if kind == 'gaussian' else 'scale'}={param:g}"
        runners = [sharpdp_runner(kind, param, None), numpy_runner(kind, param, None)]
        theirs = opendp_runner(kind, param, None)
        if theirs is not None:
            runners.insert(1, theirs)
        row = f"{name:<22}"
        for run in runners:

            def many(run: Callable[[], object] = run) -> None:
                for _ in range(calls):
                    run()

            row += f"{best_time(many, 1) / calls * 1e6:>14.1f}"
        print(row)


def selection_table(n: int, repeats: int) -> None:
    import sharpdp as sdp

    print(f"\nExact selection over n = {n:,} scores, seconds (best of {repeats})")
    rng = np.random.default_rng(0)
    q = rng.normal(size=n) * 10.0
    c = 0.5  # ε = 1, Δ = 1: c = ε/(2Δ)
    rows = [
        ("Exponential.select", lambda: sdp.Exponential(1.0).select(q, rng=rng),
         lambda: int(np.argmax(c * q + rng.gumbel(size=n)))),
        ("TopK(10).select", lambda: sdp.TopK(10, 1.0).select(q, rng=rng),
         lambda: np.argpartition(-(c * q + rng.gumbel(size=n)), 10)[:10]),
    ]
    header = f"{'mechanism':<22}{'sharpdp (exact)':>18}{'numpy Gumbel':>16}{'ratio':>9}"
    print(header)
    print("-" * len(header))
    for name, ours, base in rows:
        t_ours, t_base = best_time(ours, repeats), best_time(base, repeats)
        print(f"{name:<22}{t_ours:>18.3f}{t_base:>16.3f}{t_ours / t_base:>8.2f}x")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=1_000_000, help="samples per run")
    parser.add_argument("--repeats", type=int, default=3, help="runs per measurement (best kept)")
    parser.add_argument("--calls", type=int, default=2000, help="calls for the latency table")
    parser.add_argument("--candidates", type=int, default=10**7, help="scores for selection")
    parser.add_argument("--only-selection", action="store_true", help="skip the sampler tables")
    args = parser.parse_args()
    print(f"numpy {np.__version__}; python {sys.version.split()[0]}")
    if OPENDP is None:
        print("note: opendp is not installed (pip install opendp); its column is skipped")
    else:
        print(f"opendp {OPENDP}")
    if not args.only_selection:
        throughput_table(args.n, args.repeats)
        latency_table(args.calls)
    selection_table(args.candidates, args.repeats)


if __name__ == "__main__":
    main()

"""smartnoise-synth 1.0.8's MWEM (``snsynth.mwem.MWEMSynthesizer``) on one table, in its own venv.

Job (``--job '{...}'``): ``parquet`` (the table), ``columns`` (the categorical columns the
synthesizer sees), ``domains`` (column -> its public values), ``epsilon``, ``seed``, and
``options`` (keyword arguments for the synthesizer: ``{}`` for its defaults, or e.g.
``{"marginal_width": 2}``).

What it does: ``Synthesizer.create("mwem", epsilon=ε, **options)`` (pure ε-DP: MWEM has no δ),
fitted on the columns with every one of them declared categorical. The categorical encoding is
fitted on a public frame holding every domain value (so it spends nothing and the codes do not
depend on which values the private data happens to contain); ``fit`` is given that transformer.
Python's ``random`` and numpy's global generator are seeded with ``seed`` (the query selection);
the Laplace measurements come from OpenDP's own generator, which cannot be seeded, so runs are
not reproducible bit for bit.

Output (the last stdout line, JSON): ``seconds`` (the ``fit``, which is the whole algorithm;
reading the file excluded), ``iterations``, ``queries`` (the size of its query pool), ``spent``
(the ε its own accountant adds up) and ``cells``: the synthetic histogram MWEM ends with, as
``[value, value, ..., weight]`` rows in the original values, weights summing to the table's n.
The driver answers any workload from those cells. Using the histogram, not ``sample(n)``, keeps
the sampling noise (and ``sample``'s per-row Python loop) out: it is MWEM's own answer, scaled
to n, as sharpdp's ``syn.answer`` is.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "engine_peers"))

from _common import Clock, emit


def run(job: dict[str, Any]) -> dict[str, Any]:
    import random
    import warnings

    import numpy as np
    import pandas as pd
    from snsynth import Synthesizer
    from snsynth.transform.table import TableTransformer

    warnings.simplefilter("ignore")
    cols = list(job["columns"])
    df = pd.read_parquet(job["parquet"], columns=cols)
    domains = {c: list(job["domains"][c]) for c in cols}
    width = max(len(v) for v in domains.values())
    # every domain value at least once: the public frame the encoding is fitted on
    public = pd.DataFrame({c: [v[i % len(v)] for i in range(width)] for c, v in domains.items()})
    public = public.astype(df.dtypes.to_dict())
    transformer = TableTransformer.create(public, style="cube", categorical_columns=cols)
    transformer.fit(public)

    random.seed(job["seed"])
    np.random.seed(job["seed"])  # noqa: NPY002  (smartnoise draws from numpy's global generator)
    synth = Synthesizer.create("mwem", epsilon=float(job["epsilon"]), **job.get("options", {}))
    clock = Clock()
    synth.fit(df, transformer=transformer, categorical_columns=cols)
    seconds = clock()

    (fake, _, split), *rest = synth.synthetic_histograms
    if rest:
        raise RuntimeError("more than one histogram (splits): not handled")
    idx = np.array(np.unravel_index(np.arange(fake.size), fake.shape)).T  # cell -> index tuple
    codes = np.empty_like(idx)
    for j, col in enumerate(split):
        lo, _ = synth.mins_maxes[str(col)]
        codes[:, list(split).index(col)] = idx[:, j] + int(lo)
    codes = codes[:, np.argsort(list(split))]  # back to the columns' order
    values = transformer.inverse_transform(codes)  # a DataFrame when fitted on one
    values = values.itertuples(index=False, name=None) if hasattr(values, "columns") else values
    weights = np.ravel(fake)
    cells = [
        [*(v.item() if hasattr(v, "item") else v for v in row), float(w)]
        for row, w in zip(values, weights, strict=True)
        if w > 0
    ]
    h = synth.histograms[0]
    return {
        "seconds": seconds,
        "iterations": int(h.iterations),
        "queries": int(h.n_queries),
        "spent": float(synth.spent),
        "n": len(df),
        "cells": cells,
    }


if __name__ == "__main__":
    emit(run)

"""PipelineDP 0.3 (local backend): bounded count per key with unknown keys.

``DPEngine.aggregate`` with ``Metrics.COUNT`` (Laplace), ``max_partitions_contributed`` and
``max_contributions_per_partition``, no public partitions (default truncated-geometric partition
selection), under ``NaiveBudgetAccountant(ε, δ)``, which splits the budget between the
selection and the count. ``output_noise_stddev=True`` gives the count's noise standard
deviation; the Laplace scale is σ/√2. Rows are handed over as a list of tuples built outside
the timing (reading the file).
"""

from __future__ import annotations

import math
from typing import Any

from _common import Clock, emit


def run(job: dict[str, Any]) -> dict[str, Any]:
    import pandas as pd
    import pipeline_dp

    unit, key = job["unit"], job["key"]
    df = pd.read_parquet(job["parquet"], columns=[unit, key])
    rows = list(zip(df[unit].tolist(), df[key].tolist(), strict=False))
    del df

    clock = Clock()
    accountant = pipeline_dp.NaiveBudgetAccountant(
        total_epsilon=job["epsilon"], total_delta=job["delta"]
    )
    engine = pipeline_dp.DPEngine(accountant, pipeline_dp.LocalBackend())
    params = pipeline_dp.AggregateParams(
        noise_kind=pipeline_dp.NoiseKind.LAPLACE,
        metrics=[pipeline_dp.Metrics.COUNT],
        max_partitions_contributed=job["max_groups"],
        max_contributions_per_partition=job["max_rows"],
        output_noise_stddev=True,
    )
    extractors = pipeline_dp.DataExtractors(
        privacy_id_extractor=lambda r: r[0],
        partition_extractor=lambda r: r[1],
        value_extractor=lambda r: 0,
    )
    result = engine.aggregate(rows, params, extractors)
    accountant.compute_budgets()
    released = list(result)
    seconds = clock()

    stddevs = {getattr(m, "count_noise_stddev", None) for _, m in released}
    stddevs.discard(None)
    sigma = next(iter(stddevs)) if stddevs else math.nan
    specs = "; ".join(
        f"{m.mechanism_spec.mechanism_type.name} ε={m.mechanism_spec.eps:g} "
        f"δ={m.mechanism_spec.delta:g}"
        for m in accountant._mechanisms
    )
    return {
        "seconds": seconds,
        "keys": len(released),
        "law": "laplace",
        "scale": sigma / math.sqrt(2),
        "note": f"budget split: {specs}",
    }


if __name__ == "__main__":
    emit(run)

"""OpenDP 0.16 + Polars: bounded count per key with unknown keys (threshold on ``dp.len``).

``truncate_per_group(max_rows, keep="sample")`` then ``truncate_num_groups(max_groups,
keep="first")``: ``keep="sample"`` (the default) crashes in ``truncate_num_groups`` under the
Polars that opendp 0.16 pins ("multiple fields with name ..."), reported in ``note``. The noise
law and scale are read from ``summarize()``; the calibration time is that of ``resolve()`` on
a fresh identical query, timed apart (``release()`` resolves too, so it is part of the total).
A probe re-runs OpenDP's own truncation expression (``rank("dense") < k``) in plain Polars,
outside the timing, to count how many keys a person really keeps.
"""

from __future__ import annotations

import time
from typing import Any

from _common import Clock, emit


def run(job: dict[str, Any]) -> dict[str, Any]:
    import warnings

    import opendp.prelude as dp
    import polars as pl

    warnings.simplefilter("ignore")
    dp.enable_features("contrib")
    unit, key = job["unit"], job["key"]
    df = pl.read_parquet(job["parquet"], columns=[unit, key])

    def query() -> Any:
        ctx = dp.Context.compositor(
            data=df.lazy(),
            privacy_unit=dp.unit_of(contributions=1, identifier=pl.col(unit)),
            privacy_loss=dp.loss_of(epsilon=job["epsilon"], delta=job["delta"]),
            split_evenly_over=1,
        )
        return (
            ctx.query()
            .truncate_per_group(job["max_rows"], by=[key], keep="sample")
            .truncate_num_groups(job["max_groups"], by=[key], keep="first")
            .group_by(key)
            .agg(dp.len())
        )

    clock = Clock()
    released = query().release().collect()
    seconds = clock()

    notes = []
    try:  # the default keep="sample" of truncate_num_groups (after the timing: no warm-up)
        ctx = dp.Context.compositor(
            data=df.head(1000).lazy(),
            privacy_unit=dp.unit_of(contributions=1, identifier=pl.col(unit)),
            privacy_loss=dp.loss_of(epsilon=job["epsilon"], delta=job["delta"]),
            split_evenly_over=1,
        )
        (
            ctx.query()
            .truncate_per_group(1, by=[key])
            .truncate_num_groups(3, by=[key])
            .group_by(key)
            .agg(dp.len())
            .release()
            .collect()
        )
    except Exception as exc:
        msg = str(exc)
        why = "multiple fields with name" if "multiple fields with name" in msg else msg[:60]
        notes.append(f"truncate_num_groups(keep='sample') (the default) crashes: {why!r}")

    t0 = time.perf_counter()  # calibration alone, on a fresh identical query (not in `seconds`)
    query().resolve()
    calib = time.perf_counter() - t0
    summary = query().summarize(alpha=0.05)
    row = summary.row(0, named=True)
    law = (
        "dlaplace"
        if "Integer Laplace" in row["distribution"]
        else ("laplace" if "Laplace" in row["distribution"] else "gaussian")
    )

    kept = (
        df.filter(pl.int_range(pl.len()).over(unit, key) < job["max_rows"])
        .filter(pl.struct(key).rank("dense").over(unit) < job["max_groups"])
        .group_by(unit)
        .agg(pl.col(key).n_unique().alias("g"))["g"]
        .max()
    )
    notes.append(
        f"truncate_num_groups({job['max_groups']}) keeps ≤{kept} keys/person, "
        f"threshold {row.get('threshold')}"
    )
    return {
        "seconds": seconds,
        "calib_seconds": calib,
        "keys": released.height,
        "law": law,
        "scale": float(row["scale"]),
        "accuracy95": row.get("accuracy"),
        "note": "; ".join(notes),
    }


if __name__ == "__main__":
    emit(run)

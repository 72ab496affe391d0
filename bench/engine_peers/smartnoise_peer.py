"""SmartNoise SQL 1.0 (pandas reader): ``SELECT key, COUNT(*) FROM t GROUP BY key``.

SmartNoise bounds only the rows per person in total (``max_ids``), not rows per key: the table
is reduced to distinct (person, key) pairs first (in pandas, inside the timing), so that
``max_ids = max_groups`` means "max_groups keys, one row each". Unknown keys are censored by a
noisy ``COUNT(DISTINCT person)`` threshold (``censor_dims``). ``Privacy(ε, δ)`` is *per
mechanism*: the grouped count uses two (the count and the threshold's key count), so the script
asks ``get_privacy_cost`` what ``Privacy(ε, δ)`` costs and runs at ε·ε/cost and δ·δ/cost (the
threshold's δ is charged 1.5δ), which spends the requested total; the note shows both. Noise:
the count mechanism's own ``scale`` (OpenDP's continuous Laplace on the count as a float) and
``get_simple_accuracy(0.05)``.
"""

from __future__ import annotations

from typing import Any

from _common import Clock, emit


def run(job: dict[str, Any]) -> dict[str, Any]:
    import warnings

    import pandas as pd
    import snsql

    warnings.simplefilter("ignore")
    unit, key = job["unit"], job["key"]
    df = pd.read_parquet(job["parquet"], columns=[unit, key])
    ut = "int" if df[unit].dtype.kind in "iu" else "string"
    kt = "int" if df[key].dtype.kind in "iu" else "string"

    def metadata(max_ids: int) -> dict[str, Any]:
        return {
            "bench": {
                "bench": {
                    "t": {
                        "max_ids": max_ids,
                        "row_privacy": False,
                        "censor_dims": True,
                        unit: {"type": ut, "private_id": True},
                        key: {"type": kt},
                    }
                }
            }
        }

    sql = f"SELECT {key}, COUNT(*) AS n FROM bench.t GROUP BY {key}"
    eps, delta = job["epsilon"], job["delta"]
    clock = Clock()  # the cost probe is calibration: a user needs it to spend (ε, δ) in total
    probe = snsql.from_df(
        df.head(10),
        privacy=snsql.Privacy(epsilon=eps, delta=delta),
        metadata=metadata(job["max_groups"]),
    )
    cost_eps, cost_delta = probe.get_privacy_cost(sql)
    eps_run = eps * eps / cost_eps
    delta_run = delta * delta / cost_delta if cost_delta > 0 else delta
    calib = clock()
    pairs = df.drop_duplicates([unit, key]) if job["max_rows"] == 1 else df
    reader = snsql.from_df(
        pairs,
        privacy=snsql.Privacy(epsilon=eps_run, delta=delta_run),
        metadata=metadata(job["max_groups"]),
    )
    released = reader.execute(sql)
    seconds = clock()
    spent = tuple(float(x) for x in reader.odometer.spent)

    subquery, _ = reader._rewrite(sql)
    mechs = reader._get_mechanism_map(subquery)
    count_mech = next(
        (
            m
            for name, m in mechs.items()
            if "count" in name.lower() and "keycount" not in name.lower()
        ),
        None,
    )
    scale = float(count_mech.scale) if count_mech is not None else float("nan")
    acc = reader.get_simple_accuracy(sql, 0.05)
    acc95 = next((a for a in acc if a is not None), None)
    keys = len(released) - 1 if isinstance(released, list) else len(released)
    return {
        "seconds": seconds,
        "calib_seconds": calib,
        "keys": keys,
        "law": "laplace",
        "scale": scale,
        "accuracy95": acc95,
        "note": (
            f"Privacy(ε={eps:g}) costs ε={cost_eps:g}, δ={cost_delta:g} → run at "
            f"Privacy(ε={eps_run:g}, δ={delta_run:.3g}); odometer spent ({spent[0]:.4g}, "
            f"{spent[1]:.3g})"
            f"; its 95% accuracy ±{acc95:.1f}"
            if acc95
            else ""
        ),
    }


if __name__ == "__main__":
    emit(run)

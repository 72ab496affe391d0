"""Tumult Analytics 0.21 (Spark local mode): bounded count per key with unknown keys.

``Session.from_dataframe(ApproxDPBudget(ε, δ), protected_change=AddRowsWithID(unit))``;
``QueryBuilder.enforce(MaxRowsPerGroupPerID(key, max_rows)).enforce(MaxGroupsPerID(key,
max_groups)).groupby([key]).count()`` with the (experimental) ``auto_partition_selection``
feature: half of ε and all of δ to the geometric partition selection, half of ε to the count.
Noise law and scale from ``Session._noise_info`` (the only place Tumult exposes it), asked
after the timing on a fresh session. The Spark
DataFrame is read and cached before the timing. The driver sets ``PYSPARK_PYTHON`` to this
venv's python: without it Spark's workers start whatever ``python3`` is on the PATH (probed
with ``--probe-pyspark-python``).
"""

from __future__ import annotations

import os
import sys
from typing import Any

from _common import Clock, emit


def spark_session():
    from pyspark.sql import SparkSession

    return (
        SparkSession.builder.master("local[2]")
        .appName("tumult-bench")
        .config("spark.driver.memory", "8g")
        .config("spark.sql.shuffle.partitions", "8")
        .config("spark.ui.enabled", "false")
        .getOrCreate()
    )


def run(job: dict[str, Any]) -> dict[str, Any]:
    import warnings

    warnings.simplefilter("ignore")
    from tmlt.analytics import (
        AddRowsWithID,
        ApproxDPBudget,
        MaxGroupsPerID,
        MaxRowsPerGroupPerID,
        QueryBuilder,
        Session,
    )
    from tmlt.analytics.config import config

    config.features.auto_partition_selection.enable()
    unit, key = job["unit"], job["key"]
    spark = spark_session()
    spark.sparkContext.setLogLevel("ERROR")
    sdf = spark.read.parquet(job["parquet"]).select(unit, key).cache()
    sdf.count()

    budget = ApproxDPBudget(job["epsilon"], job["delta"])

    def query() -> Any:
        return (
            QueryBuilder("t")
            .enforce(MaxRowsPerGroupPerID(key, job["max_rows"]))
            .enforce(MaxGroupsPerID(key, job["max_groups"]))
            .groupby([key])
            .count()
        )

    clock = Clock()
    session = Session.from_dataframe(
        privacy_budget=budget, source_id="t", dataframe=sdf, protected_change=AddRowsWithID(unit)
    )
    released = session.evaluate(query(), budget).toPandas()
    seconds = clock()
    fresh = Session.from_dataframe(
        privacy_budget=budget, source_id="t", dataframe=sdf, protected_change=AddRowsWithID(unit)
    )
    info = fresh._noise_info(query(), budget)  # after the timing, on a fresh session

    mech = [i for i in info if "noise_mechanism" in i]
    law, scale = "dlaplace", float("nan")
    if mech:
        name = mech[-1]["noise_mechanism"].name
        scale = float(mech[-1]["noise_parameter"])
        law = {
            "GEOMETRIC": "dlaplace",
            "LAPLACE": "laplace",
            "GAUSSIAN": "gaussian",
            "DISCRETE_GAUSSIAN": "dgaussian",
        }.get(name, name.lower())
        if law == "dgaussian":
            scale = scale**0.5  # Tumult reports σ² for the Gaussians
    return {
        "seconds": seconds,
        "keys": len(released),
        "law": law,
        "scale": scale,
        "note": "noise info: "
        + "; ".join(f"{i['noise_mechanism'].name} {float(i['noise_parameter']):g}" for i in mech)
        + f"; PYSPARK_PYTHON={'set' if os.environ.get('PYSPARK_PYTHON') else 'unset'}",
    }


if __name__ == "__main__":
    if "--probe-pyspark-python" in sys.argv:
        sys.argv.remove("--probe-pyspark-python")
        os.environ.pop("PYSPARK_PYTHON", None)
    emit(run)

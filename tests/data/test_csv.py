"""CSV files: every value is parsed when the session opens (never in an analyst's query), and
declared column types (``schema=``) that no value can change.

DuckDB infers a CSV's column types from a sample of its first 20,480 rows and parses a column
only when a query reads it, so a value past the sample that does not parse as the inferred type
used to fail exactly the queries that read its column, before any spend: a free bit telling
whether some person holds such a value. Expected values below come from pandas' own parsing.
"""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest
from typer.testing import CliRunner

import sharpdp as sdp
from sharpdp.cli import app
from sharpdp.data import _engine
from sharpdp.service.app import create_app
from sharpdp.service.config import parse
from sharpdp.service.sessions import _load

ROWS = 30_000  # past DuckDB's type-inference sample (20,480 rows)
BUDGET = sdp.ApproxDP(10.0, 1e-6)
SCHEMA = {"v": "int64", "day": "date", "x": "float64"}


def _neighbours(directory: Path) -> tuple[Path, Path]:
    """Two CSV files that differ by one person, whose ``v`` is the text ``N/A``, last."""
    frame = pd.DataFrame(
        {
            "who": [f"p{i}" for i in range(ROWS)],
            "v": [str(i % 7) for i in range(ROWS)],
            "day": [f"2013-01-{1 + i % 28:02d}" for i in range(ROWS)],
            "x": [f"{(i % 5) / 4}" for i in range(ROWS)],
        }
    )
    without = directory / "without.csv"
    frame.to_csv(without, index=False)
    odd = pd.DataFrame({"who": ["victim"], "v": ["N/A"], "day": ["not a day"], "x": ["nan"]})
    with_victim = directory / "with.csv"
    pd.concat([frame, odd]).to_csv(with_victim, index=False)
    return without, with_victim


def test_a_value_past_the_inference_sample_fails_when_the_session_opens(tmp_path: Path) -> None:
    without, with_victim = _neighbours(tmp_path)
    s = sdp.data.Session(str(without), "who", BUDGET)
    assert s.table.schema()["v"].is_integer()
    assert s.sum("v", bounds=(0, 10), privacy=sdp.PureDP(1.0)).run(rng=0).to_pandas().shape[0] == 1
    with pytest.raises(sdp.InvalidParameter, match=r"cannot read .*N/A.*schema=\{column: type\}"):
        sdp.data.Session(str(with_victim), "who", BUDGET)


def test_a_file_that_is_not_utf8_text_is_refused_with_a_way_out(tmp_path: Path) -> None:
    path = tmp_path / "latin1.csv"
    path.write_bytes("who,town\n1,Zürich\n2,Genève\n".encode("latin-1"))
    with pytest.raises(sdp.InvalidParameter) as err:
        sdp.data.Session(str(path), "who", BUDGET)
    message = str(err.value)
    assert "cannot read" in message
    assert "save it as UTF-8 text" in message
    # DuckDB's own remedies name reader options that a session does not take
    assert "Possible Solution" not in message
    assert "ignore_errors" not in message


def test_declared_types_do_not_depend_on_the_values(tmp_path: Path) -> None:
    without, with_victim = _neighbours(tmp_path)
    sessions = [
        sdp.data.Session(str(p), "who", BUDGET, schema=SCHEMA) for p in (without, with_victim)
    ]
    schemas = [s.table.schema() for s in sessions]
    assert schemas[0] == schemas[1]
    assert [str(schemas[0][c]) for c in ("who", "v", "day", "x")] == [
        "string",
        "int64",
        "date",
        "float64",
    ]
    # the conversion is pandas' (a value that does not parse is NULL), row by row
    raw = pd.read_csv(with_victim, dtype=str, keep_default_na=False)
    table = sessions[1].table
    got = _engine.execute(table.get_backend(), table).sort_values("who", ignore_index=True)
    want = raw.sort_values("who", ignore_index=True)
    assert got["v"].isna().tolist() == pd.to_numeric(want["v"], errors="coerce").isna().tolist()
    assert got["v"].dropna().astype(np.int64).tolist() == [int(v) for v in want["v"] if v != "N/A"]
    days = pd.to_datetime(want["day"], format="%Y-%m-%d", errors="coerce")
    assert pd.to_datetime(got["day"]).tolist() == days.tolist()
    # "nan" parses as NaN, which the session reads as NULL, like the non-number
    assert got["x"].isna().sum() == 1
    x = pd.to_numeric(want["x"], errors="coerce")
    np.testing.assert_array_equal(got["x"].dropna(), x.dropna())
    # every query runs on both neighbours: the victim's value changes no type and no outcome
    for s in sessions:
        out = s.sum("v", bounds=(0, 10), privacy=sdp.PureDP(1.0)).run(rng=1).to_pandas()
        assert list(out.columns) == ["sum", "lower", "upper"]
    assert sessions[0].accountant.spent() == sessions[1].accountant.spent() > 0.99


@pytest.mark.parametrize(
    ("schema", "message"),
    [
        ({"nope": "int64"}, "no column 'nope' in the CSV"),
        ({"v": "integr"}, "'integr' .* is not a type"),
        ({"v": "array<int64>"}, "cannot be declared"),
        ({"v": "decimal(40, 2)"}, "cannot be declared"),  # (was DuckDB's BinderException)
        ({"v": "inet"}, "cannot be declared"),  # (DuckDB tried to download an extension)
        ({"v": "interval"}, "cannot be declared"),
        ({}, "non-empty mapping"),
        (["v"], "non-empty mapping"),
    ],
)
def test_a_bad_schema_is_refused(tmp_path: Path, schema: object, message: str) -> None:
    without, _ = _neighbours(tmp_path)
    with pytest.raises(sdp.InvalidParameter, match=message):
        sdp.data.Session(str(without), "who", BUDGET, schema=schema)  # type: ignore[arg-type]


def test_a_schema_is_for_csv_files_only(tmp_path: Path) -> None:
    frame = pd.DataFrame({"who": ["a", "b"], "v": [1, 2]})
    frame.to_parquet(tmp_path / "t.parquet")
    for table in (frame, str(tmp_path / "t.parquet")):
        with pytest.raises(sdp.InvalidParameter, match="carries its own types"):
            sdp.data.Session(table, "who", BUDGET, schema={"v": "int64"})


def test_the_query_command_takes_a_schema(tmp_path: Path) -> None:
    _, with_victim = _neighbours(tmp_path)
    base = ["query", str(with_victim), "sum", "v", "--unit", "who", "--bounds", "0,10"]
    runner = CliRunner()
    refused = runner.invoke(app, [*base, "--privacy", "pure:1"])  # main() would exit with 2
    assert isinstance(refused.exception, sdp.InvalidParameter)
    assert "--schema COL:TYPE" in str(refused.exception)
    ok = runner.invoke(
        app, [*base, "--privacy", "pure:1", "--json", "--schema", "v:int64, x:decimal(4,2)"]
    )
    assert ok.exit_code == 0, ok.output
    assert set(json.loads(ok.stdout)["rows"][0]) == {"sum", "lower", "upper"}
    bad = runner.invoke(app, [*base, "--privacy", "pure:1", "--schema", "v"])
    assert bad.exit_code == 2
    assert "COL:TYPE" in bad.output
    twice = runner.invoke(app, [*base, "--privacy", "pure:1", "--schema", "v:int64,v:date"])
    assert twice.exit_code == 2
    assert "declared twice" in twice.output
    nested = runner.invoke(app, [*base, "--privacy", "pure:1", "--schema", "v:map<string,int64>"])
    assert isinstance(nested.exception, sdp.InvalidParameter)  # one item, refused by its type
    assert "cannot be declared" in str(nested.exception)


def test_a_served_csv_takes_its_declared_types(tmp_path: Path) -> None:
    _, with_victim = _neighbours(tmp_path)
    document = {
        "ledger": {"path": "ledger.sqlite"},
        "datasets": {
            "people": {"path": with_victim.name, "privacy_unit": "who", "schema": SCHEMA},
        },
    }
    config = parse(document, tmp_path)
    [people] = config.datasets
    assert people.schema == tuple(SCHEMA.items())
    loaded = _load(people, 0)
    with _engine.quiet():
        schema = loaded.backend.table(loaded.table).schema()
    assert [str(schema[c]) for c in ("v", "day", "x")] == ["int64", "date", "float64"]
    document["datasets"]["people"]["schema"] = {"v": 3}  # type: ignore[index]
    with pytest.raises(sdp.InvalidParameter, match=r"schema\.v must be a type name"):
        parse(document, tmp_path)
    del document["datasets"]["people"]["schema"]  # type: ignore[attr-defined]
    with pytest.raises(sdp.InvalidParameter, match=r"\[datasets.people\]: .*cannot read"):
        _load(parse(document, tmp_path).datasets[0], 1)
    # a data set it cannot serve stops the service before it creates its ledger and state
    document["datasets"]["people"]["schema"] = {"v": "int64", "nope": "date"}  # type: ignore[index]
    with pytest.raises(sdp.InvalidParameter, match=r"\[datasets.people\]: schema: no column"):
        create_app(parse(document, tmp_path))
    assert not (tmp_path / "ledger.sqlite").exists()


def test_a_csv_read_as_one_column_is_named(tmp_path: Path) -> None:
    """A malformed row near the top: DuckDB read the file as one column 'person,val,day', and
    the error said "no column 'person'" instead of pointing at the file."""
    path = tmp_path / "ragged.csv"
    path.write_text("person,val,day\np1,1,2024-01-01,EXTRA\np2,2,2024-01-02\n")
    with pytest.raises(sdp.InvalidParameter, match="read as one column named 'person,val,day'"):
        sdp.data.Session(str(path), "person", BUDGET)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("who,a,a\np1,1,2\n", "names two columns 'a' and 'a'"),
        ("who;a;A\np1;1;2\n", "names two columns 'a' and 'A'"),
        ("who\tA\ta\np1\t1\t2\n", "names two columns 'A' and 'a'"),
        ("who,,a\np1,1,2\n", "leaves column 2 without a name"),
        ("who,a,b,a,a\np1,1,2,3,4\n", "names two columns 'a' and 'a'"),
        # the engine's name for the repeat also appears in the data: still refused
        ("who,a,a\np1,2,a_1\n", "names two columns 'a' and 'a'"),
        ("who,,b\ncolumn1,2,3\n", "leaves column 2 without a name"),
        # as DuckDB reads names: a byte-order mark and surrounding spaces dropped
        ("\ufeffwho,who\np1,2\n", "names two columns 'who' and 'who'"),
        ("who,a, a\np1,1,2\n", "names two columns 'a' and 'a'"),
        ('who,a,"a "\np1,1,2\n', "names two columns 'a' and 'a'"),
    ],
)
def test_a_header_that_repeats_or_leaves_out_a_name_is_refused(
    tmp_path: Path, text: str, message: str
) -> None:
    # DuckDB renamed the repeats (and named the blank) silently: `a` read the first of two
    # columns, and `a_1` the other, a name the file does not have
    path = tmp_path / "twice.csv"
    path.write_text(text)
    with pytest.raises(sdp.InvalidParameter, match=message):
        sdp.data.Session(str(path), "who", BUDGET)


@pytest.mark.parametrize(
    ("name", "content", "columns"),
    [
        ("digits.csv", b"who,a,a_1,A2,column1\np1,1,2,3,4\n", ("who", "a", "a_1", "A2", "column1")),
        ("quoted.csv", b'who,"a""1"\np1,2\n', ("who", 'a"1')),
        ("unicode.csv", "who,É,é\np1,1,2\n".encode(), ("who", "É", "é")),
        ("packed.csv.gz", gzip.compress(b"who,x1\np1,2\n", mtime=0), ("who", "x1")),
    ],
    ids=["digits", "quoted", "unicode", "gzip"],  # (gzip's bytes hold a time: xdist ids differ)
)
def test_legal_headers_are_kept(
    tmp_path: Path, name: str, content: bytes, columns: tuple[str, ...]
) -> None:
    # (names ending in digits were refused when absent from the raw bytes: a gzip file, an
    # escaped quote; DuckDB tells É from é)
    path = tmp_path / name
    path.write_bytes(content)
    s = sdp.data.Session(str(path), "who", BUDGET)
    assert s.table.columns == columns


@pytest.mark.parametrize("kind", ["pandas", "arrow"])
@pytest.mark.parametrize(
    ("names", "message"),
    [(["who", "a", "a"], "'a' appears twice"), (["who", "a", "A"], "'a' and 'A' have the same")],
)
def test_a_frame_whose_names_collide_is_refused_naming_them(
    kind: str, names: list[str], message: str
) -> None:
    # DuckDB's refusal ("Column with name A already exists") came with a hint to convert a
    # column's type
    frame = pd.DataFrame([["p1", 1, 2]], columns=names)
    table = (
        frame
        if kind == "pandas"
        else pa.Table.from_arrays([pa.array(frame.iloc[:, i]) for i in range(3)], names=names)
    )
    with pytest.raises(sdp.InvalidParameter, match=message):
        sdp.data.Session(table, "who", BUDGET)

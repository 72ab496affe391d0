"""Neighbouring tables, end to end: what one person moves is what ``explain()`` charges for.

Privacy of every data query rests on one fact about the engine: adding (or removing) all rows of
one person changes the bounded statistic the noise is added to by at most the sensitivity the
query states — at most ``copies`` keys, each by at most Δ∞, counts only upwards, a selection's
scores by at most its range. Each test here builds the same query on a random small table D and
on D plus one new person (rows over known and unseen keys, more rows and keys than any cap,
values outside the bounds), with the same session seed (so the same salt), runs both on DuckDB,
and checks the two bounded statistics against the statement, with nothing but subtraction.

The statistics are read where the mechanism receives them: the noise's ``release`` and the
selections' ``select`` are wrapped to record their input (the counts still get an offset instead
of noise, so that every key of an unknown-key count passes its threshold and shows in the
release); the quantile's histogram and LimitDom's top counts come from the query's own
data-holder accessors. Both bounding plans are exercised (the rows plan forced on these small
tables), and sessions that drop NULL privacy units.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd
import pytest

import sharpdp as sdp
from sharpdp.data import _bounding

FRUITS = ["apple", "pear", "fig", "kiwi"]
SHOPS = [1, 2, 3]
OFFSET = 10**9  # added instead of noise: every count clears any threshold
SEEDS = range(8)


@dataclass
class Recorder:
    """Inputs of every noise release and selection, in call order."""

    calls: list[tuple[str, np.ndarray]] = field(default_factory=list)

    def take(self) -> list[tuple[str, np.ndarray]]:
        out, self.calls = self.calls, []
        return out


@pytest.fixture
def recorder(monkeypatch: pytest.MonkeyPatch) -> Recorder:
    rec = Recorder()

    def integer_release(self: Any, value: Any, rng: Any = None) -> Any:
        arr = np.array(value, dtype=np.int64, ndmin=1)
        rec.calls.append((type(self).__name__, arr.copy()))
        return arr + OFFSET

    def float_release(self: Any, value: Any, rng: Any = None) -> Any:
        arr = np.array(value, dtype=np.float64, ndmin=1)
        rec.calls.append((type(self).__name__, arr.copy()))
        return arr

    def recording_select(original: Callable[..., Any]) -> Callable[..., Any]:
        def select(self: Any, scores: Any, *args: Any, **kwargs: Any) -> Any:
            rec.calls.append((type(self).__name__, np.array(scores, dtype=np.float64)))
            return original(self, scores, *args, **kwargs)

        return select

    monkeypatch.setattr(sdp.DiscreteLaplace, "release", integer_release)
    monkeypatch.setattr(sdp.DiscreteGaussian, "release", integer_release)
    monkeypatch.setattr(sdp.Gaussian, "release", float_release)
    for cls in (sdp.TopK, sdp.Exponential):
        monkeypatch.setattr(cls, "select", recording_select(cls.select))
    return rec


@pytest.fixture(params=["pairs", "rows"])
def plan(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both bounding plans: "rows" is forced on these small tables (it keeps the same pairs)."""
    if request.param == "rows":
        monkeypatch.setattr(_bounding, "ROWS_PLAN_MIN_ROWS", 0)
        monkeypatch.setattr(_bounding, "ROWS_PLAN_MAX_REPEAT", math.inf)
    return str(request.param)


def tables(seed: int, null_units: bool = False) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(D, D + one new person). Persons have 1–9 rows over fruits (some NULL) and shops; the new
    one has 1–16 rows, over the known fruits and an unseen one, with amounts beyond any bound."""
    rng = np.random.default_rng([7, seed])
    fruits = np.array([*FRUITS, None], dtype=object)

    def rows(person: Any, n: int, kinds: np.ndarray, spread: float) -> list[tuple[Any, ...]]:
        return [
            (
                person,
                kinds[rng.integers(len(kinds))],
                int(rng.choice(SHOPS)),
                float(rng.uniform(-spread, 2 * spread)),
            )
            for _ in range(n)
        ]

    base: list[tuple[Any, ...]] = []
    for person in range(int(rng.integers(4, 9))):
        base += rows(person, int(rng.integers(1, 10)), fruits, 80.0)
    if null_units:
        base += rows(None, 3, fruits, 80.0)
    new = rows(1000, int(rng.integers(1, 17)), np.array([*FRUITS, "plum"], dtype=object), 500.0)
    columns = ["person", "fruit", "shop", "amount"]
    d = pd.DataFrame(base, columns=columns)
    d_new = pd.DataFrame(base + new, columns=columns)
    for frame in (d, d_new):
        frame["person"] = frame["person"].astype("Int64")
    return d, d_new


def both(
    seed: int,
    build: Callable[[sdp.data.Session], Any],
    recorder: Recorder,
    null_units: bool = False,
) -> tuple[Any, list[tuple[str, np.ndarray]], list[tuple[str, np.ndarray]], Any, Any]:
    """Build and run ``build`` on D and on D + person (same seed: same salt); return the query
    on D, the recorded inputs on each, and the two releases."""
    out = []
    for table in tables(seed, null_units):
        s = sdp.data.Session(
            table,
            "person",
            sdp.ApproxDP(1e6, 1e-3),
            seed=seed,
            null_units="drop" if null_units else "refuse",
        )
        q = build(s)
        result = q.run(rng=0)
        out.append((q, recorder.take(), result))
    (q, before, r_before), (q_after, after, r_after) = out
    assert q.bounding.salt == q_after.bounding.salt
    return q, before, after, r_before, r_after


def check_shift(before: np.ndarray, after: np.ndarray, stat: Any, monotone: bool) -> None:
    """At most ``copies`` entries move, each by at most Δ∞ (upwards only for counts)."""
    d = after - before
    assert np.all(np.abs(d) <= stat.sensitivity), (d, stat.sensitivity)
    assert np.count_nonzero(d) <= stat.copies, (d, stat.copies)
    assert np.abs(d).sum() <= stat.l1 + 1e-9
    assert math.sqrt(float(np.sum(d.astype(np.float64) ** 2))) <= stat.l2 + 1e-9
    if monotone:
        assert np.all(d >= 0), d


def key_of(values: tuple[Any, ...]) -> tuple[Any, ...]:
    return tuple(
        None if v is None or (isinstance(v, float) and math.isnan(v)) else v for v in values
    )


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize(("max_rows", "max_groups"), [(1, 1), (3, 2)])
def test_count_by_public_keys(
    seed: int, max_rows: int, max_groups: int, plan: str, recorder: Recorder
) -> None:
    def build(s: sdp.data.Session) -> Any:
        return s.count_by(
            "fruit", keys=FRUITS, privacy=sdp.PureDP(1.0), max_groups=max_groups, max_rows=max_rows
        )

    q, before, after, _, _ = both(seed, build, recorder)
    (stat,) = q.explain().statistics
    assert (stat.copies, stat.sensitivity) == (max_groups, max_rows)
    check_shift(before[0][1], after[0][1], stat, monotone=True)


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("null_units", [False, True])
def test_count_by_unknown_keys(seed: int, null_units: bool, plan: str, recorder: Recorder) -> None:
    def build(s: sdp.data.Session) -> Any:
        return s.count_by(
            ["fruit", "shop"], keys=None, privacy=sdp.ApproxDP(1.0, 1e-5), max_groups=2, max_rows=2
        )

    q, _, _, r_before, r_after = both(seed, build, recorder, null_units)
    stat = q.explain().statistics[0]
    counts = []
    for r in (r_before, r_after):
        frame = r.to_pandas()
        counts.append(
            {
                key_of((f, sh)): int(c) - OFFSET
                for f, sh, c in zip(frame["fruit"], frame["shop"], frame["count"], strict=True)
            }
        )
    keys = sorted(set(counts[0]) | set(counts[1]), key=repr)
    assert set(counts[0]) <= set(counts[1])  # a person added removes no key
    vectors = [np.array([c.get(k, 0) for k in keys]) for c in counts]
    check_shift(vectors[0], vectors[1], stat, monotone=True)
    # a key only the new person holds appears with at most max_rows: what the threshold's δ assumes
    for k in set(counts[1]) - set(counts[0]):
        assert counts[1][k] <= 2


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("clamp", ["row", "person"])
def test_sum_by_public_keys(seed: int, clamp: str, recorder: Recorder) -> None:
    caps = {"max_rows": 3} if clamp == "row" else {}

    def build(s: sdp.data.Session) -> Any:
        return s.sum(
            "amount",
            bounds=(-10.0, 100.0),
            privacy=sdp.PureDP(1.0),
            by="fruit",
            keys=FRUITS,
            max_groups=2,
            clamp=clamp,
            **caps,
        )

    q, before, after, _, _ = both(seed, build, recorder)
    (stat,) = q.explain().statistics
    step = q.bounding.step
    per_row = max(abs(-10.0), abs(100.0)) / step
    assert stat.sensitivity == (3 * per_row if clamp == "row" else per_row)
    check_shift(before[0][1], after[0][1], stat, monotone=False)


@pytest.mark.parametrize("seed", SEEDS)
def test_mean_by_public_keys(seed: int, recorder: Recorder) -> None:
    def build(s: sdp.data.Session) -> Any:
        return s.mean(
            "amount",
            bounds=(-10.0, 100.0),
            privacy=sdp.ZCDP(1.0),
            max_rows=3,
            by="shop",
            keys=SHOPS,
            max_groups=2,
        )

    q, before, after, _, _ = both(seed, build, recorder)
    sum_stat, count_stat = q.explain().statistics
    assert [name for name, _ in before] == ["DiscreteGaussian", "DiscreteGaussian"]
    check_shift(before[0][1], after[0][1], sum_stat, monotone=False)
    check_shift(before[1][1], after[1][1], count_stat, monotone=True)


@pytest.mark.parametrize("seed", SEEDS)
def test_quantile_histogram(seed: int) -> None:
    hist = []
    for table in tables(seed):  # the histogram the mechanism samples from (its data accessor)
        s = sdp.data.Session(table, "person", sdp.ApproxDP(1e6, 1e-3), seed=seed)
        q = s.quantile("amount", 0.3, bounds=(-50.0, 150.0), privacy=sdp.PureDP(1.0), max_rows=2)
        ((cells, rows),) = q.histograms().values()
        hist.append(dict(zip(cells.tolist(), rows.tolist(), strict=True)))
    d = np.array([hist[1].get(c, 0) - hist[0].get(c, 0) for c in set(hist[0]) | set(hist[1])])
    # the person adds at most m = 2 rows (never removes one): ranks move by ≤ m, whence Δ below
    assert np.all(d >= 0)
    assert d.sum() <= 2
    (stat,) = q.explain().statistics
    assert stat.sensitivity == 2 * max(0.3, 0.7)


@pytest.mark.parametrize("seed", SEEDS)
def test_top_k_scores_by_group(seed: int, plan: str, recorder: Recorder) -> None:
    def build(s: sdp.data.Session) -> Any:
        return s.top_k(
            "fruit",
            k=2,
            keys=FRUITS,
            privacy=sdp.PureDP(1.0),
            max_groups=2,
            max_rows=1,
            by="shop",
            by_keys=SHOPS,
        )

    q, before, after, _, _ = both(seed, build, recorder)
    (stat,) = q.explain().statistics
    assert len(before) == len(after) == len(SHOPS)
    moved = 0
    for (_, a), (_, b) in zip(before, after, strict=True):
        d = b - a
        # monotone scores, each moved by at most 1: range max(d) − min(d) ≤ 1 = the charged range
        assert np.all((d >= 0) & (d <= 1))
        assert d.max() - d.min() <= stat.sensitivity
        moved += int(np.count_nonzero(d))
    assert moved <= 2  # ≤ max_groups (shop, fruit) pairs over all groups


@pytest.mark.parametrize("seed", SEEDS)
def test_top_k_unknown_keys_counts(seed: int, plan: str) -> None:
    def build(s: sdp.data.Session) -> Any:
        return s.top_k(
            "fruit", k=2, keys=None, privacy=sdp.ApproxDP(1.0, 1e-5), max_groups=2, max_rows=1
        )

    tops = []
    for table in tables(seed):
        s = sdp.data.Session(table, "person", sdp.ApproxDP(1e6, 1e-3), seed=seed)
        q = build(s)
        ((keys, counts, nxt),) = q.top_counts().values()
        assert nxt == 0  # k̄ exceeds the number of keys: every key is in the list
        tops.append(dict(zip(keys, counts.tolist(), strict=True)))
    d = np.array([tops[1].get(k, 0) - tops[0].get(k, 0) for k in set(tops[0]) | set(tops[1])])
    assert np.all((d >= 0) & (d <= 1))
    assert np.count_nonzero(d) <= 2


@pytest.mark.parametrize("seed", SEEDS)
def test_select_best_scores(seed: int, recorder: Recorder) -> None:
    def build(s: sdp.data.Session) -> Any:
        return s.select_best("fruit", keys=FRUITS, privacy=sdp.PureDP(1.0))

    q, before, after, _, _ = both(seed, build, recorder)
    (stat,) = q.explain().statistics
    d = after[0][1] - before[0][1]
    assert np.all((d >= 0) & (d <= stat.sensitivity))


@pytest.mark.parametrize("seed", SEEDS)
@pytest.mark.parametrize("privacy", [sdp.PureDP(1.0), sdp.ZCDP(0.5)], ids=["laplace", "gaussian"])
@pytest.mark.parametrize("kind", ["marginals", "predicates"])
def test_workload_answers(seed: int, privacy: sdp.Guarantee, kind: str, recorder: Recorder) -> None:
    def build(s: sdp.data.Session) -> Any:
        if kind == "marginals":  # two 1-way marginals: a row meets C = 2 queries
            w = sdp.data.marginals(
                ["fruit", "shop"], way=1, domains={"fruit": FRUITS, "shop": SHOPS}
            )
        else:  # overlapping predicates: a pear in shop 2 meets all 4
            w = sdp.data.predicates(
                {
                    "apple or pear": {"fruit": ["apple", "pear"]},
                    "pear or fig": {"fruit": ["pear", "fig"]},
                    "shop 1 or 2": {"shop": [1, 2]},
                    "pear in shop 2": {"fruit": ["pear"], "shop": [2]},
                }
            )
        return s.workload(w, privacy=privacy, max_rows=2)

    q, before, after, _, _ = both(seed, build, recorder)
    (name_a, a), (name_b, b) = before[-1], after[-1]
    assert (
        name_a == name_b == ("DiscreteLaplace" if isinstance(privacy, sdp.PureDP) else "Gaussian")
    )
    d = b - a
    m, c = q.max_rows, q.overlap
    assert c == (2 if kind == "marginals" else 4)
    assert np.all((d >= 0) & (d <= m))
    assert d.sum() <= m * c
    assert math.sqrt(float(np.sum(d**2))) <= m * math.sqrt(c) + 1e-9


@pytest.mark.parametrize("seed", SEEDS)
def test_row_level_count_and_sum(seed: int, recorder: Recorder) -> None:
    """privacy_unit=None: neighbours differ in one row, every cap is 1 whatever is declared."""
    d, d_new = tables(seed)
    extra = d_new.iloc[len(d) :].head(1)
    recorded = []
    for table in (d, pd.concat([d, extra], ignore_index=True)):
        s = sdp.data.Session(table, None, sdp.PureDP(1e6), seed=seed)
        count = s.count_by("fruit", keys=FRUITS, privacy=sdp.PureDP(1.0), max_groups=3, max_rows=5)
        total = s.sum("amount", bounds=(-10.0, 100.0), privacy=sdp.PureDP(1.0), max_rows=4)
        count.run(rng=0)
        total.run(rng=0)
        recorded.append([arr for _, arr in recorder.take()])
        stats = [count.explain().statistics[0], total.explain().statistics[0]]
    assert [(st.copies, st.sensitivity) for st in stats] == [
        (1, 1),
        (1, 100.0 / total.bounding.step),
    ]
    for i, monotone in ((0, True), (1, False)):
        check_shift(recorded[0][i], recorded[1][i], stats[i], monotone)


# -- what one person must not change besides the noisy values -------------------------------------


def _released(table: pd.DataFrame, column: str, seed: int) -> pd.DataFrame:
    s = sdp.data.Session(table, "who", sdp.ApproxDP(10.0, 1e-6), seed=3)
    query = s.count_by(column, keys=None, privacy=sdp.ApproxDP(1.0, 1e-7))
    return query.run(rng=seed).to_pandas()


@pytest.mark.parametrize(
    ("values", "dtype"),
    [([1] * 200, "Int64"), ([True] * 200, "boolean"), ([7] * 200, "UInt64")],
)
def test_a_null_key_does_not_change_the_released_types(values: list[Any], dtype: str) -> None:
    """One person with a NULL key (never released: one person is far below the threshold) must
    not change the result's column types: an integer key column came back int64 without a NULL
    in the data and as objects with one, a difference of probability 1 that no δ covers."""
    d = pd.DataFrame({"who": range(200), "k": pd.array(values, dtype=dtype)})
    d1 = pd.concat([d, pd.DataFrame({"who": [999], "k": pd.array([None], dtype=dtype)})])
    a, b = _released(d, "k", 0), _released(d1, "k", 0)
    assert a.dtypes.to_dict() == b.dtypes.to_dict()
    assert list(a["k"]) == list(b["k"])  # the NULL key is not released at this threshold
    assert a.dtypes["k"] == dtype


def test_a_signed_zero_key_does_not_depend_on_other_rows() -> None:
    """−0.0 and 0.0 are one group; the released key must not show the sign of whichever row the
    engine kept (it printed −0.0 for 99 persons at −0.0 and, in most runs, 0.0 once one person
    at 0.0 joined)."""
    d0 = pd.DataFrame({"who": range(99), "k": [-0.0] * 99})
    d1 = pd.concat([d0, pd.DataFrame({"who": [1000], "k": [0.0]})])
    for d in (d0, d1):
        for seed in range(4):
            keys = _released(d, "k", seed)["k"].tolist()
            assert [math.copysign(1.0, k) for k in keys] == [1.0]


def test_which_keys_a_person_keeps_does_not_depend_on_row_order() -> None:
    """One person with rows at −0.0, 0.0, 1, 2 and 3 and one key kept: the same key whatever
    the order of the rows (the pair's text, hashed to choose, came from whichever zero the
    engine kept)."""
    rows = pd.DataFrame({"who": [1] * 5, "k": [-0.0, 0.0, 1.0, 2.0, 3.0]})
    kept = set()
    for perm in range(12):
        shuffled = rows.sample(frac=1.0, random_state=perm).reset_index(drop=True)
        s = sdp.data.Session(shuffled, "who", sdp.PureDP(1.0), seed=5)
        q = s.count_by("k", keys=[0.0, 1.0, 2.0, 3.0], privacy=sdp.PureDP(0.1), max_groups=1)
        kept.add(tuple(q.bounded()["count"]))
    assert len(kept) == 1


def test_nested_key_columns_are_refused_by_their_type() -> None:
    """Struct keys sorted as Python dicts: a second distinct key made the query fail (nothing
    spent, but the failure told that the key existed). Nested columns are refused from the
    schema, identically with one key or two."""
    for keys in ([{"a": 1}] * 2, [{"a": 1}, {"a": 2}]):
        s = sdp.data.Session(pd.DataFrame({"who": [1, 2], "k": keys}), "who", sdp.ApproxDP(1, 1e-6))
        with pytest.raises(sdp.InvalidParameter, match="nested type"):
            s.count_by("k", keys=None, privacy=sdp.ApproxDP(0.5, 1e-7))
        assert s.accountant.spent() == 0.0


def _signed_zero_tables() -> tuple[pd.DataFrame, pd.DataFrame]:
    """One table twice: with −0.0 and NaN, then with 0.0 and NULL, in the columns a query reads
    (``k`` as key, ``v`` as value, ``who`` as person) and in one it does not (``junk``).

    Each person has three rows, two keys and two values under key 0: the caps (one key per
    person, one row per key) bind, and the hash that picks what is kept reads the text of the
    unit, key and value, where −0.0 and 0.0 differ."""
    persons = 60
    who = np.repeat(np.arange(persons, dtype=np.float64), 3)
    k = np.tile([-0.0, -0.0, 1.5], persons)
    v = np.tile([-0.0, 2.0, 2.0], persons)
    v[1::6] = math.nan
    raw = pd.DataFrame({"who": np.where(who == 0, -0.0, who), "k": k, "v": v})
    raw["junk"] = np.where(np.arange(len(raw)) % 2 == 0, -0.0, math.nan)
    clean = raw.copy()
    for column in clean.columns:
        clean[column] = clean[column].abs()  # −0.0 as 0.0; NaN stays, for DuckDB to read as NULL
    clean = pd.concat(
        [clean.drop(columns=["v", "junk"]), clean[["v", "junk"]].astype("Float64")], axis=1
    )  # a pandas NA (NULL), not NaN
    return raw, clean[raw.columns]


_EVERY_READER: dict[str, Callable[[Any], Any]] = {
    "count_by": lambda s: s.count_by("k", keys=None, privacy=sdp.ApproxDP(1.0, 1e-7)),
    "count_by keys": lambda s: s.count_by("k", keys=[0.0, 1.5], privacy=sdp.PureDP(1.0)),
    "top_k": lambda s: s.top_k("k", k=1, keys=[0.0, 1.5], privacy=sdp.PureDP(1.0)),
    "top_k unknown": lambda s: s.top_k("k", k=1, keys=None, privacy=sdp.ApproxDP(1.0, 1e-7)),
    "select_best": lambda s: s.select_best("k", keys=[0.0, 1.5], privacy=sdp.PureDP(1.0)),
    "sum by": lambda s: s.sum("v", bounds=(-1, 3), by="k", keys=[0.0], privacy=sdp.PureDP(1.0)),
    "mean": lambda s: s.mean("v", bounds=(-1, 3), privacy=sdp.PureDP(1.0)),
    "quantile": lambda s: s.quantile("v", 0.5, bounds=(-1, 3), privacy=sdp.PureDP(1.0)),
    "workload": lambda s: s.workload(
        sdp.data.marginals(["k"], way=1, domains={"k": [0.0, 1.5]}), privacy=sdp.PureDP(1.0)
    ),
    "workload unknown": lambda s: s.workload(
        sdp.data.marginals(["k", "v"], way=2), privacy=sdp.ApproxDP(30.0, 1e-7)
    ),
}


@pytest.mark.parametrize("query", sorted(_EVERY_READER))
def test_every_query_reads_its_columns_canonical(query: str) -> None:
    """Each query reads −0.0 as 0.0 and NaN as NULL in its keys, values and privacy unit alike,
    whatever the other columns hold: the same seed releases the same values from both tables,
    with no −0.0 anywhere. (Keys found in the data need the query to canonicalise them, the
    columns it reads and no others since a wide table's every column cost more than the query;
    the bounding's hash already reads the two zeros alike, NaN as NULL, and public keys show
    their own values.)"""
    raw, clean = _signed_zero_tables()
    released = []
    for table in (raw, clean):
        s = sdp.data.Session(table, "who", sdp.ApproxDP(50.0, 1e-6), seed=7)
        frame = _EVERY_READER[query](s).run(rng=3).to_pandas()
        for column in frame.columns:
            if frame[column].dtype.kind == "f":
                signs = np.copysign(1.0, frame[column].dropna().to_numpy(np.float64))
                zeros = frame[column].dropna().to_numpy(np.float64) == 0.0
                assert (signs[zeros] > 0).all(), (query, column, frame)
        released.append(frame)
    pd.testing.assert_frame_equal(released[0], released[1])


def test_the_session_table_shows_values_as_queries_read_them() -> None:
    import pyarrow.compute as pc

    raw, _ = _signed_zero_tables()
    shown = sdp.data.Session(raw, "who", sdp.PureDP(1.0)).table.to_pyarrow()
    for column in ("who", "k", "v", "junk"):
        values = shown[column]
        assert not pc.any(pc.is_nan(values)).as_py(), column  # NaN read as NULL
        zeros = pc.filter(values, pc.equal(values, 0.0)).to_numpy()
        assert len(zeros), column
        assert (np.copysign(1.0, zeros) > 0).all(), column
    assert shown["v"].null_count == 30
    assert shown["junk"].null_count == 90


def test_a_query_refused_while_built_takes_no_salt() -> None:
    """The same seed and the same sequence of *built* queries keep the same rows: a query refused
    while it is built (bad keys; too many MWEM rounds, after its domain's discovery query was
    built) must not shift the salts of those after it."""
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"who": rng.integers(0, 20, 200), "k": rng.choice(list("abcde"), 200)})

    def refused(s: sdp.data.Session) -> None:
        for build in (
            lambda: s.count_by("k", keys=["a", 1], privacy=sdp.PureDP(1.0)),
            lambda: s.mwem_query(
                sdp.data.marginals(["k"], way=1), privacy=sdp.ApproxDP(1.0, 1e-7), rounds=10**9
            ),
            lambda: s.workload(
                sdp.data.marginals(["k"], way=1), privacy=sdp.ApproxDP(1.0, 1e-7), mechanism="?"
            ),
        ):
            with pytest.raises(sdp.InvalidParameter):
                build()

    kept = []
    for refuse_first in (False, True):
        s = sdp.data.Session(df, "who", sdp.ApproxDP(5.0, 1e-6), seed=0)
        if refuse_first:
            refused(s)
        q = s.count_by("k", keys=list("abcde"), privacy=sdp.PureDP(1.0), max_groups=1)
        kept.append(q.bounded()["count"].tolist())
    assert kept[0] == kept[1]

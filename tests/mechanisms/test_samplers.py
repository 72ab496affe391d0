"""Exact samplers: empirical laws against independently computed exact laws, plus the API contract.

Statistical tests use fixed seeds (so the suite is deterministic), and each is calibrated so that a
*correct* sampler would fail it with probability at most 1e-6 over the choice of seed: chi-square
goodness-of-fit tests compare the statistic with ``chi2.isf(1e-6, dof)`` (bins are merged until
every expected count is >= 20, where the chi-square approximation is accurate), and binomial tests
require an exact two-sided p-value >= 1e-6. The laws are computed here from their formulas, never
from sharpdp: closed forms for the geometric and discrete Laplace laws, and for the discrete
Gaussian the pmf exp(-x²/2σ²) normalised by the exact theta-function identity
Σ_x exp(-x²/2σ²) = σ√(2π)·Σ_k exp(-2π²σ²k²) evaluated with mpmath.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from decimal import Decimal
from fractions import Fraction

import mpmath
import numpy as np
import pytest
from scipy import stats

from sharpdp.errors import InvalidParameter
from sharpdp.mechanisms import _samplers as samplers

FALSE_FAILURE = 1e-6  # per statistical test, for a correct sampler
N = 400_000  # draws per goodness-of-fit test (vectorised path)
N_SEQUENTIAL = 60_000  # draws per test of the sequential path (used for small sizes)


# --------------------------------------------------------------------------------------------------
# Exact laws (independent of sharpdp) and the tests
# --------------------------------------------------------------------------------------------------


def quantile(cdf: Callable[[int], float], p: float, lo: int, hi: int) -> int:
    """Least integer k in [lo, hi] with cdf(k) >= p (cdf non-decreasing, cdf(hi) >= p)."""
    while lo < hi:
        mid = (lo + hi) // 2
        if cdf(mid) >= p:
            hi = mid
        else:
            lo = mid + 1
    return lo


def chi2_statistic(
    samples: np.ndarray, cdf: Callable[[int], float], lo: int, hi: int, bins: int = 40
) -> tuple[float, int]:
    """Chi-square statistic and degrees of freedom of integer ``samples`` against the law ``cdf``.

    All of the law's mass lies in [lo, hi] up to < 1e-20. Bins are cut at the law's quantiles
    j/bins, and also around every single value expected at least 20 times (so that the tails are
    tested value by value as far as the sample size allows); then bins are merged, from the left,
    until each expects at least 20 draws.
    """
    n = samples.size
    edges = {quantile(cdf, j / bins, lo, hi) for j in range(1, bins)}
    if hi - lo <= 20_000:
        for x in range(lo, hi + 1):
            if (cdf(x) - cdf(x - 1)) * n >= 20:
                edges.update((x - 1, x))
    cuts = sorted(edges)
    # bin i holds (cuts[i-1], cuts[i]]; the first (-inf, cuts[0]], the last (cuts[-1], inf)
    cum = [cdf(e) for e in cuts]
    probs = np.diff(np.array([0.0, *cum, 1.0]))
    counts = np.bincount(np.searchsorted(cuts, samples, side="left"), minlength=len(probs))
    merged_p: list[float] = []
    merged_c: list[int] = []
    acc_p, acc_c = 0.0, 0
    for p, c in zip(probs, counts, strict=True):
        acc_p += p
        acc_c += int(c)
        if acc_p * n >= 20:
            merged_p.append(acc_p)
            merged_c.append(acc_c)
            acc_p, acc_c = 0.0, 0
    merged_p[-1] += acc_p
    merged_c[-1] += acc_c
    expected = np.array(merged_p) * n
    observed = np.array(merged_c)
    return float(((observed - expected) ** 2 / expected).sum()), len(merged_p) - 1


def assert_law(samples: np.ndarray, cdf: Callable[[int], float], lo: int, hi: int) -> None:
    assert samples.min() >= lo
    assert samples.max() <= hi
    stat, dof = chi2_statistic(samples, cdf, lo, hi)
    assert dof >= 1
    critical = stats.chi2.isf(FALSE_FAILURE, dof)
    assert stat < critical, f"chi2 = {stat:.1f} >= {critical:.1f} (dof {dof})"


def assert_binomial(successes: int, n: int, p: float) -> None:
    pvalue = stats.binomtest(successes, n, p).pvalue
    assert pvalue >= FALSE_FAILURE, f"{successes}/{n} vs p = {p}: p-value {pvalue:.2e}"


def geometric_cdf(scale: Fraction) -> Callable[[int], float]:
    """P[X <= k] = 1 - ρ^(k+1), ρ = exp(-1/scale), for P[X = k] = (1 - ρ) ρ^k, k >= 0."""
    lam = 1 / float(scale)
    return lambda k: 0.0 if k < 0 else -math.expm1(-lam * (k + 1))


def laplace_cdf(scale: Fraction) -> Callable[[int], float]:
    """P[X = x] = (1-ρ)/(1+ρ) ρ^|x|: P[X >= m] = ρ^m/(1+ρ) for m >= 1, ρ = exp(-1/scale)."""
    lam = 1 / float(scale)
    rho = math.exp(-lam)

    def cdf(k: int) -> float:
        if k < 0:
            return math.exp(lam * k) / (1 + rho)
        return 1 - math.exp(-lam * (k + 1)) / (1 + rho)

    return cdf


def laplace_range(scale: Fraction) -> tuple[int, int]:
    m = math.ceil(50 * float(scale)) + 1  # mass beyond: < e^-50
    return -m, m


def gaussian_law(var: Fraction) -> tuple[Callable[[int], float], int]:
    """CDF of the discrete Gaussian with σ² = var, on [-M, M] (mass outside < 1e-30)."""
    sigma = mpmath.sqrt(mpmath.mpf(var.numerator) / var.denominator)
    with mpmath.workdps(40):
        # Jacobi theta identity (Poisson summation): Σ_x e^{-x²/2σ²} = σ√(2π) Σ_k e^{-2π²σ²k²}
        theta = mpmath.nsum(lambda k: mpmath.exp(-2 * mpmath.pi**2 * sigma**2 * k**2), [-20, 20])
        z = float(sigma * mpmath.sqrt(2 * mpmath.pi) * theta)
    m = math.ceil(12 * float(sigma)) + 3
    xs = np.arange(-m, m + 1, dtype=np.float64)
    pmf = np.exp(-(xs**2) / (2 * float(var))) / z
    assert math.isclose(math.fsum(pmf), 1.0, rel_tol=1e-12)  # the normaliser is right
    cum = np.cumsum(pmf)

    def cdf(k: int) -> float:
        if k < -m:
            return 0.0
        return float(cum[min(k, m) + m])

    return cdf, m


# --------------------------------------------------------------------------------------------------
# Laws
# --------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [1, 2, 7, 1000, 2**40 + 3, 2**63 - 1])
def test_uniform_int_law(n: int) -> None:
    draws = samplers.uniform_int(n, size=N, rng=n % 1009)
    assert draws.dtype == np.int64
    if n == 1:
        assert (draws == 0).all()
        return
    assert_law(draws, lambda k: 0.0 if k < 0 else min(1.0, (k + 1) / n), 0, n - 1)


@pytest.mark.parametrize(
    "p", [Fraction(1, 3), Fraction(1, 2), Fraction(3, 8), 0.1, Fraction(10**30, 10**30 + 7)]
)
def test_bernoulli_frequency(p: Fraction | float) -> None:
    n = 1_000_000
    draws = samplers.bernoulli(p, size=n, rng=11)
    assert set(np.unique(draws)) <= {0, 1}
    assert_binomial(int(draws.sum()), n, float(Fraction(p)))


@pytest.mark.parametrize("p", [0, 1, Fraction(0), 1.0])
def test_bernoulli_degenerate(p: int | float | Fraction) -> None:
    assert (samplers.bernoulli(p, size=100, rng=1) == int(p)).all()


@pytest.mark.parametrize(
    "gamma",
    [
        Fraction(1, 3),
        Fraction(1),
        Fraction(5, 2),
        Fraction(7, 2) + Fraction(1, 10**25),  # denominator beyond int64
        Fraction(2, 7),
        0.7,
    ],
)
def test_bernoulli_exp_frequency(gamma: Fraction | float) -> None:
    n = 1_000_000
    draws = samplers.bernoulli_exp(gamma, size=n, rng=12)
    g = Fraction(gamma)
    with mpmath.workdps(30):
        p = float(mpmath.exp(-mpmath.mpf(g.numerator) / g.denominator))
    assert_binomial(int(draws.sum()), n, p)


def test_bernoulli_exp_extremes() -> None:
    assert (samplers.bernoulli_exp(0, size=1000, rng=1) == 1).all()
    # integer part above int64: processed in chunks, exp(-2**70) is 0 to every precision
    assert (samplers.bernoulli_exp(2**70, size=1000, rng=1) == 0).all()
    assert (samplers.bernoulli_exp(Fraction(2**70 + 1, 3), size=10, rng=1) == 0).all()


# (sampler, parameter, what the case exercises); the parameter is passed positionally except for
# "gaussian_var", which passes sigma_squared.
LAWS = [
    ("geometric", Fraction(1), "t = 1: U = 0"),
    ("geometric", Fraction(7, 3), "t/s"),
    ("geometric", Fraction(1, 3), "scale < 1"),
    ("geometric", 0.3, "float: denominator 2**54"),
    ("geometric", Fraction(40), "integer scale"),
    ("laplace", Fraction(1), "t = 1"),
    ("laplace", Fraction(10), "integer scale"),
    ("laplace", Fraction(1000), "large scale"),
    ("laplace", Fraction(1, 3), "scale < 1: many (-, 0) rejections"),
    ("laplace", Fraction(5, 2), "t/s"),
    ("laplace", 3.7, "float: t/s with a 2**51 denominator"),
    ("laplace", Fraction(2**62, 2**20 + 1), "numerator 2**62: U + t·V as Python integers"),
    ("gaussian", Fraction(1), "t = 2"),
    ("gaussian", Fraction(10), "integer sigma"),
    ("gaussian", Fraction(1, 2), "sigma < 1: t = 1"),
    ("gaussian", Fraction(7, 3), "rational sigma"),
    ("gaussian", 3.7, "float sigma: ~100-bit exponents, Python-integer path"),
    ("gaussian", Fraction(1000), "int64 path, large exponents"),
    ("gaussian", Fraction(100_000), "2σ²t² > 2**63: Python-integer path"),
    ("gaussian_var", Fraction(2), "sigma_squared = 2 (σ irrational)"),
    ("gaussian_var", Fraction(1, 7), "sigma_squared < 1"),
    ("gaussian_var", Fraction(50), "sigma_squared, σ irrational"),
]


def law_case(
    kind: str, param: Fraction | float
) -> tuple[Callable[[int, int], np.ndarray], Callable[[int], float], int, int]:
    """(draw(n, seed), cdf, lo, hi) for a row of LAWS."""
    x = Fraction(param)
    if kind == "geometric":
        return (
            lambda n, seed: samplers.geometric(param, size=n, rng=seed),
            geometric_cdf(x),
            0,
            math.ceil(50 * float(x)) + 1,
        )
    if kind == "laplace":
        lo, hi = laplace_range(x)
        return (
            lambda n, seed: samplers.discrete_laplace(param, size=n, rng=seed),
            laplace_cdf(x),
            lo,
            hi,
        )
    if kind == "gaussian":
        cdf, m = gaussian_law(x**2)
        return (lambda n, seed: samplers.discrete_gaussian(param, size=n, rng=seed), cdf, -m, m)
    cdf, m = gaussian_law(x)
    return (
        lambda n, seed: samplers.discrete_gaussian(sigma_squared=param, size=n, rng=seed),
        cdf,
        -m,
        m,
    )


@pytest.mark.parametrize(
    ("kind", "param"),
    [pytest.param(kind, param, id=f"{kind}-{param}") for kind, param, _ in LAWS],
)
@pytest.mark.parametrize("path", ["vectorised", "sequential"])
def test_law(
    monkeypatch: pytest.MonkeyPatch, kind: str, param: Fraction | float, path: str
) -> None:
    """Both implementations: numpy arrays (large sizes) and Python integers (small sizes)."""
    draw, cdf, lo, hi = law_case(kind, param)
    if path == "sequential":
        monkeypatch.setattr(samplers, "_SEQUENTIAL_MAX", N_SEQUENTIAL)
        draws = draw(N_SEQUENTIAL, 18)
    else:
        draws = draw(N, 15)
    assert draws.dtype == np.int64
    assert_law(draws, cdf, lo, hi)


def test_discrete_laplace_tiny_scale() -> None:
    # scale = 1e-300: the denominator has ~1000 bits; P[X != 0] = 2 e^{-1e300} / (1 + e^{-1e300})
    assert (samplers.discrete_laplace(1e-300, size=1000, rng=1) == 0).all()
    assert (samplers.discrete_laplace(1e-300, size=10, rng=1) == 0).all()


def test_discrete_gaussian_small_sigma() -> None:
    # σ = 0.1: P[X != 0] ≈ 2e^{-50}
    assert (samplers.discrete_gaussian(0.1, size=10_000, rng=1) == 0).all()
    assert (samplers.discrete_gaussian(0.1, size=10, rng=1) == 0).all()


def test_small_sizes_use_the_sequential_path(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[int] = []
    flat = samplers._gaussian_flat

    def spy(rng: np.random.Generator, p: int, q: int, m: int) -> np.ndarray:
        calls.append(m)
        return flat(rng, p, q, m)

    monkeypatch.setattr(samplers, "_gaussian_flat", spy)
    samplers.discrete_gaussian(2, rng=1)
    samplers.discrete_gaussian(2, size=samplers._SEQUENTIAL_MAX, rng=1)
    assert calls == []
    samplers.discrete_gaussian(2, size=samplers._SEQUENTIAL_MAX + 1, rng=1)
    assert calls == [samplers._SEQUENTIAL_MAX + 1]


def test_goodness_of_fit_has_power() -> None:
    # The tests above are not vacuous: a 5% error in the scale is detected.
    draws = samplers.discrete_gaussian(Fraction(21, 20), size=N, rng=17)
    cdf, m = gaussian_law(Fraction(1))
    stat, dof = chi2_statistic(draws, cdf, -m, m)
    assert stat > stats.chi2.isf(FALSE_FAILURE, dof)
    draws = samplers.discrete_laplace(Fraction(21, 20), size=N, rng=17)
    stat, dof = chi2_statistic(draws, laplace_cdf(Fraction(1)), -1000, 1000)
    assert stat > stats.chi2.isf(FALSE_FAILURE, dof)


# --------------------------------------------------------------------------------------------------
# Exactness of the mechanics
# --------------------------------------------------------------------------------------------------


class OnlyIntegers(np.random.Generator):
    """A Generator that refuses every method but ``integers`` (no float kernels, no state peeking)."""

    def __getattribute__(self, name: str) -> object:
        if not name.startswith("_") and name != "integers":
            raise AssertionError(f"sampler used Generator.{name}")
        return super().__getattribute__(name)


@pytest.mark.parametrize("size", [None, 1000])
@pytest.mark.parametrize(
    "call",
    [
        lambda g, n: samplers.uniform_int(10, size=n, rng=g),
        lambda g, n: samplers.bernoulli(0.3, size=n, rng=g),
        lambda g, n: samplers.bernoulli_exp(Fraction(7, 3), size=n, rng=g),
        lambda g, n: samplers.geometric(2.5, size=n, rng=g),
        lambda g, n: samplers.discrete_laplace(3, size=n, rng=g),
        lambda g, n: samplers.discrete_gaussian(3.7, size=n, rng=g),
    ],
)
def test_only_integer_words_are_drawn(
    call: Callable[[np.random.Generator, int | None], object], size: int | None
) -> None:
    call(OnlyIntegers(np.random.PCG64(5)), size)


def test_bernoulli_digit_ties(monkeypatch: pytest.MonkeyPatch) -> None:
    """When a word equals the digit of p, the next digit decides (probability 2^-63 per word)."""
    d1, rem = divmod(1 << 63, 3)  # base-2^63 digits of 1/3
    d2 = (rem << 63) // 3
    fed: list[np.ndarray] = []

    def words(rng: np.random.Generator, m: int) -> np.ndarray:
        return fed.pop(0)[:m]

    monkeypatch.setattr(samplers, "_words", words)
    fed[:] = [np.array([d1, d1, d1 - 1, d1 + 1]), np.array([d2 - 1, d2 + 1])]
    out = samplers._bernoulli_const(np.random.default_rng(0), 1, 3, 4)
    assert out.tolist() == [True, False, True, False]
    fed[:] = [np.array([d1, d1]), np.array([d2, d2 + 5]), np.array([0])]
    out = samplers._bernoulli_digits(np.random.default_rng(0), np.array([1, 1], dtype=object), 3)
    assert out.tolist() == [True, False]  # third digit of 1/3 is d1 > 0
    # the sequential stream pops words from the end of a 64-word buffer
    fed[:] = [np.array([0] * 62 + [d2 - 1, d1]), np.array([0] * 62 + [d2 + 1, d1])]
    stream = samplers._Stream(np.random.default_rng(0))
    assert stream.bernoulli(1, 3) is True
    stream = samplers._Stream(np.random.default_rng(0))
    assert stream.bernoulli(1, 3) is False


# --------------------------------------------------------------------------------------------------
# API contract: shapes, types, reproducibility, errors
# --------------------------------------------------------------------------------------------------

SAMPLERS: list[Callable[..., object]] = [
    lambda size, rng: samplers.uniform_int(6, size=size, rng=rng),
    lambda size, rng: samplers.bernoulli(Fraction(1, 3), size=size, rng=rng),
    lambda size, rng: samplers.bernoulli_exp(0.5, size=size, rng=rng),
    lambda size, rng: samplers.geometric(2, size=size, rng=rng),
    lambda size, rng: samplers.discrete_laplace(2, size=size, rng=rng),
    lambda size, rng: samplers.discrete_gaussian(2, size=size, rng=rng),
]


@pytest.mark.parametrize("sampler", SAMPLERS)
def test_scalar_and_shapes(sampler: Callable[..., object]) -> None:
    x = sampler(None, 1)
    assert type(x) is int
    for size, shape in [(5, (5,)), ((2, 3), (2, 3)), (0, (0,)), ((), ()), ((4, 0), (4, 0))]:
        arr = sampler(size, 1)
        assert isinstance(arr, np.ndarray)
        assert arr.dtype == np.int64
        assert arr.shape == shape


@pytest.mark.parametrize("n", [10, 1000])
@pytest.mark.parametrize("sampler", SAMPLERS)
def test_reproducible(sampler: Callable[..., np.ndarray], n: int) -> None:
    a = sampler(n, 42)
    np.testing.assert_array_equal(a, sampler(n, 42))
    np.testing.assert_array_equal(a, sampler(n, np.random.SeedSequence(42)))
    np.testing.assert_array_equal(a, sampler(n, np.random.default_rng(42)))
    np.testing.assert_array_equal(a, sampler(n, np.random.PCG64(42)))
    gen = np.random.default_rng(42)
    first, second = sampler(n, gen), sampler(n, gen)  # a Generator's stream continues
    np.testing.assert_array_equal(first, a)
    if a.max() > a.min():
        assert not np.array_equal(first, second)


def test_sigma_and_sigma_squared_agree() -> None:
    a = samplers.discrete_gaussian(Fraction(3, 2), size=1000, rng=3)
    b = samplers.discrete_gaussian(sigma_squared=Fraction(9, 4), size=1000, rng=3)
    c = samplers.discrete_gaussian(1.5, size=1000, rng=3)
    d = samplers.discrete_gaussian(Decimal("1.5"), size=1000, rng=3)
    e = samplers.discrete_gaussian(np.float32(1.5), size=1000, rng=3)
    for other in (b, c, d, e):
        np.testing.assert_array_equal(a, other)


def test_as_generator() -> None:
    g = np.random.default_rng(1)
    assert samplers.as_generator(g) is g
    assert isinstance(samplers.as_generator(None), np.random.Generator)
    assert isinstance(samplers.as_generator(np.int64(3)), np.random.Generator)


BAD_SCALES = [0, -1, -0.5, -0.0, math.nan, math.inf, -math.inf, "1", True, 1 + 2j, 2.0**53,
              Decimal("NaN"), Decimal("-1"), np.float64("nan")]  # fmt: skip


@pytest.mark.parametrize("bad", BAD_SCALES)
@pytest.mark.parametrize(
    "sampler", [samplers.discrete_laplace, samplers.geometric, samplers.discrete_gaussian]
)
def test_bad_scale(sampler: Callable[..., object], bad: object) -> None:
    with pytest.raises(InvalidParameter, match=r"scale|sigma"):
        sampler(bad)


@pytest.mark.parametrize("sampler", [samplers.discrete_laplace, samplers.geometric])
def test_bad_scale_terms(sampler: Callable[..., object]) -> None:
    with pytest.raises(InvalidParameter, match="scale must be"):
        sampler(None)
    with pytest.raises(InvalidParameter, match="numerator"):
        sampler(Fraction(2**62 + 1, 2**20))


@pytest.mark.parametrize("bad", [-1, 1.5, (2, -1), "3", (2, 1.0), True])
def test_bad_size(bad: object) -> None:
    with pytest.raises(InvalidParameter, match="size"):
        samplers.discrete_laplace(1, size=bad)  # type: ignore[call-overload]


@pytest.mark.parametrize("bad", ["seed", -1, 1.5, True, np.random.RandomState(1)])
def test_bad_rng(bad: object) -> None:
    with pytest.raises(InvalidParameter, match="rng"):
        samplers.discrete_gaussian(1, rng=bad)  # type: ignore[call-overload]


def test_bad_other_parameters() -> None:
    with pytest.raises(InvalidParameter, match="p must be in"):
        samplers.bernoulli(1.5)
    with pytest.raises(InvalidParameter, match="p must be in"):
        samplers.bernoulli(Fraction(-1, 3))
    with pytest.raises(InvalidParameter, match="gamma"):
        samplers.bernoulli_exp(-0.1)
    with pytest.raises(InvalidParameter, match="gamma"):
        samplers.bernoulli_exp(math.nan)
    for n in (0, -3, 2**63, 1.5, True):
        with pytest.raises(InvalidParameter, match="n must"):
            samplers.uniform_int(n)  # type: ignore[call-overload]
    with pytest.raises(InvalidParameter, match="exactly one"):
        samplers.discrete_gaussian(1, sigma_squared=1)
    with pytest.raises(InvalidParameter, match="sigma_squared"):
        samplers.discrete_gaussian(sigma_squared=-2)
    with pytest.raises(InvalidParameter, match="sigma"):
        samplers.discrete_gaussian(0.0)

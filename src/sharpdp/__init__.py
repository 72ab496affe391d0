"""sharpdp: differential privacy where every privacy number is a valid bound, the sharpest known.

Quick start::

    >>> import sharpdp as sdp
    >>> sdp.PureDP(1.0).renyi(1.0)            # KL of ε-DP: ε·tanh(ε/2)
    0.462117
    >>> round(sdp.ZCDP(0.1).epsilon(1e-5), 5)  # CKS20, not BS16's 2.24597
    1.91424
    >>> round(sdp.Gaussian(sigma=1.0).epsilon(1e-5), 6)  # exact (Balle–Wang)
    4.377178
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sharpdp._version import __version__
from sharpdp.errors import (
    AccuracyNotReached,
    BudgetExceeded,
    InvalidParameter,
    LedgerError,
    NoExplicitBound,
    NotImplied,
    NumericalError,
    SharpDPError,
)
from sharpdp.guarantees import (
    GDP,
    MCDP,
    RDP,
    ZCDP,
    ApproxDP,
    ApproxZCDP,
    BoundedRange,
    Guarantee,
    PureDP,
)
from sharpdp.guarantees import install_composed_reader as _install_composed_reader

if TYPE_CHECKING:  # loaded on first use (see __getattr__), so `import sharpdp` stays light
    from sharpdp import audit as audit
    from sharpdp import conversions as conversions
    from sharpdp import data as data
    from sharpdp import local as local
    from sharpdp import plots as plots
    from sharpdp.accounting.accountant import Accountant
    from sharpdp.accounting.calibration import calibrate
    from sharpdp.accounting.clt import CLTEstimate, clt_estimate
    from sharpdp.accounting.composition import Composition, compose, max_compositions
    from sharpdp.accounting.ledger import Ledger
    from sharpdp.conversions import convert
    from sharpdp.mechanisms import (
        DiscreteGaussian,
        DiscreteLaplace,
        Exponential,
        Gaussian,
        Laplace,
        LimitDom,
        Mechanism,
        PermuteAndFlip,
        Quantile,
        RandomizedResponse,
        ReportNoisyMax,
        TopK,
    )


__all__ = [
    "GDP",
    "MCDP",
    "RDP",
    "ZCDP",
    "Accountant",
    "AccuracyNotReached",
    "ApproxDP",
    "ApproxZCDP",
    "BoundedRange",
    "BudgetExceeded",
    "CLTEstimate",
    "Composition",
    "DiscreteGaussian",
    "DiscreteLaplace",
    "Exponential",
    "Gaussian",
    "Guarantee",
    "InvalidParameter",
    "Laplace",
    "Ledger",
    "LedgerError",
    "LimitDom",
    "Mechanism",
    "NoExplicitBound",
    "NotImplied",
    "NumericalError",
    "PermuteAndFlip",
    "PureDP",
    "Quantile",
    "RandomizedResponse",
    "ReportNoisyMax",
    "SharpDPError",
    "TopK",
    "__version__",
    "calibrate",
    "clt_estimate",
    "compose",
    "convert",
    "max_compositions",
]

#: Where each lazily loaded public name lives (the guarantees and errors load eagerly).
_LAZY_NAMES = {
    "Accountant": "sharpdp.accounting.accountant",
    "calibrate": "sharpdp.accounting.calibration",
    "CLTEstimate": "sharpdp.accounting.clt",
    "clt_estimate": "sharpdp.accounting.clt",
    "Composition": "sharpdp.accounting.composition",
    "compose": "sharpdp.accounting.composition",
    "max_compositions": "sharpdp.accounting.composition",
    "Ledger": "sharpdp.accounting.ledger",
    "convert": "sharpdp.conversions",
    **dict.fromkeys(
        (
            "DiscreteGaussian",
            "DiscreteLaplace",
            "Exponential",
            "Gaussian",
            "Laplace",
            "LimitDom",
            "Mechanism",
            "PermuteAndFlip",
            "Quantile",
            "RandomizedResponse",
            "ReportNoisyMax",
            "TopK",
        ),
        "sharpdp.mechanisms",
    ),
}
_LAZY_SUBMODULES = {"accounting", "audit", "conversions", "data", "local", "mechanisms", "plots"}


def _read_composed(rounds: tuple[tuple[Guarantee, int], ...], quantity: str, at: float) -> float:
    # mechanisms made of rounds read their composition from the accounting layer, loaded here
    # on first use (see sharpdp.guarantees.ComposedReader)
    from sharpdp.accounting.composition import read_composed

    return read_composed(rounds, quantity, at)


def _read_composed_bounds(
    rounds: tuple[tuple[Guarantee, int], ...], epsilons: tuple[float, ...]
) -> tuple[float, ...] | None:
    from sharpdp.accounting.composition import read_composed_bounds

    return read_composed_bounds(rounds, epsilons)


_install_composed_reader(_read_composed, _read_composed_bounds)


def __getattr__(name: str) -> Any:
    # Layers above the calculus load on first use, keeping `import sharpdp` close to numpy's
    # own import time; the value is then cached in the module's namespace.
    import importlib

    if name in _LAZY_NAMES:
        value = getattr(importlib.import_module(_LAZY_NAMES[name]), name)
    elif name in _LAZY_SUBMODULES:
        value = importlib.import_module(f"sharpdp.{name}")
    else:
        raise AttributeError(f"module 'sharpdp' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__) | _LAZY_SUBMODULES)

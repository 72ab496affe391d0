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

from typing import Any

from sharpdp.accounting.accountant import Accountant
from sharpdp.accounting.clt import CLTEstimate, clt_estimate
from sharpdp.accounting.composition import Composition, compose, max_compositions
from sharpdp.accounting.ledger import Ledger
from sharpdp.conversions import convert
from sharpdp.errors import (
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
from sharpdp.mechanisms import (
    DiscreteGaussian,
    DiscreteLaplace,
    Exponential,
    Gaussian,
    Laplace,
    Mechanism,
    PermuteAndFlip,
    RandomizedResponse,
    ReportNoisyMax,
    TopK,
    calibrate,
)

__version__ = "0.1.0"

__all__ = [
    "GDP",
    "MCDP",
    "RDP",
    "ZCDP",
    "Accountant",
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
    "Mechanism",
    "NoExplicitBound",
    "NotImplied",
    "NumericalError",
    "PermuteAndFlip",
    "PureDP",
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

_LAZY_SUBMODULES = {"audit", "conversions"}


def __getattr__(name: str) -> Any:
    # Heavy or optional layers load on first use, keeping `import sharpdp` fast.
    if name in _LAZY_SUBMODULES:
        import importlib

        return importlib.import_module(f"sharpdp.{name}")
    raise AttributeError(f"module 'sharpdp' has no attribute {name!r}")

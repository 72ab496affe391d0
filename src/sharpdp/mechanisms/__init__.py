"""Mechanisms: immutable descriptions with exact privacy characterisations, that also run."""

from sharpdp.mechanisms.additive import Gaussian, Laplace
from sharpdp.mechanisms.base import Mechanism
from sharpdp.mechanisms.discrete import DiscreteGaussian, DiscreteLaplace
from sharpdp.mechanisms.limited_domain import LimitDom
from sharpdp.mechanisms.quantile import Quantile
from sharpdp.mechanisms.randomized_response import RandomizedResponse
from sharpdp.mechanisms.selection import Exponential, PermuteAndFlip, ReportNoisyMax, TopK

__all__ = [
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
]

"""Mechanisms: immutable descriptions with exact privacy characterisations, that also run."""

from sharpdp.mechanisms.additive import Gaussian, Laplace
from sharpdp.mechanisms.base import Mechanism
from sharpdp.mechanisms.randomized_response import RandomizedResponse

__all__ = ["Gaussian", "Laplace", "Mechanism", "RandomizedResponse"]

"""The library version (one place; the ledger records it with every spend)."""

__version__ = "0.1.0"

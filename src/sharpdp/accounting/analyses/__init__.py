"""One module per composition analysis; importing this package registers them all.

Each module defines a ``prepare(items, adaptive)`` function decorated with
:func:`sharpdp.accounting.registry.analysis`, returning a guarantee for the composition or raising
:class:`~sharpdp.NotImplied` when its theorem does not apply. To add an analysis, add a module here
and import it below: the import order is the order in which analyses are tried and listed (the
costly, refinable PLD last).
"""

from sharpdp.accounting.analyses import gdp, mgf, kov, ddr20, rdp, approx_rdp, zcdp, basic, smoothed, pld  # noqa: I001

__all__ = ["approx_rdp", "basic", "ddr20", "gdp", "kov", "mgf", "pld", "rdp", "smoothed", "zcdp"]

"""Accounting: composition of privacy guarantees, privacy loss distributions, ledgers, accountants.

Layout (each module has one job; the package sits above the calculus and the mechanisms):

* :mod:`~sharpdp.accounting.composition` — :class:`Composition`, :func:`compose`,
  :func:`max_compositions` and :meth:`Composition.explain`: the minimum over every valid analysis,
  with provenance.
* :mod:`~sharpdp.accounting.analyses` — one module per composition theorem, each registering
  itself with :func:`~sharpdp.accounting.registry.analysis`. **Adding an analysis is adding one
  module** there (and one line to ``analyses/__init__.py``, which fixes the order in which
  analyses are tried and listed).
* :mod:`~sharpdp.accounting.pld` — dominating pairs, grids and FFT composition of privacy loss
  distributions (used by the ``pld`` and ``mgf`` analyses).
* :mod:`~sharpdp.accounting.clt` — the central-limit μ-GDP *estimate* (never a guarantee).
* :mod:`~sharpdp.accounting.ledger` and :mod:`~sharpdp.accounting._serialize` — the durable SQLite
  ledger and its JSON item format; :mod:`~sharpdp.accounting.accountant` — budgets enforced on it.
"""

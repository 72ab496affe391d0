"""Test ids that are the same in every process: ``repr`` without memory addresses.

A parametrized test's id must not depend on where an object lives, or two runs (and the workers
of a parallel run, which each collect the tests and must agree on their ids) name it differently.
"""

from __future__ import annotations

import re

_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")


def stable_id(value: object) -> str:
    """``repr(value)`` with every `` at 0x…`` address removed."""
    return _ADDRESS.sub("", repr(value))

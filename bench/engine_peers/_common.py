"""Shared by the peer scripts (each runs in its own venv, so only the standard library here)."""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
import traceback
from collections.abc import Callable
from typing import Any


def job() -> dict[str, Any]:
    ap = argparse.ArgumentParser()
    ap.add_argument("--job", required=True)
    return json.loads(ap.parse_args().job)


def emit(fn: Callable[[dict[str, Any]], dict[str, Any]]) -> None:
    """Run ``fn(job)`` and print its result as the last JSON line (errors included)."""
    try:
        out = fn(job())
        out.setdefault("ok", True)
    except Exception as exc:
        traceback.print_exc()
        out = {"ok": False, "error": one_line(exc)}
    sys.stdout.flush()
    print(json.dumps(out, default=str), flush=True)


def one_line(exc: BaseException) -> str:
    """The most telling line of an exception (a JVM/Python worker trace ends in the real one)."""
    lines = [ln.strip() for ln in str(exc).splitlines() if ln.strip()]
    errs = [ln for ln in lines if re.match(r"^[\w.]+(Error|Exception): ", ln)]
    text = errs[-1] if errs else (lines[0] if lines else "")
    return f"{type(exc).__name__}: {text}"[:200]


class Clock:
    def __init__(self) -> None:
        self.t0 = time.perf_counter()

    def __call__(self) -> float:
        return time.perf_counter() - self.t0

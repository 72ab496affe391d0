"""Fixtures of the command-line tests."""

from __future__ import annotations

import sys
from collections.abc import Callable

import pytest

from sharpdp.cli import main

#: ``sharpdp ARGS`` run through the console script's ``main()``: (exit code, stdout, stderr).
MainRun = Callable[[list[str]], tuple[int, str, str]]


@pytest.fixture
def run_main(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> MainRun:
    """``sharpdp ARGS`` through the console script's ``main()``, in this process: the one-line
    errors and exit codes of the installed script, without a process start (~3 s each here)."""

    def run(args: list[str]) -> tuple[int, str, str]:
        monkeypatch.setattr(sys, "argv", ["sharpdp", *args])
        try:
            main()
            code = 0
        except SystemExit as exit_:
            code = int(exit_.code or 0)
        out = capsys.readouterr()
        return code, out.out, out.err

    return run

"""``python -m sharpdp`` runs the command line; :func:`main` is also the ``sharpdp`` script.

The script is installed with the core package, but the command's libraries (typer, rich and the
data layer's) come with the ``cli`` extra: without them it says so in one line."""

from __future__ import annotations

import sys

#: Top-level modules the command needs beyond the core package.
_CLI_MODULES = frozenset({"typer", "rich", "click", "pandas", "pyarrow", "ibis", "duckdb"})


def main() -> None:
    """Run the ``sharpdp`` command (:func:`sharpdp.cli.main`)."""
    try:
        from sharpdp.cli import main as command
    except ModuleNotFoundError as err:
        if (err.name or "").partition(".")[0] not in _CLI_MODULES:
            raise
        print(
            f"error: the sharpdp command needs the cli extra ({err.name} is not installed): "
            "pip install 'sharpdp[cli]' (in a clone: '.[cli]')",
            file=sys.stderr,
        )
        sys.exit(2)
    command()


if __name__ == "__main__":
    main()

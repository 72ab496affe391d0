"""``python -m sharpdp.cli``: the ``sharpdp`` command, for environments without its script."""

from sharpdp.cli import main

if __name__ == "__main__":
    main()

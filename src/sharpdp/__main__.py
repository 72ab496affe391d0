"""``python -m sharpdp`` runs the command line."""

from sharpdp.cli import main

main()

"""``python -m sharpdp`` runs the command line."""

if __name__ == "__main__":
    from sharpdp.cli import main

    main()

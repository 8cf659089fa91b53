"""``python -m curation``: the ``golden`` command line."""

from curation.cli import main

if __name__ == "__main__":
    main(prog_name="golden")

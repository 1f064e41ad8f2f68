"""``python -m gtdyn …`` is the ``gtdyn`` command; with no arguments it runs ``gtdyn solve``."""

import sys

from gtdyn.cli import main

if __name__ == "__main__":
    sys.exit(main(sys.argv[1:] or ["solve"]))

"""``python -m presa_trio`` is ``presa-trio``."""

from presa_trio.cli.entry import main

main()

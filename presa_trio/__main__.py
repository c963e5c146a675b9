"""``python -m presa_trio`` is ``presa-trio``."""

from presa_trio.cli.main import main

main()

"""The benchmark behind ``nox -s bench``: presa-trio against a hypercorn-Trio floor.

Absolute numbers on small shared machines swing from run to run, so every
HTTP figure is also given as a ratio against the floor measured in the same
run. See ``bench/run.py``.
"""

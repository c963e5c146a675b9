"""The conformance harness: the pinned MCP conformance runner against presa_trio.

run.py serves the app and runs the runner, baseline.py judges what it left
against expected-failures.yml, report.py prints the verdict.
"""

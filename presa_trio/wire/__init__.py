"""The sans-IO layer: what goes over the wire, with no trio, no ASGI and no I/O.

Everything here takes plain values (dicts, strings, bytes) and returns attrs
objects or raises one of :mod:`presa_trio.wire.errors`. A test fails if any
module in this package imports trio or hypercorn.
"""

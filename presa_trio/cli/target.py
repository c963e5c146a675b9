"""Finding the server to serve: ``MODULE:ATTR``, as hypercorn and uvicorn find apps.

``ATTR`` (dotted for a nested attribute) names a
:class:`~presa_trio.server.Server`, or a callable taking no arguments that
returns one. The module is imported with the current directory first on
``sys.path``, so ``presa-trio serve app:server`` finds ``./app.py``.

A target that does not lead to a server raises :class:`TargetError` with a
one-line reason, and so does a server its author got wrong in a way presa
can name in one line: a registration presa refuses (a
:class:`~presa_trio.server.SignatureError` or
:class:`~presa_trio.server.SchemaError` naming the tool and the parameter),
or a ``SyntaxError`` in the module (its file, line and reason). Any other
exception raised *inside* the user's module or factory is not caught: its
traceback is what its author needs.
"""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from typing import Any

from presa_trio.server import SchemaError, Server, SignatureError


class TargetError(Exception):
    """``MODULE:ATTR`` does not name a server, or the server it names is refused."""


def one_line(error: SyntaxError | SignatureError | SchemaError) -> TargetError:
    """A mistake in the served module as the one line that names it."""
    if isinstance(error, SyntaxError):
        return TargetError(f"{error.filename}, line {error.lineno}: {error.msg}")
    return TargetError(str(error))


def load_server(target: str) -> Server:
    """Import ``MODULE``, follow ``ATTR``, and return the server it names or makes."""
    module_name, colon, attribute = target.partition(":")
    if not colon or not module_name or not attribute:
        raise TargetError(f"{target!r} is not MODULE:ATTR (e.g. examples.hello_server:server)")
    if os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        missing = error.name or ""
        if module_name != missing and not module_name.startswith(missing + "."):
            raise  # a module the target imports is missing: the user's own error
        raise TargetError(f"cannot import module {module_name!r}: {error}") from None
    except (SyntaxError, SignatureError, SchemaError) as error:
        raise one_line(error) from None
    found: Any = module
    for part in attribute.split("."):
        if not hasattr(found, part):
            raise TargetError(f"module {module_name!r} has no attribute {attribute!r}")
        found = getattr(found, part)
    if isinstance(found, Server):
        return found
    if not callable(found):
        raise TargetError(f"{target} is a {type(found).__name__}, not a Server or a factory")
    try:
        inspect.signature(found).bind()
    except TypeError:
        raise TargetError(f"{target} is a factory that needs arguments; give it none") from None
    except ValueError:
        pass  # no signature to inspect: try the call
    try:
        made = found()
    except (SignatureError, SchemaError) as error:
        raise one_line(error) from None
    if not isinstance(made, Server):
        raise TargetError(f"{target}() returned a {type(made).__name__}, not a Server")
    return made

"""The wire layer is sans-IO: it imports no I/O library and nothing above it.

``presa_trio.wire`` turns plain values into models and back. Trio, hypercorn
and the layers above (``server``, ``http``, ``tasks``, the edges) import it,
never the other way round (docs/architecture.md).
"""

from __future__ import annotations

from pathlib import Path

import pytest

import presa_trio.wire
from tests.import_graph import imported_modules
from tests.wire.layering import forbidden

WIRE_DIR = Path(presa_trio.wire.__file__).parent
WIRE_MODULES = sorted(WIRE_DIR.glob("*.py"))


def test_wire_package_has_modules() -> None:
    """presa-defined: the layering check below really reads the wire package."""
    assert {p.name for p in WIRE_MODULES} >= {"envelope.py", "errors.py", "request_state.py"}


@pytest.mark.parametrize("path", WIRE_MODULES, ids=lambda p: p.name)
def test_wire_module_imports_no_io_and_no_upper_layer(path: Path) -> None:
    """presa-defined (docs/architecture.md): wire/ is sans-IO.

    No trio, no hypercorn (nor any other I/O library), and nothing from
    presa_trio.server, presa_trio.http or any other layer above wire.
    """
    offending = sorted(m for m in imported_modules(path) if forbidden(m))
    assert offending == []


def test_the_layering_check_catches_an_offending_import(tmp_path: Path) -> None:
    """presa-defined: the check is not vacuous; it flags each kind of import."""
    sample = tmp_path / "sample.py"
    sample.write_text(
        "import trio\n"
        "from hypercorn.trio import serve\n"
        "from presa_trio.server import Server\n"
        "from ..http import app\n"
        "if True:\n    import presa_trio.tasks.runner\n"
    )
    assert sorted(m for m in imported_modules(sample) if forbidden(m)) == [
        "hypercorn.trio",
        "presa_trio.http",
        "presa_trio.server",
        "presa_trio.tasks.runner",
        "trio",
    ]

"""Every spec page a citation names by its path is a page of 2026-07-28.

Code, tests and docs may cite a page by its path (``server/utilities/caching
§Cache Key``, ``basic/patterns/progress``; docs/spec-notes.md, "How presa
cites"). A path the revision does not have (one of an earlier revision's
layout, ``basic/utilities/…``) sends the reader nowhere.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

from tests.citing_files import ROOT, citing_files

#: The pages of the 2026-07-28 specification under ``basic``, ``server`` and
#: ``client``, as published at https://modelcontextprotocol.io/specification/2026-07-28/;
#: an ``index`` page also by its folder.
PAGES = frozenset(
    {
        "basic/index",
        "basic/versioning",
        "basic/authorization",
        "basic/authorization/index",
        "basic/authorization/authorization-server-discovery",
        "basic/authorization/client-registration",
        "basic/authorization/security-considerations",
        "basic/patterns",
        "basic/patterns/index",
        "basic/patterns/cancellation",
        "basic/patterns/mrtr",
        "basic/patterns/progress",
        "basic/patterns/subscriptions",
        "basic/transports",
        "basic/transports/index",
        "basic/transports/stdio",
        "basic/transports/streamable-http",
        "client/elicitation",
        "client/roots",
        "client/sampling",
        "server/index",
        "server/discover",
        "server/prompts",
        "server/resources",
        "server/tools",
        "server/utilities/caching",
        "server/utilities/completion",
        "server/utilities/logging",
        "server/utilities/pagination",
    }
)

#: A page path standing alone: not part of a longer path or URL, nor a file name.
PAGE_PATH = re.compile(r"(?<![\w/.-])(?:basic|server|client)/[a-z][a-z/-]*[a-z](?![\w/-])(?!\.\w)")


def cited_pages(text: str) -> Iterator[str]:
    yield from PAGE_PATH.findall(text)


def test_every_page_cited_by_its_path_is_a_page_of_the_revision() -> None:
    """presa-defined (docs/spec-notes.md, How presa cites)."""
    unknown = [
        f"{path.relative_to(ROOT)}: {page}"
        for path in citing_files(but=__file__)
        for page in cited_pages(path.read_text(encoding="utf-8"))
        if page not in PAGES
    ]
    assert unknown == []


def test_a_path_the_revision_does_not_have_is_found() -> None:
    """presa-defined: the check above reads a path in prose, and leaves files and URLs alone."""
    text = (
        "Spec: basic/utilities/pagination. See tests/server/mistakes.py,\n"
        "https://modelcontextprotocol.io/specification/2026-07-28/server/tools and\n"
        "server/utilities/caching §Cache Key; client/sdk_server.py.\n"
    )
    assert list(cited_pages(text)) == ["basic/utilities/pagination", "server/utilities/caching"]

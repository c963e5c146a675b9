"""Every citation of SEP-2663 names one of its sections, as published.

Code, tests and docs cite the Tasks extension as ``SEP-2663 §<section>``
(docs/spec-notes.md, "How presa cites"), several sections of the page as
``§<section>, §<section>``. A section the SEP does not have (one of the
2025-11-25 tasks page, or a method's name) sends the reader nowhere. The
citation may go on after the section's name (``§Task Polling (Response)``,
``§Tasks: ttlMs null is unlimited``), so each must start with a heading.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from itertools import pairwise

from tests.citing_files import ROOT, citing_files

#: SEP-2663's headings, every level, as published at
#: https://modelcontextprotocol.io/seps/2663-tasks-extension.
HEADINGS = (
    "Abstract",
    "Motivation",
    "Specification",
    "Extension Identifier",
    "Capability Negotiation",
    "Supported Methods",
    "Polymorphic Results",
    "Tasks",
    "Task Status",
    "Task Creation",
    "Task Polling",
    "Request",
    "Response",
    "Task Update Requests",
    "Task Cancellation",
    "Task Status Notifications",
    "Streamable HTTP: Routing Headers",
    "Example Message Flow",
    "Error Handling",
    "Protocol Errors",
    "Task Execution Errors",
    "Reservations",
    "Rationale",
    "Unsolicited Tasks vs. Immediate Results",
    "Splitting Reads (`tasks/get`) and Writes (`tasks/update`)",
    "Task Creation Consistency",
    "Ack-only Cancellation",
    "Composition with Multi Round-Trip Requests",
    "Backward Compatibility",
    "Security Implications",
    "Reference Implementation",
)

#: A citation of the SEP, up to its first section sign (``SEP-2663 (draft) §`` too).
CITATION = re.compile(r"SEP-2663(?:\s*\([^)]*\))?\s*§")
#: A line break with the next line's indentation and comment marker: a
#: citation wrapped over lines reads as one.
WRAP = re.compile(r"\n\s*(?:#:?\s*)?")


def cited_sections(text: str) -> Iterator[str]:
    """The text after each ``§`` of each SEP-2663 citation in ``text``.

    A citation's sections follow one another after a comma; a ``§`` after
    anything else belongs to another source (``spec-notes §22``).
    """
    flat = WRAP.sub(" ", text)
    for citation in CITATION.finditer(flat):
        parts = flat[citation.end() : citation.end() + 400].split("§")
        yield parts[0]
        for before, part in pairwise(parts):
            if not before.rstrip().endswith(","):
                break
            yield part


def test_every_sep_2663_citation_names_one_of_its_sections() -> None:
    """presa-defined (docs/spec-notes.md, How presa cites)."""
    unknown = [
        f"{path.relative_to(ROOT)}: §{section[:50]}"
        for path in citing_files(but=__file__)
        for section in cited_sections(path.read_text(encoding="utf-8"))
        if not section.startswith(HEADINGS)
    ]
    assert unknown == []


def test_a_section_the_sep_does_not_have_is_found() -> None:
    """presa-defined: the check above reads wrapped and chained citations."""
    text = (
        "    (SEP-2663 §Task Creation, §Task Polling;\n"
        "    # SEP-2663 §Task\n    # Cancellation, spec-notes §28)\n"
        "    SEP-2663 §Resource Management, §tasks/get\n"
    )
    sections = [s.split(",")[0].split(";")[0].split(")")[0].strip() for s in cited_sections(text)]
    assert sections == [
        "Task Creation",
        "Task Polling",
        "Task Cancellation",
        "Resource Management",
        "tasks/get",
    ]
    assert [s for s in sections if not s.startswith(HEADINGS)] == [
        "Resource Management",
        "tasks/get",
    ]

"""How a resource template matches a URI: as a backtracking regex would, in linear work."""

from __future__ import annotations

import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from presa_trio.server.registered import template_pattern

#: RFC 3986 §3.3: one path segment, pchars and %XX, the text a regex engine would
#: give one ``{name}``.
SEGMENT = r"(?:[A-Za-z0-9\-._~!$&'()*+,;=:@]|%[0-9A-Fa-f]{2})+"

#: Characters that make templates ambiguous and URIs awkward: separators, the
#: percent sign and hex digits, and characters no URI holds.
UNITS = st.sampled_from(["a", "1", "F", ".", "-", "/", "%", "%4F", "?", " ", "é"])


def texts(max_size: int) -> st.SearchStrategy[str]:
    return st.lists(UNITS, max_size=max_size).map("".join)


def regex_variables(pieces: list[str], uri: str) -> list[str] | None:
    """The variables Python's backtracking ``re`` finds for the template ``pieces``."""
    regex = "".join(
        re.escape(piece) if index % 2 == 0 else f"({SEGMENT})" for index, piece in enumerate(pieces)
    )
    found = re.fullmatch(regex, uri)
    return None if found is None else list(found.groups())


@given(
    literals=st.lists(texts(3), min_size=2, max_size=4),
    values=st.lists(texts(4), min_size=3, max_size=3),
    noise=texts(2),
)
def test_a_template_matches_what_a_backtracking_regex_matches(
    literals: list[str], values: list[str], noise: str
) -> None:
    """presa-defined (server/resources §Resource Templates, RFC 6570 level 1; docs/api.md
    ``Server.resource_template``): each ``{name}`` takes one path segment, the first
    at its longest with which the rest still matches, then the next, as ``re`` would."""
    pieces: list[str] = []
    for index, text in enumerate(literals):
        if index:
            pieces.append(f"v{index}")
        pieces.append(text)
    template = "note:" + "".join(
        piece if index % 2 == 0 else "{" + piece + "}" for index, piece in enumerate(pieces)
    )
    # The template filled in with any text, and something after it or not.
    uri = "note:" + literals[0]
    for value, text in zip(values, literals[1:], strict=False):
        uri += value + text
    uri += noise
    regex_pieces = ["note:" + pieces[0], *pieces[1:]]
    assert template_pattern(template).match(uri) == regex_variables(regex_pieces, uri)


@given(st.sampled_from(["-", "a", "%41", "-a"]))
def test_adjacent_variables_match_a_long_uri_in_linear_work(unit: str) -> None:
    """presa-defined (resources §Security Considerations: validate all resource URIs): a
    URI thousands of characters long, which no variable split fits, against
    variables only a ``-`` or nothing apart, is answered without trying every split (a
    backtracking regex tries some n³ of them: hours here)."""
    uri = "note://" + unit * 20_000 + "/"
    assert template_pattern("note://{y}-{m}-{d}").match(uri) is None
    assert template_pattern("note://{a}{b}{c}/x").match(uri) is None


@pytest.mark.parametrize(
    ("template", "uri", "variables"),
    [
        ("note:{name}.{ext}", "note:my.file.txt", ["my.file", "txt"]),
        ("note:{y}-{m}-{d}", "note:1-2-3-4", ["1-2", "3", "4"]),
        ("note:{a}{b}", "note:%4F%4F", ["%4F", "%4F"]),
        ("note:{a}{b}", "note:a%4F", ["a", "%4F"]),
        ("note:{a}{b}", "note:F4F", ["F4", "F"]),
        ("note:{a}{b}", "note:%4F", None),
        ("note:{a}{b}", "note:%4", None),
        ("note:{a}.{a}", "note:x.x", ["x"]),
        # The first takes its longest ("x.y.x", with the rest matching some text), and
        # the second does not repeat it: a name used twice gets no second choice.
        ("note:{a}.{a}", "note:x.y.x.y", None),
    ],
)
def test_a_template_splits_a_uri_as_a_backtracking_regex_would(
    template: str, uri: str, variables: list[str] | None
) -> None:
    """presa-defined (docs/api.md ``Server.resource_template``): the first variable at its
    longest, a ``%XX`` never cut in two, a repeated name the text it took first."""
    assert template_pattern(template).match(uri) == variables

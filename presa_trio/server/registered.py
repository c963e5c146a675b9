"""What a registration keeps: the handler types, and one record per registered thing.

:class:`~presa_trio.server.registry.Server` fills its tables with these
records; the core methods (:mod:`~presa_trio.server.tools`,
:mod:`~presa_trio.server.resources`, :mod:`~presa_trio.server.prompts`)
read them. The handler types say what each kind of handler is called with
and may return.

Spec: 2026-07-28 server/tools §Tool, server/resources §Resource Templates
(RFC 6570 URI templates), server/prompts §Prompt.
"""

from __future__ import annotations

import re
import string
from collections.abc import Awaitable, Callable
from typing import Any, Concatenate, TypeVar

import attrs

from presa_trio.server.context import RequestContext
from presa_trio.server.signatures import Returns, SignatureError
from presa_trio.wire import models
from presa_trio.wire.models import JSONObject
from presa_trio.wire.mrtr import InputRequired
from presa_trio.wire.schemas import CompiledSchema

ToolOutput = (
    str | models.ContentBlock | list[models.ContentBlock] | models.CallToolResult | InputRequired
)
ToolHandler = Callable[[RequestContext, JSONObject], Awaitable[ToolOutput]]
ResourceOutput = str | bytes | list[models.ResourceContents] | InputRequired
ResourceHandler = Callable[[RequestContext], Awaitable[ResourceOutput]]
TemplateHandler = Callable[[RequestContext, dict[str, str]], Awaitable[ResourceOutput]]
PromptOutput = str | list[models.PromptMessage] | models.GetPromptResult | InputRequired
PromptHandler = Callable[[RequestContext, dict[str, str]], Awaitable[PromptOutput]]
CompletionHandler = Callable[
    [RequestContext, str, str, dict[str, str]], Awaitable[models.Completion]
]

# The decorators return a handler unchanged, so it keeps its type. Their bounds
# admit a plain ``def`` too, for ``thread=True``; and the request context first,
# so a type checker sees ``async def t(x: int)`` is no handler.
AnyToolHandler = TypeVar("AnyToolHandler", bound=Callable[Concatenate[RequestContext, ...], Any])
AnyPromptHandler = TypeVar(
    "AnyPromptHandler", bound=Callable[Concatenate[RequestContext, ...], Any]
)
AnyResourceHandler = TypeVar(
    "AnyResourceHandler", bound=Callable[[RequestContext], Awaitable[ResourceOutput] | str | bytes]
)
AnyTemplateHandler = TypeVar(
    "AnyTemplateHandler",
    bound=Callable[[RequestContext, dict[str, str]], Awaitable[ResourceOutput] | str | bytes],
)
AnyCompletionHandler = TypeVar(
    "AnyCompletionHandler",
    bound=Callable[
        [RequestContext, str, str, dict[str, str]], Awaitable[models.Completion] | models.Completion
    ],
)


@attrs.frozen
class RegisteredTool:
    tool: models.Tool
    handler: ToolHandler
    # Mcp-Param-<Name> header -> the argument path it mirrors.
    header_params: dict[str, tuple[str, ...]]
    # The compiled inputSchema, and outputSchema if the tool has one.
    arguments: CompiledSchema
    structured: CompiledSchema | None
    # Whether the handler starts child tasks in ``ctx.nursery``: a plain call
    # then runs it inside a nursery of its own (see :func:`~presa_trio.server.tools.run_call`).
    nursery: bool = False
    # What the declared return type says it returns (presa_trio.server.results).
    returns: Returns = Returns.CONTENT
    # Client capabilities the tool may ask for, checked before it runs
    # (presa_trio.server.capabilities).
    needs: frozenset[str] = frozenset()


@attrs.frozen
class RegisteredResource:
    resource: models.Resource
    handler: ResourceHandler


@attrs.frozen
class TemplatePattern:
    """What a URI template matches: its pieces in order, and its variables.

    A piece is the template's literal text, or the index in ``variables`` of
    the ``{name}`` that stands there.
    """

    pieces: tuple[str | int, ...]
    variables: tuple[str, ...]

    def same_as(self, other: TemplatePattern) -> bool:
        """Whether both match the same URIs: the same text between variables that
        repeat alike, whatever the variables are named."""
        return self.pieces == other.pieces

    def match(self, uri: str) -> list[str] | None:
        """Each variable's text in ``uri``, or ``None`` when the template cannot produce it.

        The first variable takes the longest text with which the rest can
        still match, then the next, as a backtracking regex would; but each
        step is decided from a table of which pieces can match which rest of
        the URI, built once from the end, so the cost is the URI's length
        times the number of pieces, however the variables sit next to each
        other (``{y}-{m}-{d}``, ``{name}.{ext}``). A name used twice must
        match the text it took first. A URI without the template's first and
        last text is refused before any table is built.
        """
        first, last = self.pieces[0], self.pieces[-1]
        # template_pattern begins and ends the pieces with text, "" if need be.
        assert isinstance(first, str)
        assert isinstance(last, str)
        if not (uri.startswith(first) and uri.endswith(last)):
            return None
        ends = segment_ends(uri)
        rows = [[-1] * len(uri) + [len(uri)]]
        for piece in reversed(self.pieces):
            after = rows[-1]
            rows.append(
                literal_row(uri, piece, after)
                if isinstance(piece, str)
                else variable_row(uri, ends, after)
            )
        rows.reverse()
        values: dict[int, str] = {}
        position = 0
        for piece, row, after in zip(self.pieces, rows, rows[1:], strict=False):
            earlier = values.get(piece) if isinstance(piece, int) else None
            if earlier is None:
                end = row[position]
            elif uri.startswith(earlier, position):
                end = position + len(earlier)
                end = end if after[end] != -1 else -1
            else:
                end = -1
            if end == -1:
                return None
            if isinstance(piece, int):
                values[piece] = uri[position:end]
            position = end
        return [values[index] for index in range(len(self.variables))]


@attrs.frozen
class RegisteredTemplate:
    template: models.ResourceTemplate
    pattern: TemplatePattern
    handler: TemplateHandler

    def match(self, uri: str) -> dict[str, str] | None:
        """The variables of ``uri``, or ``None``: also for a value ``.`` or ``..``.

        A dot segment names no resource of its own: RFC 3986 §5.2.4 removes
        it, and a handler joining it to a path would leave the template's
        directory (resources §Security Considerations: sanitize file paths).
        A dot written ``%2E`` is the same dot (RFC 3986 §2.3, §6.2.2.2), so
        ``%2E%2E`` is refused as ``..`` is.
        """
        values = self.pattern.match(uri)
        if values is None or not DOT_SEGMENTS.isdisjoint(map(decoded_dots, values)):
            return None
        return dict(zip(self.pattern.variables, values, strict=True))


#: One path segment of a URI, never empty (RFC 3986 §3.3 ``segment-nz``: ``pchar``s,
#: each ``%`` with two hex digits): what one ``{name}`` matches. Text no URI can
#: hold (a space, a control, a lone ``%``, a letter outside ASCII) matches no
#: template (resources §Security Considerations: validate all resource URIs).
PCHARS = frozenset(string.ascii_letters + string.digits + "-._~!$&'()*+,;=:@")
HEXDIGITS = frozenset(string.hexdigits)
#: RFC 3986 §3.3: the segments that are no name.
DOT_SEGMENTS = frozenset({".", ".."})
#: One expression of a URI template, braces included (RFC 6570 §2.2).
EXPRESSION = re.compile(r"\{[^{}]*\}")
#: A level-1 expression: one variable name (RFC 6570 §2.3 ``varname``).
LEVEL_ONE = re.compile(
    r"\{((?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+(?:\.(?:[A-Za-z0-9_]|%[0-9A-Fa-f]{2})+)*)\}"
)


def decoded_dots(segment: str) -> str:
    """``segment`` with each ``%2E`` (either case) read as the ``.`` it encodes."""
    return segment.replace("%2E", ".").replace("%2e", ".")


def template_pattern(uri_template: str) -> TemplatePattern:
    """RFC 6570 level 1: each ``{var}`` matches one non-empty path segment.

    A variable named twice matches the same text both times. Any other
    expression (an operator such as ``{+path}`` or ``{?q}``, a list of
    variables, a modifier) or a stray brace is refused, a one-line
    :class:`SignatureError`: the template would be listed, and no URI
    would ever match it.
    """
    where = f"resource template {uri_template!r}"
    variables: list[str] = []
    pieces: list[str | int] = []
    position = 0
    for expression in EXPRESSION.finditer(uri_template):
        pieces.append(literal(where, uri_template[position : expression.start()]))
        level_one = LEVEL_ONE.fullmatch(expression.group())
        if level_one is None:
            raise SignatureError(
                f"{where}: {expression.group()!r} is not an expression presa matches; "
                "write {name} (RFC 6570 level 1)"
            )
        name = level_one.group(1)
        if name not in variables:
            variables.append(name)
        pieces.append(variables.index(name))
        position = expression.end()
    pieces.append(literal(where, uri_template[position:]))
    return TemplatePattern(tuple(pieces), tuple(variables))


def literal(where: str, text: str) -> str:
    """A template's text between expressions; a brace there is refused."""
    if "{" in text or "}" in text:
        raise SignatureError(f"{where}: a brace outside a {{name}} expression in {text!r}")
    return text


def segment_ends(uri: str) -> list[int]:
    """For each position of ``uri``, where the longest run of segment characters from it ends.

    A segment character is a ``pchar``, or a ``%`` followed by two hex digits.
    """
    ends = list(range(len(uri) + 1))
    for at in range(len(uri) - 1, -1, -1):
        char = uri[at]
        if char in PCHARS or (
            char == "%" and at + 2 < len(uri) and HEXDIGITS.issuperset(uri[at + 1 : at + 3])
        ):
            ends[at] = ends[at + 1]
    return ends


def literal_row(uri: str, text: str, after: list[int]) -> list[int]:
    """Where literal ``text`` ends when it starts at each position and the rest matches; else -1."""
    row = [-1] * (len(uri) + 1)
    start = uri.find(text)
    while start != -1:
        if after[start + len(text)] != -1:
            row[start] = start + len(text)
        start = uri.find(text, start + 1)
    return row


def variable_row(uri: str, ends: list[int], after: list[int]) -> list[int]:
    """Where a variable starting at each position ends, at its longest with the rest matching.

    Its text is one or more segment characters and never stops inside a
    ``%XX`` it holds (RFC 3986 §3.3 ``segment-nz``); -1 where no such text
    lets the rest match.
    """
    # The latest end at or before each position after which the rest matches
    # and that cuts no %XX in two (a text starting inside one may end there).
    latest = [-1] * (len(uri) + 1)
    for end in range(1, len(uri) + 1):
        whole = uri[end - 1] != "%" and (end < 2 or uri[end - 2] != "%")
        latest[end] = end if after[end] != -1 and whole else latest[end - 1]
    row = [-1] * (len(uri) + 1)
    for start in range(len(uri)):
        end = latest[ends[start]]
        if end > start + 1:
            row[start] = end
        elif ends[start] > start and uri[start] != "%" and after[start + 1] != -1:
            row[start] = start + 1
    return row


@attrs.frozen
class RegisteredPrompt:
    prompt: models.Prompt
    handler: PromptHandler

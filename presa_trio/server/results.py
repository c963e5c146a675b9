"""What a tool returned, as a valid ``CallToolResult``, or -32603: never invalid wire.

Accepted, on the plain path and in a task alike:

- a ``str``: one text block;
- a content block, or a list or tuple of them: the result's content, each
  block's fields as the schema has them (:mod:`presa_trio.wire.well_formed`);
- a :class:`~presa_trio.wire.models.CallToolResult` whose content is a list
  of content blocks and whose ``structured_content`` is JSON or absent;
- :class:`~presa_trio.wire.mrtr.InputRequired` (a multi round-trip question);
- a JSON object (a ``dict`` with string keys), an attrs instance or a
  dataclass instance: ``structuredContent`` (``datetime``, ``UUID``,
  ``Decimal``, ``Path`` fields written as strings, :mod:`presa_trio.wire.hints`),
  with its JSON as a text block for clients that read only content
  (server/tools §Structured Content); from a tool with an ``outputSchema``,
  any JSON value (a list for an array schema), since ``structuredContent``
  may be any JSON value that fits it;
- ``None``, only from a tool whose return type admits it (``-> None``,
  ``-> str | None``): empty content;
- a number, a list or another JSON value, only from a tool whose declared
  return type says so (``-> int``, ``-> list[str]``): its JSON as text.

Anything else is the tool's bug: the client gets -32603 with an incident id,
and the log line names the tool and what it returned.

Spec: 2026-07-28 server/tools §Tool Result, §Structured Content, §Output Schema.
"""

from __future__ import annotations

import json
import logging
import math
from typing import Any

from presa_trio.server.faults import report_fault
from presa_trio.server.signatures import Returns, arguments_converter
from presa_trio.wire import models
from presa_trio.wire.hints import is_record
from presa_trio.wire.mrtr import InputRequired
from presa_trio.wire.well_formed import is_content_block, is_meta

log = logging.getLogger(__name__)

#: Deeper values than this are refused rather than walked (the encoder's own bound is lower).
MAX_DEPTH = 200


def is_json(value: Any, depth: int = 0) -> bool:
    """Whether ``value`` is strict JSON as Python holds it: string keys, finite numbers."""
    if value is None or isinstance(value, str | bool | int):
        return True
    if isinstance(value, float):
        return math.isfinite(value)
    if depth > MAX_DEPTH:
        return False
    if isinstance(value, list):
        return all(is_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and is_json(v, depth + 1) for k, v in value.items())
    return False


def as_json(value: Any) -> str | None:
    """The JSON text of ``value``, else ``None`` if it is not strict JSON."""
    return json.dumps(value, ensure_ascii=False) if is_json(value) else None


def structured(value: Any) -> models.CallToolResult | None:
    """A JSON value as ``structuredContent`` and its text; ``None`` if it is not JSON."""
    wire = arguments_converter.unstructure(value)
    text = as_json(wire)
    if text is None:
        return None
    return models.CallToolResult([models.TextContent(text)], structured_content=wire)


def valid_result(result: models.CallToolResult) -> bool:
    """Content blocks, ``structuredContent`` any JSON value, ``_meta`` an object (schema.ts
    ``CallToolResult``)."""
    return (
        isinstance(result.content, list)
        and all(is_content_block(block) for block in result.content)
        and (result.structured_content is None or as_json(result.structured_content) is not None)
        and isinstance(result.is_error, bool)
        and is_meta(result.meta)
    )


def call_result(tool: str, returns: Returns, output: Any) -> models.CallToolResult | InputRequired:
    """Normalise what tool ``tool`` returned (see the module's table), else -32603."""
    if isinstance(output, str):  # the common case first
        return models.CallToolResult([models.TextContent(output)])
    result = normalised(returns, output)
    if result is None:
        raise report_fault(
            log,
            "tool %s returned %s, which is not a tool result (a str, content blocks, a "
            "CallToolResult, a JSON object, or what its return type declares)",
            tool,
            describe(output),
        )
    return result


def normalised(returns: Returns, output: Any) -> models.CallToolResult | InputRequired | None:
    """The result ``output`` stands for, or ``None`` if it stands for none."""
    if isinstance(output, models.CallToolResult):
        return output if valid_result(output) else None
    if isinstance(output, InputRequired):
        return output
    if isinstance(output, models.ContentBlock):
        return models.CallToolResult([output]) if is_content_block(output) else None
    if isinstance(output, list | tuple) and all(isinstance(b, models.ContentBlock) for b in output):
        blocks = list(output)
        return models.CallToolResult(blocks) if all(map(is_content_block, blocks)) else None
    if returns is Returns.STRUCTURED and output is not None:
        return structured(output)
    if output is None:
        nothing = returns in (Returns.NOTHING, Returns.JSON_OR_NOTHING)
        return models.CallToolResult([]) if nothing else None
    if returns in (Returns.JSON, Returns.JSON_OR_NOTHING):
        text = as_json(arguments_converter.unstructure(output))
        return None if text is None else models.CallToolResult([models.TextContent(text)])
    if isinstance(output, dict) or (is_record(type(output)) and not is_wire_model(output)):
        return structured(output)
    return None


def is_wire_model(value: Any) -> bool:
    """One of presa's own wire objects (a prompt message, a resource…): not a tool's data."""
    return type(value).__module__.startswith("presa_trio.wire.")


def describe(value: Any) -> str:
    """A short account of a returned value for the log: its type and a clipped repr."""
    shown = repr(value)
    if len(shown) > 200:
        shown = shown[:200] + "…"
    return f"{type(value).__name__} {shown}"

"""``describe TOOL``: one tool as ``tools/list`` shows it, for a person to read.

Its typed signature (:func:`~presa_trio.client.signatures.tool_signature`),
its description, its title and annotations (server/tools §Tool Annotations:
hints such as ``readOnlyHint``, which a client must not trust from an
untrusted server, so they are shown as the server said them), and its input
and output schemas in full. With ``--json``, the tool object itself.

Spec: server/tools §Tool, §Tool Annotations, §Output Schema.
"""

from __future__ import annotations

from presa_trio.client.errors import EXIT_RESULT
from presa_trio.client.output import compact, pretty
from presa_trio.client.run import Run, find_tool
from presa_trio.client.signatures import tool_signature
from presa_trio.client.transport import object_at
from presa_trio.wire.models import JSONObject


def annotation_text(annotations: JSONObject) -> str:
    """``readOnlyHint: true, title: "Greeter"``: each hint as the server sent it."""
    return ", ".join(f"{key}: {compact(value)}" for key, value in annotations.items())


def describe_text(tool: JSONObject) -> str:
    """The tool, one part a paragraph; parts the server left out are left out."""
    parts = [tool_signature(tool)]
    if isinstance(tool.get("description"), str):
        parts.append(tool["description"].strip())
    facts = []
    if isinstance(tool.get("title"), str):
        facts.append(f"title: {tool['title']}")
    if annotations := object_at(tool, "annotations"):
        facts.append(f"annotations: {annotation_text(annotations)}")
    if facts:
        parts.append("\n".join(facts))
    parts.append("input schema:\n" + pretty(object_at(tool, "inputSchema")))
    if "outputSchema" in tool:
        parts.append("output schema:\n" + pretty(tool["outputSchema"]))
    return "\n\n".join(parts)


async def describe(run: Run) -> int:
    tool = await find_tool(run, run.args.name)
    run.console.result(tool, describe_text(tool))
    return EXIT_RESULT

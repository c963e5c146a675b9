"""``resources/list``, ``resources/templates/list`` and ``resources/read``.

Spec: 2026-07-28 server/resources; SEP-2164 (not found is -32602 with
``data.uri``, never empty contents); resources §Error Handling; SEP-2164 §Specification.
"""

from __future__ import annotations

import base64
import logging
from typing import Any

from presa_trio.server import rounds
from presa_trio.server.context import RequestContext
from presa_trio.server.faults import report_fault
from presa_trio.server.pagination import only_page
from presa_trio.server.registered import ResourceOutput
from presa_trio.server.registry import Server
from presa_trio.server.results import describe
from presa_trio.wire import models
from presa_trio.wire.convert import to_wire
from presa_trio.wire.errors import InvalidParams
from presa_trio.wire.mrtr import InputRequired
from presa_trio.wire.well_formed import is_resource_contents

log = logging.getLogger(__name__)


async def list_resources(
    server: Server, ctx: RequestContext, params: dict[str, Any]
) -> dict[str, Any]:
    """Concrete resources in registration order, with caching hints."""
    resources = [r.resource for r in server.resources.values()]
    return only_page(server, params, "resources", to_wire(resources))


async def list_templates(
    server: Server, ctx: RequestContext, params: dict[str, Any]
) -> dict[str, Any]:
    """Resource templates, with caching hints."""
    templates = [t.template for t in server.templates]
    return only_page(server, params, "resourceTemplates", to_wire(templates))


def as_contents(uri: str, mime_type: str | None, output: ResourceOutput) -> list[Any]:
    """Normalise a handler's output: ``str`` is text, ``bytes`` is a base64 blob.

    A list (or tuple) of resource contents whose fields the schema accepts
    (:mod:`presa_trio.wire.well_formed`) is the result's ``contents`` as it
    is; anything else is the handler's bug, -32603 with the detail in the
    log, never a result the schema refuses (schema ``$defs.ReadResourceResult``).
    """
    if isinstance(output, str):
        return [models.TextResourceContents(uri, output, mime_type)]
    if isinstance(output, bytes):
        return [models.BlobResourceContents(uri, base64.b64encode(output).decode(), mime_type)]
    if isinstance(output, list | tuple) and all(map(is_resource_contents, output)):
        return list(output)
    raise report_fault(
        log,
        "resource %s returned %s, which is not resource contents (a str, bytes, or a list "
        "of TextResourceContents and BlobResourceContents whose fields the schema accepts)",
        uri,
        describe(output),
    )


def not_found(uri: str) -> InvalidParams:
    """SEP-2164: -32602 carrying the URI."""
    return InvalidParams("Resource not found", {"uri": uri})


async def read_resource(
    server: Server, ctx: RequestContext, params: dict[str, Any]
) -> dict[str, Any]:
    """Read a resource or a template match; may run a multi round-trip round."""
    uri = params.get("uri")
    if not isinstance(uri, str):
        raise InvalidParams("resources/read needs a string 'uri'")
    target = rounds.RoundTarget("resources/read", uri, None)
    registered = server.resources.get(uri)
    if registered is not None:
        rounds.open_round(ctx, params, target)
        output = await rounds.asked(registered.handler(ctx))
        mime_type = registered.resource.mime_type
    else:
        found = server.find_template(uri)
        if found is None:
            raise not_found(uri)
        template, variables = found
        rounds.open_round(ctx, params, target)
        output = await rounds.asked(template.handler(ctx, variables))
        mime_type = template.template.mime_type
    if isinstance(output, InputRequired):
        return rounds.close_round(ctx, output, target)
    contents = as_contents(uri, mime_type, output)
    return {"contents": to_wire(contents), **server.cache.to_wire()}

"""Handlers that answer ``"ok"``, one of each kind, for tests that register them with
values the decorator must refuse: what the handler does never matters there."""

from __future__ import annotations

from typing import Any

from presa_trio.server import RequestContext


async def tool(ctx: RequestContext, arguments: dict[str, Any]) -> str:
    return "ok"


async def resource(ctx: RequestContext) -> str:
    return "ok"


async def template(ctx: RequestContext, variables: dict[str, str]) -> str:
    return "ok"


async def prompt(ctx: RequestContext, arguments: dict[str, str]) -> str:
    return "ok"

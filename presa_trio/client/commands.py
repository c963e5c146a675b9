"""The client's commands: ``discover``, ``list``, ``call``, ``read``, ``prompt``, ``task``,
``login``, ``logout``.

Each takes the endpoint first, ``URL`` for Streamable HTTP or ``--stdio``
with the server's command line after ``--``::

    presa-trio call http://127.0.0.1:3000/mcp slow_compute seconds=3 label=report
    presa-trio list --stdio tools -- presa-trio stdio

Their options are in :mod:`presa_trio.client.options`; :mod:`presa_trio.cli.main`
imports this module, and httpx with it, only to dispatch to :func:`run_client`.
The exit statuses are those of :mod:`presa_trio.client.errors`.
"""

from __future__ import annotations

import argparse
import signal
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import asynccontextmanager
from typing import Any

import attrs
import httpx
import trio

from presa_trio.client import arguments, tokens
from presa_trio.client.answers import Answerer, parse_answer_flags, read_answers_file
from presa_trio.client.connection import Connection
from presa_trio.client.errors import (
    EXIT_CANCELLED,
    EXIT_RESULT,
    EXIT_TOOL_ERROR,
    ClientError,
    ProtocolFailure,
    UsageProblem,
)
from presa_trio.client.follow import TaskFollower, status_of
from presa_trio.client.oauth import SignInOptions, resource_of
from presa_trio.client.options import CLIENT_SECRET_ENV, LISTS, STDIO_ENDPOINT, TOKEN_ENV
from presa_trio.client.output import (
    Console,
    discover_text,
    listing_text,
    pretty,
    prompt_text,
    read_text,
    tool_result_text,
)
from presa_trio.client.prompting import Terminal
from presa_trio.client.signin import SignIn, open_browser, print_url
from presa_trio.client.signin import login as signin_now
from presa_trio.client.signin_transcript import recording_hooks
from presa_trio.client.tool_headers import usable_tools
from presa_trio.client.transport import (
    HttpTransport,
    environment_token,
    object_at,
    open_stdio,
    transcript_file,
)
from presa_trio.wire.headers import header_params
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import Status

#: Multi round-trip rounds a request may take before the client gives up.
MAX_ROUNDS = 16
#: Tool names an error about an unknown tool lists.
SHOWN_NAMES = 12


@attrs.define(eq=False)
class Run:
    """One command's connection, answerer and console."""

    args: argparse.Namespace
    connection: Connection
    console: Console
    follower: TaskFollower
    #: The sign-in over HTTP without --token; None over stdio or with a token.
    signin: SignIn | None = None

    @property
    def answerer(self) -> Answerer:
        return self.follower.answerer

    async def rounds(self, method: str, params: JSONObject, **options: Any) -> JSONObject:
        """``method`` until its result is not ``input_required``, answering each round.

        Spec: basic/patterns/mrtr §Client Behavior — retry the same request
        with ``inputResponses`` and the ``requestState`` given, unchanged.
        """
        sent = dict(params)
        for _ in range(MAX_ROUNDS):
            result = await self.connection.request(
                method, sent, on_notification=self.console.notification, **options
            )
            if result.get("resultType") != "input_required":
                return result
            requests = result.get("inputRequests") or {}
            answers = {key: await self.answerer.answer(key, req) for key, req in requests.items()}
            sent = {**params, "inputResponses": answers}
            if isinstance(result.get("requestState"), str):
                sent["requestState"] = result["requestState"]
        raise ProtocolFailure(
            f"{self.connection.where} still asks for input after {MAX_ROUNDS} rounds"
        )

    def finish(self, task: JSONObject) -> int:
        """A task that ended: its result printed, its exit status returned."""
        status, task_id = status_of(task), task.get("taskId")
        if status is Status.COMPLETED:
            result = object_at(task, "result")
            self.console.result(result, tool_result_text(result))
            return EXIT_TOOL_ERROR if result.get("isError") is True else EXIT_RESULT
        if self.console.json:
            self.console.result(task, "")
        if status is Status.CANCELLED:
            self.console.note(f"task {task_id} was cancelled")
            return EXIT_CANCELLED
        error = object_at(task, "error")
        raise ProtocolFailure(f"task {task_id} failed: {error.get('code')}: {error.get('message')}")


async def discover(run: Run) -> int:
    result = await run.connection.request("server/discover", {})
    run.console.result(result, discover_text(result))
    return EXIT_RESULT


async def list_items(run: Run) -> int:
    method, key = LISTS[run.args.what]
    items = await run.connection.list_all(method, key)
    if key == "tools":
        items = usable_tools(items, run.console.note)
    run.console.result({key: items}, listing_text(run.args.what, items))
    return EXIT_RESULT


async def find_tool(run: Run, name: str) -> JSONObject:
    tools = usable_tools(await run.connection.list_all("tools/list", "tools"), run.console.note)
    for tool in tools:
        if isinstance(tool, dict) and tool.get("name") == name:
            return tool
    names = [str(t.get("name")) for t in tools if isinstance(t, dict)]
    more = f", and {len(names) - SHOWN_NAMES} more" if len(names) > SHOWN_NAMES else ""
    shown = ", ".join(names[:SHOWN_NAMES]) + more if names else "none"
    raise UsageProblem(f"{run.connection.where} has no tool {name!r} (its tools: {shown})")


async def call(run: Run) -> int:
    args = run.args
    tool = await find_tool(run, args.name)
    schema = object_at(tool, "inputSchema")
    what = f"the arguments of {args.name}"
    given = arguments.json_object(args.args, "--args") if args.args is not None else {}
    typed = arguments.parse_pairs(args.pairs, schema, what)
    if twice := given.keys() & typed.keys():
        raise UsageProblem(
            f"{what}: {', '.join(sorted(twice))} given both in --args and as KEY=VALUE"
        )
    chosen = {**given, **typed}
    arguments.check(chosen, schema, what)
    mirrored = {header: ("arguments", *path) for header, path in header_params(schema).items()}
    params = {"name": args.name, "arguments": chosen}
    result = await run.rounds("tools/call", params, param_headers=mirrored, progress=True)
    if result.get("resultType") == "task":
        if args.detach:
            run.console.result(result, str(result.get("taskId")))
            return EXIT_RESULT
        return run.finish(await run.follower.follow(result))
    run.console.result(result, tool_result_text(result))
    return EXIT_TOOL_ERROR if result.get("isError") is True else EXIT_RESULT


async def read(run: Run) -> int:
    result = await run.rounds("resources/read", {"uri": run.args.uri})
    run.console.result(result, read_text(result))
    return EXIT_RESULT


async def prompt(run: Run) -> int:
    # Prompt arguments are strings (server/prompts §Getting a Prompt).
    given = arguments.parse_pairs(run.args.pairs, {}, "the prompt's arguments")
    strings = {
        key: value if isinstance(value, str) else pretty(value) for key, value in given.items()
    }
    result = await run.rounds("prompts/get", {"name": run.args.name, "arguments": strings})
    run.console.result(result, prompt_text(result))
    return EXIT_RESULT


async def task(run: Run) -> int:
    task_id, follower = run.args.task_id, run.follower
    if run.args.action == "cancel":
        follower.task_id = None
        ended = await follower.cancel(task_id)
        shown = ended if ended is not None else {"taskId": task_id, "status": "cancelling"}
        run.console.result(shown, f"task {task_id}: {shown.get('status')}")
        return EXIT_RESULT
    current = await follower.get(task_id)
    if run.args.action == "get":
        run.console.result(current, pretty(current))
        return EXIT_RESULT
    if run.args.action == "wait":
        return run.finish(await follower.follow(current))
    if status_of(current) is not Status.INPUT_REQUIRED:
        run.console.note(f"task {task_id} is {current.get('status')}: nothing to answer")
        return EXIT_RESULT
    await follower.answer(task_id, current)
    return EXIT_RESULT


async def login(run: Run) -> int:
    """Sign in now (basic/authorization §Authorization Flow Steps) and keep the token."""
    if run.signin is None:
        raise UsageProblem("login is for an http(s) URL without --token")
    await signin_now(run.signin)
    run.console.note(f"signed in to {run.signin.resource}; the token is kept for it")
    return EXIT_RESULT


async def logout(run: Run) -> int:
    """Forget the token kept for the URL."""
    resource = resource_of(run.args.url)
    said = "signed out of" if await tokens.forget(resource) else "no sign-in was kept for"
    run.console.note(f"{said} {resource}")
    return EXIT_RESULT


COMMANDS: dict[str, Callable[[Run], Awaitable[int]]] = {
    "login": login,
    "logout": logout,
    "discover": discover,
    "list": list_items,
    "call": call,
    "read": read,
    "prompt": prompt,
    "task": task,
}


@asynccontextmanager
async def connected(
    args: argparse.Namespace, stdio: Sequence[str] | None
) -> AsyncIterator[tuple[Connection, SignIn | None]]:
    transcript = transcript_file(args.transcript)
    tasks = not args.no_tasks
    if stdio is not None:
        async with open_stdio(stdio, transcript) as channel:
            yield Connection(channel, tasks=tasks, timeout_s=args.timeout), None
        return
    if args.url == STDIO_ENDPOINT or not args.url.startswith(("http://", "https://")):
        raise UsageProblem(
            f"{args.url} is not an http:// or https:// URL (or use --stdio -- COMMAND)"
        )
    token = environment_token(args.token, TOKEN_ENV)
    timeout = httpx.Timeout(args.timeout, read=None)
    async with httpx.AsyncClient(timeout=timeout) as http:
        transport = HttpTransport(args.url, http, token, transcript)
        connection = Connection(transport, tasks=tasks, timeout_s=args.timeout)
        if token is not None:  # the person's own choice: no sign-in around it
            yield connection, None
            return
        secret = args.client_secret
        if args.client_id and not args.client_key:  # where a secret may stand
            secret = environment_token(secret, CLIENT_SECRET_ENV)
        options = SignInOptions(
            args.client_id,
            secret,
            args.client_metadata_url,
            # Kept with the sign-in, for later commands run from anywhere.
            str(await trio.Path(args.client_key).absolute()) if args.client_key else None,
            args.client_credentials,
        )
        if (problem := options.problem()) is not None:
            raise UsageProblem(problem)
        opener = print_url if args.no_browser else open_browser
        hooks = recording_hooks(transcript)
        async with httpx.AsyncClient(timeout=timeout, event_hooks=hooks) as signin_http:
            signin = SignIn(signin_http, transport, opener, options)
            await signin.use_kept()
            connection.authorize = signin.authorize
            yield connection, signin


async def interruptible(run: Run) -> int:
    """The command, unless Ctrl-C comes first: then its task is cancelled, and 130.

    SIGINT is read from a signal receiver, so it cancels the command's scope
    like any other cancellation instead of raising in the middle of it.
    """
    interrupted = False
    with trio.open_signal_receiver(signal.SIGINT) as signals:
        async with trio.open_nursery() as nursery:

            async def on_interrupt() -> None:
                nonlocal interrupted
                async for _ in signals:
                    interrupted = True
                    nursery.cancel_scope.cancel(reason="Ctrl-C")
                    return

            nursery.start_soon(on_interrupt)
            code = await COMMANDS[run.args.command](run)
            nursery.cancel_scope.cancel()
    if not interrupted:
        return code
    run.console.end_status()
    task_id = run.follower.task_id
    if task_id is not None:
        run.console.note(f"cancelling task {task_id}…")
        ended = await run.follower.cancel(task_id)
        said = "still not cancelled" if ended is None else ended.get("status")
        run.console.note(f"task {task_id}: {said}")
    return EXIT_CANCELLED


async def run_async(args: argparse.Namespace, stdio: Sequence[str] | None, console: Console) -> int:
    answer_flags = getattr(args, "answer", [])
    given = {
        **read_answers_file(getattr(args, "answers", None)),
        **parse_answer_flags(answer_flags),
    }
    terminal = Terminal()
    person = terminal if terminal.interactive() else None
    async with connected(args, stdio) as (connection, signin):
        answerer = Answerer(given, getattr(args, "root", []), person)
        listen = not getattr(args, "no_listen", False)
        follower = TaskFollower(connection, answerer, console, listen)
        run = Run(args, connection, console, follower, signin)
        return await interruptible(run)


def client_error(error: BaseException) -> BaseException | None:
    """The :class:`ClientError` (or KeyboardInterrupt) an error, or a group of them, holds."""
    if isinstance(error, ClientError | KeyboardInterrupt):
        return error
    if isinstance(error, BaseExceptionGroup):
        for inner in error.exceptions:
            if (found := client_error(inner)) is not None:
                return found
    return None


def run_client(args: argparse.Namespace, stdio: Sequence[str] | None) -> int:
    """Run one client command; its exit status. Every failure is one line on stderr."""
    console = Console(json=args.json)
    try:
        return trio.run(run_async, args, stdio, console)
    except BaseException as error:
        found = client_error(error)
        if found is None:
            raise
        console.end_status()
        if isinstance(found, KeyboardInterrupt):
            return EXIT_CANCELLED
        console.note(f"presa-trio: error: {found}")
        return found.exit_code if isinstance(found, ClientError) else EXIT_CANCELLED

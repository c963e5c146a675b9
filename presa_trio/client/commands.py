"""The client's commands: ``discover``, ``list``, ``call``, ``read``, ``prompt``, ``task``,
``login``, ``logout`` here; ``describe``, ``complete``, ``listen`` and ``request``
in modules of their own, by topic; all in one table, :data:`COMMANDS`.

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
from urllib.parse import urlsplit

import httpx
import trio

from presa_trio.client import arguments, tokens
from presa_trio.client.answers import Answerer, parse_answer_flags, read_answers_file
from presa_trio.client.complete import complete
from presa_trio.client.connection import Connection
from presa_trio.client.describe import describe
from presa_trio.client.discovery import resource_of
from presa_trio.client.errors import (
    EXIT_CANCELLED,
    EXIT_RESULT,
    EXIT_TOOL_ERROR,
    ClientError,
    OutputCut,
    ProtocolFailure,
    UsageProblem,
    error_document,
)
from presa_trio.client.events import status_of
from presa_trio.client.follow import CANCEL_WAIT_S, TaskFollower
from presa_trio.client.listen import listen
from presa_trio.client.oauth import SignInOptions
from presa_trio.client.options import CLIENT_SECRET_ENV, LISTS, TOKEN_ENV
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
from presa_trio.client.raw import request
from presa_trio.client.run import Run, find_prompt, find_tool
from presa_trio.client.signin import SignIn, open_browser, print_url
from presa_trio.client.signin import login as signin_now
from presa_trio.client.signin_transcript import recording_hooks
from presa_trio.client.streams import open_closed_streams
from presa_trio.client.task_stream import stream_task
from presa_trio.client.tool_headers import usable_tools
from presa_trio.client.transport import (
    HttpTransport,
    Transport,
    environment_token,
    object_at,
    open_stdio,
    transcript_file,
)
from presa_trio.wire.headers import header_params
from presa_trio.wire.http_values import is_bearer_token
from presa_trio.wire.tasks import Status


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


async def call(run: Run) -> int:
    args = run.args
    tool = await find_tool(run, args.name)
    schema = object_at(tool, "inputSchema")
    what = f"the arguments of {args.name}"
    chosen = arguments.given_arguments(args.args, args.pairs, schema, what)
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
    """``prompts/get``, its arguments checked against what ``prompts/list`` says first.

    Spec: server/prompts §Getting a Prompt — the arguments are strings, so a
    JSON value (``key:=JSON``, ``--args``) is sent as its text.
    """
    args = run.args
    schema = arguments.prompt_schema(await find_prompt(run, args.name))
    what = f"the arguments of {args.name}"
    strings = arguments.as_strings(arguments.given_arguments(args.args, args.pairs, schema, what))
    arguments.check(strings, schema, what)
    result = await run.rounds("prompts/get", {"name": args.name, "arguments": strings})
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
    if run.args.action == "stream":
        return await stream_task(follower, current, run.args.after)
    if status_of(current) is not Status.INPUT_REQUIRED:
        run.console.note(f"task {task_id} is {current.get('status')}: nothing to answer")
    else:
        await follower.answer(task_id, current)
        if run.console.json:  # the task as it is once answered, as task get shows it
            current = await follower.get(task_id)
    run.console.document(current)
    return EXIT_RESULT


async def login(run: Run) -> int:
    """Sign in now (basic/authorization §Authorization Flow Steps) and keep the token."""
    if run.signin is None:
        raise UsageProblem("login is for an http(s) URL without --token")
    await signin_now(run.signin)
    run.console.note(f"signed in to {run.signin.resource}; the token is kept for it")
    run.console.document({"resource": run.signin.resource, "signedIn": True})
    return EXIT_RESULT


async def logout(run: Run) -> int:
    """Forget the token kept for the URL."""
    resource = resource_of(run.args.url)
    forgotten = await tokens.forget(resource)
    said = "signed out of" if forgotten else "no sign-in was kept for"
    run.console.note(f"{said} {resource}")
    run.console.document({"resource": resource, "signedOut": forgotten})
    return EXIT_RESULT


#: The commands about a server's sign-in, which stdio has none of (basic/authorization
#: §Protocol Requirements: a stdio server takes its credentials from the environment).
SIGN_IN_COMMANDS = ("login", "logout")
COMMANDS: dict[str, Callable[[Run], Awaitable[int]]] = {
    "login": login,
    "logout": logout,
    "discover": discover,
    "list": list_items,
    "describe": describe,
    "call": call,
    "read": read,
    "prompt": prompt,
    "complete": complete,
    "listen": listen,
    "request": request,
    "task": task,
}


def check_endpoint(url: str) -> None:
    """An http(s) URL with a host, and a port if any in range, else a usage error: what
    neither a connection nor a sign-in could use is refused before either is tried."""
    if not url.startswith(("http://", "https://")):  # "stdio:" too
        raise UsageProblem(f"{url} is not an http:// or https:// URL (or use --stdio -- COMMAND)")
    try:
        parts = urlsplit(url)
        _ = parts.port  # read only to check it: ValueError past 65535, or no number
    except ValueError as error:
        raise UsageProblem(f"{url} is not a URL: {error}") from None
    if not parts.hostname:
        raise UsageProblem(f"{url} is not a URL: it names no host")


@asynccontextmanager
async def connected(
    args: argparse.Namespace, stdio: Sequence[str] | None, console: Console
) -> AsyncIterator[tuple[Connection, SignIn | None]]:
    transcript = transcript_file(args.transcript)

    def connection_on(transport: Transport) -> Connection:
        return Connection(
            transport,
            tasks=not args.no_tasks,
            timeout_s=args.timeout,
            log_level=args.log_level,
            notify=console.notification,
            watch=console.wire,
        )

    if stdio is not None:
        if args.command in SIGN_IN_COMMANDS:  # a child on pipes signs nobody in
            raise UsageProblem(f"{args.command} is for an http(s) URL, not --stdio")
        async with open_stdio(stdio, transcript) as channel:
            yield connection_on(channel), None
        return
    check_endpoint(args.url)
    token = environment_token(args.token, TOKEN_ENV)
    if token is not None and not is_bearer_token(token):  # RFC 6750 §2.1 b64token
        raise UsageProblem(
            f"--token (or ${TOKEN_ENV}) is no bearer token: letters, digits and -._~+/, then '='"
        )
    timeout = httpx.Timeout(args.timeout, read=None)
    async with httpx.AsyncClient(timeout=timeout) as http:
        transport = HttpTransport(args.url, http, token, transcript)
        connection = connection_on(transport)
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
        # Each of a sign-in's exchanges is one answer, read within --timeout too.
        async with httpx.AsyncClient(timeout=args.timeout, event_hooks=hooks) as signin_http:
            signin = SignIn(signin_http, transport, opener, options)
            await signin.use_kept()
            connection.authorize = signin.authorize
            yield connection, signin


async def interruptible(run: Run) -> int:
    """The command, unless Ctrl-C comes first: then its task is cancelled, and 130.

    SIGINT is read from a signal receiver, so it cancels the command's scope
    like any other cancellation instead of raising in the middle of it. The
    cancel has :data:`~presa_trio.client.follow.CANCEL_WAIT_S` in all; a
    server that does not answer it in time, or refuses it, is said on
    stderr, and the status stays 130: the person asked to stop.

    Failure policy of the nursery: the watch of SIGINT raises nothing; the
    command's own failure ends the watch and goes on to the caller.
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
    task_id, ended = run.follower.task_id, None
    if task_id is not None:
        run.console.note(f"cancelling task {task_id}…")
        said = "still not cancelled"
        with trio.move_on_after(CANCEL_WAIT_S):
            try:
                ended = await run.follower.cancel(task_id)
            except ProtocolFailure as failure:
                said = f"not cancelled: {failure}"
        run.console.note(f"task {task_id}: {said if ended is None else ended.get('status')}")
    more = {} if ended is None else {"task": ended}
    run.console.last_document(error_document("interrupted (Ctrl-C)", EXIT_CANCELLED, **more))
    return EXIT_CANCELLED


async def run_async(args: argparse.Namespace, stdio: Sequence[str] | None, console: Console) -> int:
    answer_flags = getattr(args, "answer", [])
    given = {
        **read_answers_file(getattr(args, "answers", None)),
        **parse_answer_flags(answer_flags),
    }
    terminal = Terminal()
    person = terminal if terminal.interactive() else None
    async with connected(args, stdio, console) as (connection, signin):
        answerer = Answerer(given, getattr(args, "root", []), person, where=connection.where)
        listen = not getattr(args, "no_listen", False)
        follower = TaskFollower(connection, answerer, console, listen)
        run = Run(args, connection, console, follower, signin)
        code = await interruptible(run)
    if unasked := answerer.unasked():
        asked = ", ".join(answerer.asked) or "nothing"
        console.note(
            f"presa-trio: warning: --answer {', '.join(unasked)} was not asked for "
            f"(the server asked for {asked})"
        )
    return code


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
    """Run one client command; its exit status. Every failure is one line on stderr,
    and under ``--json`` one document on stdout."""
    open_closed_streams()
    stream = args.command == "listen" or getattr(args, "action", None) == "stream"
    console = Console(json=args.json, lines=stream, verbose=args.verbose)
    try:
        return trio.run(run_async, args, stdio, console)
    except BaseException as error:
        found = client_error(error)
        if found is None:
            raise
        console.end_status()
        if isinstance(found, OutputCut):  # its reader has what it wanted: nothing to say
            return found.exit_code
        if isinstance(found, KeyboardInterrupt):
            console.last_document(error_document("interrupted (Ctrl-C)", EXIT_CANCELLED))
            return EXIT_CANCELLED
        assert isinstance(found, ClientError)
        console.failure(found)
        return found.exit_code

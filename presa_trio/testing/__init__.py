"""Test your own server in-process: no port, no process, no HTTP library.

:func:`open_client` gives a typed client that answers the tool's questions
for you; use it from any Trio test (pytest-trio, or ``trio.run``)::

    from presa_trio.server import RequestContext, Server
    from presa_trio.tasks import Policy, TasksExtension, ask
    from presa_trio.testing import accept, open_client
    from presa_trio.wire.mrtr import Elicitation

    server = Server("mine", "1.0.0")
    tasks = TasksExtension()
    server.add_extension(tasks)
    NAME = {"type": "object", "properties": {"name": {"type": "string"}}}

    @tasks.tool(Policy.OPTIONAL, needs=["elicitation"])
    async def greet(ctx: RequestContext, greeting: str = "Hello") -> str:
        \"\"\"Greets whoever the user names.\"\"\"
        answers = await ask(ctx, {"who": Elicitation("Whom shall I greet?", NAME)})
        content = answers.elicitation("who").content or {}
        return f"{greeting}, {content['name']}!"

    async def test_greet() -> None:
        async with open_client(server, answer=[accept({"name": "Ada"})] * 2) as client:
            plain = await client.call_tool("greet")            # rounds answered for you
            assert plain.text == "Hello, Ada!"
            task = await client.start_task("greet", {"greeting": "Hi"})
            assert (await task.result()).text == "Hi, Ada!"  # tasks/update for you

What else it does, each shown in ``tests/test_testing.py`` and ``tests/testing/``:

- every client call of the protocol, typed with the wire's models:
  ``list_tools``, ``call_tool`` (a :class:`ToolResult` that keeps the log
  messages the tool sent), ``list_resources``,
  ``list_resource_templates``, ``read_resource``, ``list_prompts``,
  ``get_prompt``, ``complete``, and ``listen`` for list changes, resource
  updates (``resource_subscriptions=[uri]``) and tasks;
- :class:`~presa_trio.testing.tasks.TaskHandle` waits for a status
  (``await task.wait_for("input_required")``), answers (``respond``),
  cancels (``cancel``) and streams the task's events (``stream``, where
  task event streams are on);
- a failed ``assert`` inside ``open_client`` comes out as itself, for
  ``pytest.raises`` to match (:mod:`presa_trio.testing.background`);
- :func:`connect` gives the wire-level :class:`McpClient` (results as
  JSON): ``send_request`` returns the result with the notifications sent
  before it, ``listen`` opens a ``subscriptions/listen`` stream, and
  ``stream``/``post`` send any bytes with any headers
  (:mod:`presa_trio.testing.driver`).
"""

from presa_trio.testing.answers import (
    Answerer,
    NoAnswer,
    accept,
    consent,
    decline,
    roots,
    sampled,
)
from presa_trio.testing.client import Client, open_client
from presa_trio.testing.driver import (
    DEFAULT_CAPABILITIES,
    NAME_PARAMS,
    TASKS_CAPABILITIES,
    Headers,
    McpClient,
    Reply,
    RequestFailed,
    Response,
    Stream,
    connect,
    header_value,
    headers_for,
    meta,
    request,
    running,
)
from presa_trio.testing.results import ToolResult
from presa_trio.testing.streams import Listener, Notification, NotificationStream
from presa_trio.testing.tasks import TaskHandle, TaskState

__all__ = [
    "DEFAULT_CAPABILITIES",
    "NAME_PARAMS",
    "TASKS_CAPABILITIES",
    "Answerer",
    "Client",
    "Headers",
    "Listener",
    "McpClient",
    "NoAnswer",
    "Notification",
    "NotificationStream",
    "Reply",
    "RequestFailed",
    "Response",
    "Stream",
    "TaskHandle",
    "TaskState",
    "ToolResult",
    "accept",
    "connect",
    "consent",
    "decline",
    "header_value",
    "headers_for",
    "meta",
    "open_client",
    "request",
    "roots",
    "running",
    "sampled",
]

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

What else it does, each shown in ``tests/test_testing.py``:

- :class:`~presa_trio.testing.client.TaskHandle` waits for a status
  (``await task.wait_for("input_required")``), answers (``respond``) and
  cancels (``cancel``);
- :func:`connect` gives the wire-level :class:`McpClient` (results as
  JSON): ``send_request`` returns the result with the notifications sent
  before it, ``listen`` opens a ``subscriptions/listen`` stream, and
  ``stream``/``post`` send any bytes with any headers
  (:mod:`presa_trio.testing.driver`).
"""

from presa_trio.testing.client import (
    Answerer,
    Client,
    NoAnswer,
    TaskHandle,
    TaskState,
    ToolResult,
    accept,
    decline,
    open_client,
    roots,
    sampled,
)
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

__all__ = [
    "DEFAULT_CAPABILITIES",
    "NAME_PARAMS",
    "TASKS_CAPABILITIES",
    "Answerer",
    "Client",
    "Headers",
    "McpClient",
    "NoAnswer",
    "Reply",
    "RequestFailed",
    "Response",
    "Stream",
    "TaskHandle",
    "TaskState",
    "ToolResult",
    "accept",
    "connect",
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

"""``listen``: one ``subscriptions/listen`` held open, each notification a line.

The listener runs as a user runs it, a process of its own; once it says on
stderr that it listens (after the server's acknowledgement), another client
process makes the server send what it listens for.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Awaitable, Callable, Sequence
from functools import partial

import trio

from tests.client.helpers import Ran, client, start_client
from tests.e2e.serve_process import ServeProcess

CONFIRM = '{"action":"accept","content":{"confirm":true}}'


async def listening(arguments: Sequence[str], then: Callable[[], Awaitable[object]]) -> Ran:
    """``presa-trio listen ARGUMENTS``; ``then()`` once it listens; its end (at most a minute)."""
    async with trio.open_nursery() as nursery:
        process = await start_client(nursery, "listen", *arguments)
        assert process.stdout is not None
        assert process.stderr is not None
        err = b""
        with trio.fail_after(60):
            async for chunk in process.stderr:
                err += chunk
                if b"listening for " in err:
                    break
            assert b"listening for " in err, err.decode()
            await then()
            out = b"".join([chunk async for chunk in process.stdout])
            err += b"".join([chunk async for chunk in process.stderr])
            status = await process.wait()
    return Ran(status, out.decode(), err.decode())


async def test_listen_prints_a_resource_update_and_a_list_change(typed: ServeProcess) -> None:
    """Spec-mandated (basic/patterns/subscriptions §Notification Filter, §Receiving
    Notifications): what the flags ask for arrives, one line each; ``--count`` ends it."""
    touch = partial(client, "call", typed.url, "touch", "uri=note://today")
    ran = await listening(
        [typed.url, "--tools", "--resource", "note://today", "--count", "2"], touch
    )
    assert ran.status == 0, ran.stderr
    assert ran.stdout == "resource updated: note://today\ntools list changed\n"
    assert "listening for resourceSubscriptions, toolsListChanged" in ran.stderr
    as_json = await listening([typed.url, "--count", "1", "--json"], touch)
    (line,) = as_json.stdout.splitlines()
    assert json.loads(line)["method"] == "notifications/tools/list_changed"


async def test_listen_follows_a_task_by_id(presa: ServeProcess) -> None:
    """Spec-mandated (SEP-2663 §Task Status Notifications): ``taskIds`` in the filter;
    the task's new status arrives once it is answered."""
    task_id = (await client("call", presa.url, "confirm_delete", "--detach")).stdout.strip()
    for _ in range(50):  # each look is a process of its own: no need to sleep between
        got = json.loads((await client("task", "get", presa.url, task_id, "--json")).stdout)
        if got["status"] == "input_required":
            break
    answer = partial(
        client, "task", "update", presa.url, task_id, "--answer", f"confirm-delete={CONFIRM}"
    )
    ran = await listening([presa.url, "--task", task_id, "--count", "1"], answer)
    assert ran.status == 0, ran.stderr
    assert ran.stdout.startswith(f"task {task_id}: ")


async def test_a_listen_the_server_agrees_to_none_of_ends_at_once(presa: ServeProcess) -> None:
    """Spec-mandated (subscriptions §Acknowledgment: the client SHOULD check the subset
    agreed): an unknown task id is dropped, nothing would come, exit 3."""
    ran = await client("listen", presa.url, "--task", "no-such-task")
    assert ran.status == 3
    assert ran.error() == f"{presa.url} agreed to send none of what was asked"
    # presa-defined (docs/client.md, For scripts): a stream's --json is JSON Lines, its
    # failure a line too.
    as_json = await client("listen", presa.url, "--task", "no-such-task", "--json")
    (line,) = as_json.stdout.splitlines()
    assert json.loads(line)["error"]["exitCode"] == 3


async def test_a_listen_the_server_cancels_over_stdio_ends_with_its_reason() -> None:
    """Spec-mandated (basic/patterns/cancellation: a server MUST send
    ``notifications/cancelled`` referencing the ``subscriptions/listen`` request when it
    tears that stream down): the listen ends there, exit 0, the reason on stderr; the
    cancellation is no notification printed, and nothing is sent back for it."""
    script = (
        "import json, sys\n"
        "def send(message):\n"
        "    sys.stdout.write(json.dumps(message) + '\\n'); sys.stdout.flush()\n"
        "discover = json.loads(sys.stdin.readline())\n"
        "send({'jsonrpc': '2.0', 'id': discover['id'], 'result': {'resultType': 'complete',\n"
        "      'supportedVersions': ['2026-07-28'], 'capabilities': {}}})\n"
        "listen = json.loads(sys.stdin.readline())\n"
        "meta = {'io.modelcontextprotocol/subscriptionId': listen['id']}\n"
        "notifications = listen['params']['notifications']\n"
        "send({'jsonrpc': '2.0', 'method': 'notifications/subscriptions/acknowledged',\n"
        "      'params': {'notifications': notifications, '_meta': meta}})\n"
        "send({'jsonrpc': '2.0', 'method': 'notifications/cancelled',\n"
        "      'params': {'requestId': listen['id'], 'reason': 'shutting down'}})\n"
        "after = sys.stdin.read()\n"
        "sys.stderr.write('after the listen: ' + repr(after) + '\\n')\n"
    )
    ran = await client("listen", "--stdio", "--", sys.executable, "-c", script)
    assert ran.status == 0, ran.stderr
    assert ran.stdout == ""
    assert "cancelled the subscription: shutting down" in ran.stderr
    assert "after the listen: ''" in ran.stderr

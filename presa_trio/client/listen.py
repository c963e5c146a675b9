"""``listen``: list changes, resource updates and task statuses, as the server sends them.

::

    presa-trio listen URL                          # the three list changes
    presa-trio listen URL --resource file:///a.txt --task TASK_ID --count 1

One ``subscriptions/listen`` request, held open: its ``notifications``
filter asks for what the flags name (with none, the tool, prompt and
resource list changes), ``taskIds`` for ``--task`` (the Tasks extension's
addition to the filter, SEP-2663 §Task Status Notifications). The server
first acknowledges with the subset it agreed to; what it left out is said
on stderr (the client SHOULD check it), and a subset that is empty ends
the command (exit 3: nothing would ever come). Then each notification is
a line on stdout (``--json``: the notification itself, one JSON document
a line) until Ctrl-C (exit 130), ``--count`` of them (exit 0), or the
server's response to the listen, its graceful close (exit 0), or its
``notifications/cancelled`` for the listen, its teardown (exit 0, the
reason on stderr). A stream that breaks without either is exit 3.

Spec: basic/patterns/subscriptions §Opening a Stream, §Acknowledgment,
§Receiving Notifications, §Graceful Closure; basic/patterns/cancellation
(a server MUST send ``notifications/cancelled`` when it tears a listen
down); SEP-2663 §Task Status Notifications.
"""

from __future__ import annotations

import argparse

from presa_trio.client.errors import EXIT_RESULT, ProtocolFailure, RequestError
from presa_trio.client.output import compact, task_line
from presa_trio.client.run import Run
from presa_trio.client.transport import cancelled_request, is_response, object_at
from presa_trio.wire.models import JSONObject
from presa_trio.wire.tasks import TASK_NOTIFICATION

ACKNOWLEDGED = "notifications/subscriptions/acknowledged"
#: The filter's boolean keys, the flag that asks for each, and its notification.
LIST_CHANGES = (
    ("toolsListChanged", "tools", "notifications/tools/list_changed"),
    ("promptsListChanged", "prompts", "notifications/prompts/list_changed"),
    ("resourcesListChanged", "resources", "notifications/resources/list_changed"),
)


def wanted(args: argparse.Namespace) -> JSONObject:
    """The ``notifications`` filter the flags ask for (§Notification Filter)."""
    named = any(getattr(args, flag) for _, flag, _ in LIST_CHANGES)
    everything = not (named or args.resource or args.task)
    asked: JSONObject = {
        key: True for key, flag, _ in LIST_CHANGES if everything or getattr(args, flag)
    }
    if args.resource:
        asked["resourceSubscriptions"] = list(args.resource)
    if args.task:
        asked["taskIds"] = list(args.task)
    return asked


def left_out(asked: JSONObject, agreed: JSONObject) -> list[str]:
    """What the acknowledgement does not agree to: keys, or items of the lists."""
    missing = []
    for key, value in asked.items():
        given = agreed.get(key)
        if isinstance(value, list):
            held = given if isinstance(given, list) else []
            missing += [f"{key} {item}" for item in value if item not in held]
        elif given is not True:
            missing.append(key)
    return missing


def notification_text(message: JSONObject) -> str:
    """One notification of the stream, as a line to read."""
    method = message.get("method")
    params = object_at(message, "params")
    for _, flag, changed in LIST_CHANGES:
        if method == changed:
            return f"{flag} list changed"
    if method == "notifications/resources/updated":
        return f"resource updated: {params.get('uri')}"
    if method == TASK_NOTIFICATION:
        return task_line(params)
    shown = {k: v for k, v in params.items() if k != "_meta"}
    return f"{method} {compact(shown)}"


async def listen(run: Run) -> int:
    asked = wanted(run.args)
    where = run.connection.where
    params = {"notifications": asked}
    async with run.connection.open("subscriptions/listen", params) as (sent, replies):
        first = await run.connection.first_reply("subscriptions/listen", replies)
        if is_response(first) and "error" in first:
            raise RequestError("subscriptions/listen", first["error"])
        if first.get("method") != ACKNOWLEDGED:
            raise ProtocolFailure(f"{where} did not acknowledge the listen first: {compact(first)}")
        agreed = object_at(object_at(first, "params"), "notifications")
        missing = left_out(asked, agreed)
        if len(missing) == len(left_out(asked, {})):
            raise ProtocolFailure(f"{where} agreed to send none of what was asked")
        if missing:
            run.console.note(f"{where} will not send: {', '.join(missing)}")
        honoured = sorted(key for key, value in agreed.items() if value)
        run.console.note(f"listening for {', '.join(honoured)} (Ctrl-C to stop)")
        printed = 0
        while run.args.count is None or printed < run.args.count:
            message = await replies.next()
            if is_response(message):
                run.console.note(f"{where} closed the subscription")
                break
            if cancelled_request(message) == sent["id"]:
                reason = object_at(message, "params").get("reason")
                said = f": {reason}" if isinstance(reason, str) else ""
                run.console.note(f"{where} cancelled the subscription{said}")
                break
            run.console.line(message, notification_text(message))
            printed += 1
    return EXIT_RESULT

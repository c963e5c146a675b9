"""The client against a Tasks server built on the official Python SDK.

That server (:mod:`tests.client.sdk_tasks_server`) answers ``tools/call``
with a task that is already ``completed`` or ``failed`` and carries no
outcome, as a ``CreateTaskResult`` never does; only ``tasks/get`` has it.
Spec-mandated (SEP-2663 §Tasks: the DetailedTask of ``tasks/get`` carries
``result`` or ``error``; §Task Creation): the client reads the outcome of a
task that ended from ``tasks/get`` unless what it saw end carries it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import AsyncIterator

import pytest

from tests.client.helpers import client
from tests.e2e.serve_process import ServeProcess, serving


@pytest.fixture
async def sdk_tasks() -> AsyncIterator[ServeProcess]:
    async with serving([sys.executable, "-m", "tests.client.sdk_tasks_server"]) as served:
        yield served


async def test_a_task_created_completed_prints_its_result_and_exits_0(
    sdk_tasks: ServeProcess,
) -> None:
    """The result comes from ``tasks/get``, in text and in ``--json``."""
    called = await client("call", sdk_tasks.url, "slow_compute", "seconds=3", "label=x")
    assert called.status == 0, called.stderr
    assert called.stdout.startswith("computed x in 3.0s\n"), called.stdout
    as_json = await client("call", "--json", sdk_tasks.url, "slow_compute", "seconds=3", "label=x")
    result = json.loads(as_json.stdout)
    assert result["content"] == [{"type": "text", "text": "computed x in 3.0s"}]
    assert result["isError"] is False


async def test_a_failing_task_exits_1_with_its_error(sdk_tasks: ServeProcess) -> None:
    """A tool's failure is a ``completed`` task whose result has ``isError``: exit 1."""
    called = await client("call", sdk_tasks.url, "failing_job")
    assert called.status == 1, called.stderr
    assert "the job failed on purpose" in called.stdout


async def test_a_task_failed_with_a_protocol_error_exits_with_its_code_and_message(
    sdk_tasks: ServeProcess,
) -> None:
    """A ``failed`` task's ``error`` is shown by code and message; exit 3 (protocol)."""
    called = await client("call", sdk_tasks.url, "protocol_error_job")
    assert called.status == 3, called.stderr
    assert called.error().endswith(": -32010: the job broke the protocol on purpose")

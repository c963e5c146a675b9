"""The task state machine against random sequences of events (hypothesis).

A :class:`~hypothesis.stateful.RuleBasedStateMachine` drives one task through
any order of input requests, answers, withdrawals and endings, legal or not,
and after every step checks the rules of :mod:`presa_trio.tasks.model`:

- ``input_required`` exactly while a key is outstanding (rule 4);
- a terminal task is never replaced, not even by an equal copy (rule 2);
- a key once issued is never outstanding again after it left (rule 5);
- a move that changes the task bumps ``revision`` by one; one that
  changes nothing returns the very same object (rule 1);
- an illegal move raises and leaves the task as it was (rule 3).
"""

from __future__ import annotations

from typing import Any

import attrs
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, invariant, rule

from presa_trio.tasks import model
from presa_trio.tasks.model import IllegalTransition, Task
from presa_trio.wire.tasks import Status

KEYS = st.sets(st.sampled_from(["a", "b", "c", "d", "e"]), max_size=3)
NOW_MS = 1_793_729_045_000
ASK = {"method": "roots/list"}


class TaskMachine(RuleBasedStateMachine):
    """Shadow bookkeeping on the side; the task itself is the system under test."""

    def __init__(self) -> None:
        super().__init__()
        self.task: Task = model.create("t", now_ms=NOW_MS, ttl_ms=1000, poll_interval_ms=None)
        # Keys that were outstanding once and then left (answered or withdrawn).
        self.gone: set[str] = set()
        # The first terminal task seen; it must be the task from then on.
        self.ended: Task | None = None

    def step(self, move: Any, *args: Any) -> None:
        """Apply a move; check rule 1, or rule 3 if it raised."""
        before = self.task
        snapshot = attrs.asdict(before)
        try:
            after = move(before, *args, NOW_MS)
        except IllegalTransition:
            assert attrs.asdict(before) == snapshot
            return
        if after is not before:
            assert after.revision == before.revision + 1
            assert after.created_ms == before.created_ms
            self.gone |= set(before.input_requests) - set(after.input_requests)
        self.task = after
        if after.terminal and self.ended is None:
            self.ended = after

    @rule(keys=KEYS)
    def request_input(self, keys: set[str]) -> None:
        self.step(model.request_input, dict.fromkeys(keys, ASK))

    @rule(keys=KEYS)
    def fulfil(self, keys: set[str]) -> None:
        self.step(model.fulfil, {key: {"action": "accept"} for key in keys})

    @rule(keys=KEYS)
    def withdraw(self, keys: set[str]) -> None:
        self.step(model.withdraw, keys)

    @rule(is_error=st.booleans())
    def complete(self, is_error: bool) -> None:
        self.step(model.complete, {"content": [], "isError": is_error})

    @rule(code=st.sampled_from([-32603, -32602, -32021]))
    def fail(self, code: int) -> None:
        self.step(model.fail, {"code": code, "message": "failed"})

    @rule()
    def cancel(self) -> None:
        self.step(model.cancel)

    @invariant()
    def input_required_exactly_while_a_key_is_outstanding(self) -> None:
        if not self.task.terminal:
            outstanding = bool(self.task.input_requests)
            assert (self.task.status is Status.INPUT_REQUIRED) == outstanding

    @invariant()
    def terminal_tasks_never_change(self) -> None:
        if self.ended is not None:
            assert self.task is self.ended
            assert not self.task.input_requests

    @invariant()
    def a_key_that_left_never_returns(self) -> None:
        assert not self.gone & set(self.task.input_requests)
        assert set(self.task.input_requests) <= self.task.issued

    @invariant()
    def the_payload_matches_the_status(self) -> None:
        assert (self.task.result is not None) == (self.task.status is Status.COMPLETED)
        assert (self.task.error is not None) == (self.task.status is Status.FAILED)


test_task_machine = TaskMachine.TestCase
test_task_machine.__doc__ = (
    "Spec-mandated (overview §Task lifecycle; SEP-2663 §Task Update Requests; T-37 to "
    "T-39, T-44, T-45, T-66): the model's rules hold for any sequence of events."
)

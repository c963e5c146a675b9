"""The workers: one nursery per task, inside the workers' nursery, all stopped at shutdown.

One nursery per task supervises a worker whose input waits are trio Events
keyed by input key (:meth:`Supervisor._supervise`; the Events are the
:class:`~presa_trio.tasks.worker.Worker`'s). The :class:`Supervisor` owns
what the workers share, and nothing else changes it:

- the table of workers, task id -> :class:`~presa_trio.tasks.worker.Worker`,
  from just before a task's creation is stored until its nursery has closed
  (the store's announcements, the lease renewal and ``tasks/cancel`` find a
  task's worker there);
- the workers' nursery, under a shielded scope that only :meth:`Supervisor.stop`
  cancels, so a shutdown marks every worker stopped before any of them sees
  a cancellation;
- whether it is stopping: once it is, no worker starts.

Failure policies (trio: the nursery is the unit of failure):

- **A task's nursery** (:meth:`Supervisor._supervise`): whatever the job or
  a child it started raises ends that task only. The nursery cancels the
  task's other children, and the task is written ``failed``. A stop
  (``tasks/cancel``, the TTL, lease loss, shutdown) cancels the nursery's
  own scope, which absorbs the cancellation: nothing is written.
- **The workers' nursery** (:meth:`Supervisor.run`): no failure of a worker
  ends it, since every worker catches the ``Exception`` that escapes its
  task (logged as an incident). It ends when :meth:`Supervisor.stop` cancels
  its shield, or when what is no ``Exception`` (Ctrl-C's
  ``KeyboardInterrupt``) leaves a worker, which stops every worker first.

Spec: SEP-2663 §Task Creation, §Task Cancellation, §Task Execution Errors.
"""

from __future__ import annotations

import logging

import attrs
import trio

from presa_trio.server.context import RequestContext
from presa_trio.server.faults import HANDLER_FAILURES, report_fault
from presa_trio.server.tools import error_for
from presa_trio.tasks.context import Job, WorkerContext, detached_meta, drop
from presa_trio.tasks.worker import Move, Worker, failure, outcome
from presa_trio.tasks.writes import StoreWriter
from presa_trio.wire.models import JSONObject

log = logging.getLogger(__name__)

#: Every worker's Trio task has this name: one string for all, not one formatted per task.
WORKER_NAME = "presa_trio.tasks.supervisor.Supervisor._supervise"


@attrs.define(eq=False, repr=False)
class Supervisor:
    """Owns the workers, their nursery and the stopping flag; see the module docstring."""

    writer: StoreWriter
    # task_id -> its worker, from just before its creation is stored until its nursery closed.
    _workers: dict[str, Worker] = attrs.field(factory=dict)
    # The workers' nursery, while :meth:`run` runs.
    _nursery: trio.Nursery | None = None
    # The shield around the workers' nursery: only :meth:`stop` cancels it.
    _shield: trio.CancelScope | None = None
    # Set by :meth:`stop`: every worker is stopped, and no new one starts.
    _stopping: bool = False

    @property
    def running(self) -> bool:
        """Whether a new worker would start: :meth:`run` runs and :meth:`stop` was not called."""
        return self._nursery is not None and not self._stopping

    # --- the table of workers -------------------------------------------------------

    def get(self, task_id: str) -> Worker | None:
        """The worker of ``task_id`` in this process, if any."""
        return self._workers.get(task_id)

    def held(self) -> dict[str, int]:
        """task_id -> lease generation, of every worker whose task is stored.

        A task whose creation is still being stored is left out: read now,
        it would look deleted or its lease lost.
        """
        return {
            task_id: worker.generation for task_id, worker in self._workers.items() if worker.stored
        }

    def add(self, worker: Worker) -> None:
        """Register ``worker`` (before its task is stored, so no announcement can miss it)."""
        self._workers[worker.task_id] = worker

    def discard(self, worker: Worker) -> None:
        """Forget ``worker``, unless another has taken its place."""
        if self._workers.get(worker.task_id) is worker:
            del self._workers[worker.task_id]

    # --- the workers' nursery -------------------------------------------------------

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The workers' nursery, until :meth:`stop`; started once workers can be launched.

        Its scope is shielded, so a shutdown reaches the runner's body
        first: it calls :meth:`stop`, which stops every worker (they write
        nothing for themselves) and only then cancels them all.

        Failure policy of the workers' nursery: no worker's failure ends it
        (each catches the ``Exception`` that escapes its task,
        :meth:`_supervise`); :meth:`stop` does, and Ctrl-C in a worker,
        which stops them all first.

        The shield goes up once started, and only if the start was not
        cancelled meanwhile: a start cancelled before ``started()`` leaves
        this task in ``nursery.start``'s own nursery, where no :meth:`stop`
        would reach a shield, and the start would wait for it for ever.
        """
        self._stopping = False
        with trio.CancelScope() as self._shield:
            try:
                async with trio.open_nursery() as nursery:
                    self._nursery = nursery
                    task_status.started()
                    # Raises the cancel that came during the start, if one did; no
                    # schedule point otherwise (trio has no public spelling of it).
                    await trio.lowlevel.checkpoint_if_cancelled()
                    self._shield.shield = True
                    await trio.sleep_forever()
            finally:
                self._nursery = None

    def stop(self, reason: str) -> None:
        """Stop every worker, then cancel the workers' nursery: no worker starts after this."""
        self._stopping = True
        for worker in list(self._workers.values()):
            worker.stop(reason)
        if self._shield is not None:
            self._shield.cancel(reason=reason)

    def launch(self, worker: Worker, job: Job, creator: RequestContext) -> None:
        """Start ``worker`` running ``job`` in a nursery of its own (no checkpoint in between).

        Once the supervisor is stopping, nothing starts: the task keeps its
        lease, which the next process to run claims.
        """
        if self._nursery is None or self._stopping:
            log.info("task %s not started: the server is stopping", worker.task_id)
            self.discard(worker)
            return
        self._nursery.start_soon(self._supervise, worker, job, creator, name=WORKER_NAME)

    async def _supervise(self, worker: Worker, job: Job, creator: RequestContext) -> None:
        """One task's life: its nursery, then its outcome; a failure here ends this task only.

        One nursery per task: the job runs as the body of the task's
        nursery, in this Trio task; child tasks the tool starts through
        ``ctx.nursery`` run beside it. The nursery closes once all of them
        have ended, and only then is the outcome written, once. A stop
        (``tasks/cancel``, the TTL, lease loss, shutdown) cancels the
        nursery's own scope: every child and the job get ``trio.Cancelled``,
        the nursery absorbs it, and nothing is written.

        Whatever else escapes (a bug in this very function, say) is logged
        as an incident and ends this Trio task: never the workers' nursery,
        never another task. The task then keeps its lease until it lapses,
        and recovery claims it. What is no ``Exception`` (Ctrl-C) goes on,
        and ends the workers' nursery, but only once every worker is stopped:
        as at a shutdown, no other worker writes for its task as it is
        cancelled (a parked one does not withdraw its requests).

        From its first step to its last, the task counts as running in this
        process (:attr:`~presa_trio.tasks.writes.StoreWriter.on_load`).
        """
        self.writer.on_load("running", 1)
        try:
            # A stop that came before this task's first step (a cancel right
            # after creation, or a shutdown) is kept by the worker: end here,
            # before the job has run at all. This step is a schedule point
            # already, so no checkpoint is needed to see it.
            if worker.stopped():
                return
            if self.writer.events is not None:
                # The task's first event, before any the job's writes append.
                await self.writer.events.started(
                    self.writer.store,
                    worker.latest,
                    self.writer.clock.wall_ms(),
                    fence=worker.generation,
                )
            move: Move
            try:
                async with trio.open_nursery() as nursery:
                    worker.guard(nursery.cancel_scope)
                    context = self._detach(creator, worker, nursery)
                    # This frame lives as long as the task: let go of the
                    # creating request's context (and its stream) now,
                    # or every parked task keeps it alive.
                    del creator
                    result: JSONObject = await job(context)
            except* HANDLER_FAILURES as group:
                # The plain path's mapping: the job's own spec error, else -32603.
                move = failure(error_for(group))
            else:
                if worker.stopped():
                    return
                move = outcome(worker.task_id, result)
            with trio.CancelScope() as writing:
                # A stop during the write (waiting for the store) ends it.
                worker.guard(writing)
                if not worker.stopped():
                    await self.writer.write(worker, move)
        except Exception:
            report_fault(log, "task %s: its worker failed", worker.task_id)
        except BaseException:
            # What is no Exception ends the workers' nursery (Ctrl-C: Trio raises
            # KeyboardInterrupt in whichever task's code runs, a tool's included), and
            # the nursery then cancels every other worker: each is stopped first, as at
            # a shutdown, so none writes for its task (a parked one keeps its requests).
            # At a shutdown (the Cancelled that stop() sent) they are stopped already.
            if not self._stopping:
                self.stop("the server is interrupted")
            raise
        finally:
            self.discard(worker)
            self.writer.on_load("running", -1)

    def _detach(
        self, creator: RequestContext, worker: Worker, nursery: trio.Nursery
    ) -> WorkerContext:
        return WorkerContext(
            request_id=worker.task_id,
            method=creator.method,
            meta=detached_meta(creator.meta),
            server=creator.server,
            send=drop,
            input_responses=creator.input_responses,
            state=creator.state,
            principal=creator.principal,
            nursery=nursery,
            writer=self.writer,
            worker=worker,
        )

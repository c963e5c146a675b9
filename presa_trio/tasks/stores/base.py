"""Where tasks live between requests: the store protocol, its records and its errors.

Tasks are the only state presa keeps across requests, so the store is the
seam for everything beyond one process. :class:`TaskStore` is made for I/O:
every method awaits, and whatever the runner keeps in memory (parked
workers, cancel scopes) is its view of what the store says, never the truth. Stores:
``memory:`` (:class:`~presa_trio.tasks.stores.memory.MemoryStore`), ``sqlite:///PATH``
(:mod:`presa_trio.tasks.stores.sqlite`), ``postgresql://…``
(:mod:`presa_trio.tasks.stores.postgres`); :mod:`presa_trio.tasks.stores` maps a
``--store`` URL to one.

Rules every store keeps (the contract suite, ``tests/tasks/stores/``, checks
each on every store):

1. **Access is scoped.** A read or write names the access scope of the
   caller (an opaque string: a principal, or one anonymous scope). Another
   scope's task is indistinguishable from an unknown one: same exception,
   same message (SEP-2663 §Security Implications).
2. **Creation is atomic and bounded.** :meth:`TaskStore.create` counts and
   inserts in one step: a task is stored only if its scope and the store
   are under every :class:`Limits` count, so concurrent creations can
   never overshoot. Once it returns, ``get`` finds the task in any process
   (SEP-2663 §Task Creation).
3. **Writes are compare-and-set.** :meth:`TaskStore.compare_and_set`
   replaces the task only if the stored revision is the one the writer
   read, else :class:`Conflict` and nothing changes. A worker's write also
   carries its lease generation (``fence``): a stale generation gets
   :class:`LeaseLost` and nothing changes, so two workers never both write.
4. **Leases.** The process running a task holds a :class:`Lease` (owner,
   generation, expiry in epoch ms) and renews it; an expired lease on a
   task that is not terminal is claimed by :meth:`TaskStore.claim_expired`,
   which bumps the generation. Leases change without the task changing, so
   they never move ``revision``. A terminal task is never claimed or run
   again, so a store may let go of its lease and its :class:`Work` once it
   ends; it reads back with ``None`` for them.
5. **Time is wall-clock epoch milliseconds**, passed in by the caller, so a
   deadline means the same after a restart and in another process. Every
   call that sets a lease gives the caller's now beside its expiry, so a
   store may judge leases on one clock of its own, the same for every
   process (PostgreSQL does: its own), taking each expiry as a length from
   the caller's now; a lease's expiry reads back as the caller gave it.
   Task events are stamped and aged on the same one clock: a store of
   many processes ignores the caller's now there and reads its own.
6. **Changes are announced.** :meth:`TaskStore.watch` delivers every
   committed change (creation, transition, claim, deletion) in commit order;
   after a reconnect it delivers :data:`RESYNC`, and the watcher re-reads.
   A change of the lease alone (a claim) is announced with ``moved`` false,
   so a listener is told of a task only when its revision moved.
7. **Task events** (SEP-2694, with ``--task-events``): each task has an
   append-only log beside it. :meth:`TaskStore.append_events` gives the
   events consecutive ``seq`` numbers in the appending transaction, under
   the log's own lock, so two writers in two processes can produce neither
   a duplicate nor a hole; it applies the :class:`~presa_trio.tasks.events.Retention`
   bounds as it appends, appends nothing to a task that is gone or to a
   log that is closed (its terminal status event was appended), and
   announces the append to every process (:meth:`TaskStore.watch_events`).
   **Fenced**: a worker's events (``fence``, its lease generation) are
   appended only while the task is not terminal and its lease is that
   generation, checked in the appending transaction against the task as
   a compare-and-set would see it; and a write's own events
   (:class:`~presa_trio.tasks.events.LogAppend`) are appended by the
   compare-and-set itself, in its transaction. So the log's order is the
   order of the task's writes, and nothing lands after a terminal write,
   whose status event closes the log. **Retention drops a prefix**: a
   log's stamps never go back, so whatever limit drops events, the
   retained ones are contiguous; a read applies the terminal retention at
   once (:meth:`~presa_trio.tasks.events.EventWindow.of_log`), pruning
   only frees the space. A log's ``next_seq`` survives retention and
   lives as long as its task.

Cancellation: every method checkpoints, and a call whose caller is
cancelled raises ``trio.Cancelled`` itself, never inside an exception group
(a store's own nursery keeps it out of one), so a caller's ``except
trio.Cancelled`` sees it; whether a write cancelled mid-way committed, the
caller may not learn (``tests/tasks/stores/test_cancellation.py``).

Expiry: a task whose TTL has elapsed answers "expired" to its own scope
(and "not found" to every other) until :meth:`TaskStore.expire` deletes it
(SEP-2663 §Protocol Errors).

Spec: SEP-2663 §Security Implications, §Task Creation, §Protocol Errors.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

import attrs
import trio

from presa_trio.tasks.events import EventWindow, LogAppend, NewEvent, Retention, TaskEvent
from presa_trio.tasks.model import Task
from presa_trio.wire.envelope import compact_encoder
from presa_trio.wire.errors import InvalidParams, OverCapacity, ServerOverCapacity
from presa_trio.wire.models import JSONObject

if TYPE_CHECKING:
    from presa_trio.server.subscriptions import ChangeBus


class TaskNotFound(InvalidParams):
    """Unknown, deleted, or another scope's task: all look the same (-32602)."""

    default_message = "Unknown or inaccessible taskId"


class TaskExpired(TaskNotFound):
    """The task's TTL has elapsed; only its own scope is told so (-32602, spec-notes §18)."""

    default_message = "The task has expired: its ttlMs elapsed"


class Conflict(Exception):
    """A compare-and-set lost: the task changed since the writer read it."""


class LeaseLost(Exception):
    """A worker's write carried a generation that is no longer the task's lease."""


class CapacityExceeded(Exception):
    """Creation refused: ``limit`` names the :class:`Limits` count that is full."""

    def __init__(self, limit: str) -> None:
        super().__init__(f"task capacity exhausted: {limit}")
        self.limit = limit


class TaskIdCollision(ValueError):
    """Creation named an id the store holds already (192 random bits: never, in practice)."""


class StoreError(Exception):
    """A failure of the store itself, classified; the message is one line for an operator.

    Every store turns whatever its engine raises into exactly one of the
    three classes below, in one function of its own (``classify`` in
    :mod:`~presa_trio.tasks.stores.sqlite.errors` and
    :mod:`~presa_trio.tasks.stores.postgres.errors`; the memory store has no
    engine to fail). Nothing unclassified escapes a store: the runner's
    failure policy (:mod:`presa_trio.tasks.runner`) is written against
    these three, and only these.
    """


class StoreUnavailable(StoreError):
    """The store cannot be opened or reached, or will not write for now (read-only).

    Trying the same again later can succeed: a request gets -32603 with
    ``data.retryable: true``; a worker's write and a background loop wait
    and try again, backing off.
    """


class StoreRefused(StoreError):
    """The store will not hold the data written (PostgreSQL's jsonb refuses U+0000, say).

    Writing the same again can never succeed. The task that wrote it is
    ``failed``, with an error that says what could not be stored.
    """


class StoreDefect(StoreError):
    """Anything else the store met: a bug, presa's or the engine's.

    The task that met it fails (-32603), and the incident is logged whole.
    """


#: What a store raises by the protocol's own rules, never classified as a failure.
PROTOCOL_ERRORS = (TaskNotFound, Conflict, LeaseLost, CapacityExceeded, TaskIdCollision)


#: How long one store call may take, waiting included, before it fails as
#: :class:`StoreUnavailable` (``--store-timeout``, in seconds). A healthy
#: call takes milliseconds, and a checkpoint or vacuum stalls one for well
#: under a second; five seconds is past those, yet short enough that a
#: client sees a retryable error before its own request timeout (often ten
#: seconds or more), that a lease renewal (every third of the 30 s lease)
#: that meets a stall fails and runs again in time, and that a shutdown
#: (10 s of grace by default) is never held past its grace by a store.
DEFAULT_STORE_TIMEOUT_S = 5.0


# --- what is stored ------------------------------------------------------------------


@attrs.frozen
class Lease:
    """Who runs a task, until when, and under which generation."""

    # The holding process's id (random per process run).
    owner: str
    # Bumped by every claim; a worker's writes carry the one it was given.
    generation: int
    # Epoch ms after which another process may claim the task.
    expires_ms: int


# No weak reference slot: a parked task holds one, and nothing refers to it weakly.
@attrs.frozen(weakref_slot=False)
class Work:
    """What is needed to run a task made from ``tools/call`` again, in any process.

    The idempotency key is the task id; nothing else of the creating request
    is needed (its stream is gone once the task is created).
    """

    tool: str
    arguments: JSONObject
    # The creating request's protocol version and declared capabilities (raw).
    protocol_version: str
    capabilities: JSONObject
    # The verified multi round-trip answers, and the handler state they came with.
    input_responses: JSONObject = attrs.field(factory=dict)
    state: Any = None
    # Whether the tool declared it may run again after its process stopped.
    rerun: bool = False
    # The verified caller ({issuer, subject, clientId, scopes}); None with auth off.
    principal: JSONObject | None = None


# No weak reference slot: a parked task holds one, and nothing refers to it weakly.
@attrs.frozen(weakref_slot=False)
class StoredTask:
    """One stored task: the record every store keeps, whatever its engine."""

    scope: str
    task: Task
    work: Work | None = None
    # None when no process holds the task (created without, or released).
    lease: Lease | None = None

    @property
    def task_id(self) -> str:
        return self.task.task_id

    def claimable(self, now_ms: int, *, released_only: bool = False) -> bool:
        """Not terminal, not expired, and nobody holds a live lease on it.

        ``released_only``: nobody holds a lease at all, not even a lapsed one
        (it was let go, expiry 0, or never held).
        """
        if self.task.terminal or self.task.expired(now_ms):
            return False
        return self.lease is None or self.lease.expires_ms <= (0 if released_only else now_ms)


@attrs.frozen
class Limits:
    """Bounds on what tasks may take: the one limits type of the runner and the stores.

    The counts are checked inside ``create``, atomically with the insert
    (rule 2); the input size before anything is stored. presa chooses to
    refuse, never to evict: SEP-2663 lets a server discard a task only
    after its TTL elapses (§Task Polling ``ttlMs``), so a finished task
    stays until then and counts (spec-notes §45).
    """

    # Non-terminal tasks, overall and per access scope.
    max_active: int = 1000
    max_active_per_scope: int = 100
    # Every stored task not yet expired, finished ones included.
    max_stored: int = 10_000
    max_stored_per_scope: int = 1000
    # Size of a task's input (the tool arguments, and the multi round-trip answers
    # and state it starts with) as compact UTF-8 JSON.
    max_input_bytes: int = 256 * 1024

    def refusal(self, scope: Counts, total: Counts) -> str | None:
        """The limit a new task would break, the scope's own first; else None."""
        if scope.active >= self.max_active_per_scope:
            return "max_active_tasks_per_scope"
        if scope.stored >= self.max_stored_per_scope:
            return "max_stored_tasks_per_scope"
        if total.active >= self.max_active:
            return "max_active_tasks"
        if total.stored >= self.max_stored:
            return "max_stored_tasks"
        return None

    def creation_refusal(self, limit: str, *, shared: bool) -> OverCapacity:
        """The answer to a creation the ``limit`` refused, saying what the caller can do.

        ``shared``: the caller's scope is everyone's (authorization is off).
        """
        if limit == "max_active_tasks_per_scope":
            message = (
                f"Too many unfinished tasks for this caller ({self.max_active_per_scope}): "
                "retry once one ends, or cancel one with tasks/cancel"
            )
        elif limit == "max_stored_tasks_per_scope":
            message = (
                f"Too many stored tasks for this caller ({self.max_stored_per_scope}; finished "
                "ones count until their ttlMs elapses): retry later"
            )
        else:
            return ServerOverCapacity("The server holds all the tasks it can: retry later", limit)
        if shared:
            message += "; without authorization every caller shares this limit"
        return OverCapacity(message, limit)

    def input_too_large(self, *parts: Any) -> bool:
        """Whether ``parts``, each as compact UTF-8 JSON, are over ``max_input_bytes`` together.

        A lone surrogate (which no UTF-8 text holds) counts as its three bytes.
        Each part is written on its own, so none is nested deeper than it came;
        one nested too deeply for the encoder (the body's parser reads a few
        levels deeper) has no size, is over any limit, and no store could keep it.
        """
        size = 0
        try:
            for part in parts:
                size += len(_compact_json(part).encode("utf-8", "surrogatepass"))
        except RecursionError:
            return True
        return size > self.max_input_bytes


#: Compact JSON as ``json.dumps(value, separators=(",", ":"), ensure_ascii=False)``
#: writes it, the encoder built once.
_compact_json = compact_encoder(allow_nan=True)


@attrs.frozen
class Counts:
    """Stored tasks, and how many of them are not terminal."""

    active: int = 0
    stored: int = 0


# --- change announcements ---------------------------------------------------------


@attrs.frozen
class Changed:
    """A task was created, moved, or claimed: here it is as now stored.

    ``moved`` is false when nothing but its lease changed (a claim, rule 4):
    the task itself, and its revision, are as last announced, so the
    watcher acts on the lease and tells no listener of it.
    """

    stored: StoredTask
    moved: bool = True


@attrs.frozen
class Deleted:
    """A task was deleted (its TTL elapsed)."""

    scope: str
    task_id: str


class Resync(enum.Enum):
    """Announcements may have been missed (a reconnect): re-read what you hold."""

    RESYNC = "resync"


RESYNC = Resync.RESYNC

StoreEvent = Changed | Deleted | Resync
#: Called in the Trio thread, in commit order, for every announced change.
Deliver = Callable[[StoreEvent], None]
#: Called in the Trio thread with the id of a task whose log grew, or
#: :data:`RESYNC` when appends may have been missed (rule 7).
DeliverAppend = Callable[[str | Resync], None]


class TaskStore(Protocol):
    """What the runner needs from a store; see the module rules."""

    async def create(self, stored: StoredTask, limits: Limits, now_ms: int) -> None:
        """Insert ``stored`` if under ``limits``, else :class:`CapacityExceeded`.

        Expired tasks do not count. An existing id is :class:`TaskIdCollision`.
        """

    async def get(self, scope: str, task_id: str, now_ms: int) -> StoredTask:
        """The task in ``scope``, or :class:`TaskNotFound` / :class:`TaskExpired`."""

    async def read(self, task_id: str) -> StoredTask | None:
        """The task whatever its scope or expiry, or None: the runner's own view."""

    async def compare_and_set(
        self,
        scope: str,
        task: Task,
        expected_revision: int,
        *,
        fence: int | None = None,
        events: LogAppend | None = None,
    ) -> None:
        """Replace the task if its revision is ``expected_revision`` (else
        :class:`Conflict`) and, with ``fence``, its lease generation is ``fence``
        (else :class:`LeaseLost`). Unknown or other scope: :class:`TaskNotFound`.

        With ``events``, append them to the task's log in the same
        transaction (rule 7), and announce the append too.
        """

    async def renew(
        self, owner: str, held: Mapping[str, int], expires_ms: int, now_ms: int
    ) -> set[str]:
        """Extend the leases ``owner`` holds (task id -> generation) to ``expires_ms``.

        ``now_ms`` is the caller's now, so a store that judges leases on a
        clock of its own reads the expiry as a length (rule 5).

        Returns the ids whose lease is no longer ``(owner, generation)``, or gone.
        """

    async def claim_expired(
        self, owner: str, now_ms: int, expires_ms: int, limit: int, *, released_only: bool = False
    ) -> list[StoredTask]:
        """Lease to ``owner`` up to ``limit`` claimable tasks (generation + 1); return them.

        With ``released_only``, only tasks whose lease was let go
        (:meth:`release`) or never held: none whose lease merely lapsed.
        """

    async def release(self, owner: str) -> None:
        """Drop every lease ``owner`` holds, so another run may claim them at once."""

    async def expire(self, now_ms: int) -> list[str]:
        """Delete every task whose TTL has elapsed; return their ids."""

    async def counts(self, scope: str | None = None) -> Counts:
        """How many tasks are stored, in ``scope`` or overall (expired ones until deleted)."""

    async def watch(
        self, deliver: Deliver, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        """Call ``deliver`` for every change until cancelled; started once listening."""

    # --- task events (rule 7; used only with --task-events) ---------------------

    async def append_events(
        self,
        task_id: str,
        events: Sequence[NewEvent],
        now_ms: int,
        retention: Retention,
        *,
        closing: bool = False,
        fence: int | None = None,
    ) -> list[TaskEvent]:
        """Append ``events`` with the next ``seq`` numbers; with ``closing``, close the log.

        Returns them as stored; ``[]`` if the task is gone, its log closed,
        or, with ``fence`` (a worker's lease generation), the task terminal
        or leased to another generation. Events beyond ``retention.max_events``
        or older than its maximum age are dropped in the same transaction.
        """

    async def read_events(
        self, task_id: str, after: int, limit: int, now_ms: int, retention: Retention
    ) -> EventWindow:
        """Up to ``limit`` retained events with ``seq > after``, in order, and the log's bounds.

        A task that has no log yet reads as :meth:`EventWindow.empty`; a log
        past its terminal retention at ``now_ms`` as its bounds alone.
        """

    async def prune_events(self, now_ms: int, retention: Retention) -> None:
        """Drop events past their age or their terminal retention, and the logs of gone tasks."""

    async def watch_events(
        self,
        deliver: DeliverAppend,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Call ``deliver`` for every append, in any process, until cancelled."""


@runtime_checkable
class RelaysChanges(Protocol):
    """A store many processes share that carries the server's own change notifications too.

    Every listen stream, in any process on the store, hears what the server's
    code announces in one (:meth:`~presa_trio.server.subscriptions.ChangeBus.announce`);
    a store only one process uses has nothing to carry, and is not one.
    """

    async def relay_changes(
        self,
        bus: ChangeBus,
        origin: str,
        *,
        task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED,
    ) -> None:
        """Relay ``bus``'s announced changes, and publish other processes' on it, until
        cancelled; ``origin`` names this process run. Started once relaying."""

"""What only the SQLite store promises: its journal mode, its schema version, its write batches."""

from __future__ import annotations

import logging
import os
import re
import sqlite3
from pathlib import Path

import pytest
import trio
import trio.testing

from presa_trio.tasks import model
from presa_trio.tasks.events import NewEvent, Retention
from presa_trio.tasks.stores import open_store
from presa_trio.tasks.stores.base import StoreUnavailable, TaskIdCollision
from presa_trio.tasks.stores.sqlite import lock as sqlite_lock
from presa_trio.tasks.stores.sqlite import store as sqlite_store
from presa_trio.tasks.stores.sqlite.identity import FileIdentity
from presa_trio.tasks.stores.sqlite.store import SCHEMA_VERSION, SqliteStore
from tests.tasks.stores.records import PATIENCE, ROOMY, T0, new_task, stored

KEEP_ALL = Retention(max_events=10_000, max_age_ms=None)


async def refusal(url: str) -> str:
    """The one line opening the store ``url`` is refused with."""
    with pytest.raises(StoreUnavailable) as refused:
        async with open_store(url):
            pass
    return str(refused.value)


async def test_the_file_is_in_wal_mode_with_its_schema_version(tmp_path: Path) -> None:
    """presa-defined (docs/task-stores.md "Where tasks live"): readers never wait for the writer,
    and the file says which schema wrote it."""
    path = tmp_path / "tasks.db"
    async with open_store(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as db:
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)
        version = db.execute("SELECT value FROM presa_meta WHERE key = 'schema_version'")
        assert version.fetchone() == (str(SCHEMA_VERSION),)


async def test_a_file_of_another_schema_version_is_refused_in_one_line(tmp_path: Path) -> None:
    """presa-defined (versioned storage): a file a newer server wrote is not misread;
    opening it fails with one line naming the file and both versions."""
    path = tmp_path / "tasks.db"
    async with open_store(f"sqlite:///{path}"):
        pass
    with sqlite3.connect(path) as db:
        db.execute("UPDATE presa_meta SET value = '99' WHERE key = 'schema_version'")
    assert await refusal(f"sqlite:///{path}") == (
        f"{path} holds presa task schema version 99; this server reads {SCHEMA_VERSION}"
    )


async def test_a_second_store_on_the_file_is_refused_naming_the_first(tmp_path: Path) -> None:
    """presa-defined (one server per file; README "Tasks that outlive the process"):
    while one store has the file open, opening it again, by its name or through a
    symbolic link (the lock is the file's, not its name's), fails with one line
    naming the holder's pid; once the first has closed, it opens."""
    path, link = tmp_path / "tasks.db", tmp_path / "link.db"
    link.symlink_to(path)
    async with open_store(f"sqlite:///{path}"):
        for name in (path, link):
            assert await refusal(f"sqlite:///{name}") == (
                f"{name} is served by another presa process (pid {os.getpid()}); "
                "one server per file"
            )
    async with open_store(f"sqlite:///{path}"):
        pass


async def test_a_lock_file_removed_under_a_server_is_taken_again_or_waited_for(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    """presa-defined (one server per file; docs/task-stores.md "Faults"): the lock file
    removed while a store has the file open (a clean-up of "stale" locks) is locked
    again at the store's next call, so a second server is still refused. If a second
    one started in the meantime, every call of the first is unavailable (retryable),
    naming the holder, and writes nothing; once the second has closed, the first
    locks the file again and serves, every task intact."""
    path = tmp_path / "tasks.db"
    lock_file = tmp_path / "tasks.db.lock"
    served_here = f"{path} is served by another presa process (pid {os.getpid()})"
    async with open_store(f"sqlite:///{path}") as first:
        await first.create(stored("kept"), ROOMY, T0)
        lock_file.unlink()
        await first.create(stored("after"), ROOMY, T0)
        assert await refusal(f"sqlite:///{path}") == f"{served_here}; one server per file"
        lock_file.unlink()
        async with open_store(f"sqlite:///{path}") as second:
            with pytest.raises(StoreUnavailable, match=re.escape(served_here)):
                await first.create(stored("lost"), ROOMY, T0)
            with pytest.raises(StoreUnavailable, match=re.escape(served_here)):
                await first.read("kept")
            assert await second.read("lost") is None
        await first.create(stored("new"), ROOMY, T0)
        assert [await first.read(t) is not None for t in ("kept", "after", "lost", "new")] == [
            True,
            True,
            False,
            True,
        ]
    assert [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING] == [
        f"{lock_file} was removed or replaced while this server held it: locked again"
    ] * 2


async def test_a_foreign_database_is_refused_before_anything_is_written(tmp_path: Path) -> None:
    """presa-defined (nothing written before the file is known to be presa's): a
    SQLite file with other tables is refused in one line; it is left byte for byte
    as it was, in its own journal mode, with no lock file beside it."""
    path = tmp_path / "theirs.db"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE orders (id INTEGER PRIMARY KEY)")
    db.close()
    before = path.read_bytes()
    assert (
        await refusal(f"sqlite:///{path}")
        == f"{path} is not a presa task store: it holds other tables"
    )
    assert path.read_bytes() == before
    assert os.listdir(tmp_path) == ["theirs.db"]


async def test_writes_that_wait_together_commit_together_and_fail_alone(tmp_path: Path) -> None:
    """presa-defined (sqlite.database: the writes pending when the writer is free run
    as one batch, each in a savepoint of its own): while another program holds the
    file's write lock, three creations wait; once it lets go they run together, and
    the one that collides is refused alone while the other two are stored."""
    path = tmp_path / "tasks.db"
    outcomes: dict[str, str] = {}
    async with open_store(f"sqlite:///{path}") as store:
        await store.create(stored("t-1"), ROOMY, T0)
        other = sqlite3.connect(path, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")

        async def create(task_id: str) -> None:
            try:
                await store.create(stored(task_id), ROOMY, T0)
                outcomes[task_id] = "stored"
            except TaskIdCollision:
                outcomes[task_id] = "collision"

        with trio.fail_after(PATIENCE):
            async with trio.open_nursery() as nursery:
                nursery.start_soon(create, "t-2")  # waits for the lock in the writer
                await trio.testing.wait_all_tasks_blocked()
                for task_id in ["t-3", "t-1", "t-4"]:
                    nursery.start_soon(create, task_id)
                await trio.testing.wait_all_tasks_blocked()
                other.execute("ROLLBACK")
        other.close()
        read = [await store.read(task_id) for task_id in ["t-2", "t-3", "t-4"]]
    assert outcomes == {"t-1": "collision", "t-2": "stored", "t-3": "stored", "t-4": "stored"}
    assert [task.task_id if task else None for task in read] == ["t-2", "t-3", "t-4"]


async def test_a_batch_runs_to_its_end_though_the_caller_running_it_is_cancelled(
    tmp_path: Path,
) -> None:
    """presa-defined (sqlite.database: a batch carries other callers' writes, so it is
    shielded): two creations share a batch that waits for the writer; the caller
    running it is cancelled meanwhile, and the other creation is stored all the same."""
    async with open_store(f"sqlite:///{tmp_path / 'tasks.db'}") as store:
        assert isinstance(store, SqliteStore)
        stored_ids: list[str] = []
        first = trio.CancelScope()

        async def create(task_id: str, scope: trio.CancelScope) -> None:
            with scope:
                await store.create(stored(task_id), ROOMY, T0)
                stored_ids.append(task_id)

        with trio.fail_after(PATIENCE):
            # The writer is busy (its limiter held here) while the two creations queue.
            async with trio.open_nursery() as nursery, store.database.writer.limiter:
                nursery.start_soon(create, "t-1", first)
                nursery.start_soon(create, "t-2", trio.CancelScope())
                await trio.testing.wait_all_tasks_blocked()
                first.cancel()
                await trio.testing.wait_all_tasks_blocked()
        assert "t-2" in stored_ids
        assert await store.read("t-2") is not None


async def test_writes_that_meet_a_full_file_are_unavailable_then_succeed(tmp_path: Path) -> None:
    """presa-defined (docs/task-stores.md "Faults": a full file system is "unavailable"):
    a status message and an event too large for the room left each fail as the full
    file they met, retryable, whether SQLite rolled back the statement (the status
    message) or the whole transaction under the write's savepoint (the event); once
    there is room again, the same writes are stored."""
    async with open_store(f"sqlite:///{tmp_path / 'tasks.db'}") as store:
        assert isinstance(store, SqliteStore)
        await store.create(stored("t-1"), ROOMY, T0)
        reported = model.report(new_task("t-1"), "x" * 1_000_000, T0)
        event = NewEvent("com.example.large", {"x": "x" * 1_000_000})
        pages = await store.database.run(lambda db: db.execute("PRAGMA page_count").fetchone()[0])
        await store.database.run(lambda db: db.execute(f"PRAGMA max_page_count = {pages}"))
        with pytest.raises(StoreUnavailable, match="database or disk is full"):
            await store.compare_and_set("alice", reported, 0)
        with pytest.raises(StoreUnavailable, match="database or disk is full"):
            await store.append_events("t-1", [event], T0, KEEP_ALL)
        await store.database.run(lambda db: db.execute(f"PRAGMA max_page_count = {2**31}"))
        await store.compare_and_set("alice", reported, 0)
        appended = await store.append_events("t-1", [event], T0, KEEP_ALL)
        found = await store.read("t-1")
        assert found is not None
        assert found.task == reported
        assert [(e.seq, e.payload) for e in appended] == [(0, event.payload)]


async def test_an_in_memory_database_is_refused_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (one file, two connections): ``sqlite:///:memory:`` would give the
    writer and the reader a database each, so a task written could never be read; it
    is refused in one line pointing to ``memory:``, and nothing is left behind."""
    monkeypatch.chdir(tmp_path)
    assert await refusal("sqlite:///:memory:") == (
        "bad store URL 'sqlite:///:memory:': SQLite's in-memory database is not a file; use memory:"
    )
    assert os.listdir(tmp_path) == []


async def test_a_file_with_a_second_hard_link_is_refused_in_one_line(tmp_path: Path) -> None:
    """presa-defined (one server per file): a hard link is a second name the lock beside
    the file cannot see, and SQLite names its write-ahead log after the name opened, so
    two servers would write one file through two logs. While the file has another name,
    opening it by either is refused in one line; once that name is gone, it opens."""
    path, other = tmp_path / "tasks.db", tmp_path / "other.db"
    async with open_store(f"sqlite:///{path}"):
        pass
    os.link(path, other)
    for name in (path, other):
        assert await refusal(f"sqlite:///{name}") == (
            f"{name} has 2 hard links: SQLite keeps its log by name, so serve it by one name"
        )
    other.unlink()
    async with open_store(f"sqlite:///{path}"):
        pass


@pytest.mark.parametrize("away", ["moved", "deleted", "replaced"])
async def test_a_file_gone_from_its_name_is_unavailable_until_it_is_back(
    tmp_path: Path, away: str
) -> None:
    """presa-defined (tasks are never lost; one server per file): once the path no
    longer names the file the store opened (moved, deleted, or another file put in its
    place), a task written to the open file could not be found by the next server on
    that path, and a second server could start there: every call is unavailable
    (retryable), and nothing is written. Once the file is back under its name, the
    store serves again, with every task it held."""
    path, aside = tmp_path / "tasks.db", tmp_path / "aside.db"
    async with open_store(f"sqlite:///{path}") as store:
        await store.create(stored("kept"), ROOMY, T0)
        if away == "deleted":
            os.link(path, aside)  # kept, to put back: the file itself is deleted from its name
            path.unlink()
        else:
            path.rename(aside)
        if away == "replaced":
            sqlite3.connect(path).close()
        with pytest.raises(StoreUnavailable, match="no longer names the file"):
            await store.create(stored("lost"), ROOMY, T0)
        with pytest.raises(StoreUnavailable, match="no longer names the file"):
            await store.read("kept")
        aside.replace(path)
        await store.create(stored("new"), ROOMY, T0)
        assert await store.read("kept") == stored("kept")
    async with open_store(f"sqlite:///{path}") as store:
        assert [await store.read(t) is not None for t in ("kept", "lost", "new")] == [
            True,
            False,
            True,
        ]


async def test_the_lock_and_the_file_are_opened_off_the_trio_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """presa-defined (docs/tasks.md, structured concurrency: blocking I/O goes through
    trio.to_thread): opening a store takes its lock file and opens the database in a
    worker thread, so a slow file system holds up no other Trio task."""
    on_trio_thread: list[tuple[str, bool]] = []
    hold_lock, open_file = sqlite_lock.hold_lock, sqlite_store._open

    def recording_lock(path: Path, lock_file: Path) -> tuple[int, bool]:
        on_trio_thread.append(("lock", trio.lowlevel.in_trio_run()))
        return hold_lock(path, lock_file)

    def recording_open(
        path: Path,
    ) -> tuple[sqlite3.Connection, sqlite3.Connection, tuple[FileIdentity, FileIdentity]]:
        on_trio_thread.append(("open", trio.lowlevel.in_trio_run()))
        return open_file(path)

    monkeypatch.setattr(sqlite_lock, "hold_lock", recording_lock)
    monkeypatch.setattr(sqlite_store, "_open", recording_open)
    async with open_store(f"sqlite:///{tmp_path / 'tasks.db'}"):
        pass
    assert on_trio_thread == [("lock", False), ("open", False)]


async def test_a_log_deleted_under_the_store_is_unavailable_and_a_stop_keeps_every_task(
    tmp_path: Path,
) -> None:
    """presa-defined (a creation is acknowledged once durable, spec-notes §44; docs/
    task-stores.md "Faults"): once the write-ahead log is deleted under the store, a
    commit would go to a log no name leads to, lost at a crash, and the reader would
    meet another log: every call is unavailable (retryable), and nothing is written.
    A graceful stop writes what the open log holds into the file, so the next store
    on the file has every task acknowledged before."""
    path, log = tmp_path / "tasks.db", tmp_path / "tasks.db-wal"
    gone = re.escape(f"{log} no longer names the file this server opened")
    async with open_store(f"sqlite:///{path}") as store:
        await store.create(stored("kept"), ROOMY, T0)
        log.unlink()
        with pytest.raises(StoreUnavailable, match=gone):
            await store.create(stored("lost"), ROOMY, T0)
        with pytest.raises(StoreUnavailable, match=gone):
            await store.read("kept")
    async with open_store(f"sqlite:///{path}") as store:
        assert await store.read("kept") == stored("kept")
        assert await store.read("lost") is None


async def test_a_directory_is_refused_in_one_line_saying_so(tmp_path: Path) -> None:
    """presa-defined (a store that cannot be opened fails at start with one line): a
    path naming a directory is refused as one, not as a file with hard links (a
    directory has two names at least), and nothing is left beside it."""
    (tmp_path / "tasks.db").mkdir()
    assert await refusal(f"sqlite:///{tmp_path / 'tasks.db'}") == (
        f"{tmp_path / 'tasks.db'} is a directory: name a file"
    )
    assert os.listdir(tmp_path) == ["tasks.db"]


async def test_a_symbolic_link_that_leads_nowhere_is_refused_in_one_line(tmp_path: Path) -> None:
    """presa-defined (a store that cannot be opened fails at start with one line): a
    path whose symbolic links go round in a loop, or lead into a directory that does
    not exist, is refused naming what could not be opened; neither was a
    StoreUnavailable (a traceback, and an error the command line read as the port's)."""
    (tmp_path / "a.db").symlink_to("b.db")
    (tmp_path / "b.db").symlink_to("a.db")
    (tmp_path / "dangling.db").symlink_to(tmp_path / "no" / "such.db")
    assert (await refusal(f"sqlite:///{tmp_path / 'a.db'}")).startswith(
        f"cannot open {tmp_path / 'a.db'}: "
    )
    assert await refusal(f"sqlite:///{tmp_path / 'dangling.db'}") == (
        f"cannot open {tmp_path / 'no' / 'such.db.lock'}: No such file or directory"
    )
    assert sorted(os.listdir(tmp_path)) == ["a.db", "b.db", "dangling.db"]


async def test_a_new_file_and_its_log_are_readable_by_their_owner_alone(tmp_path: Path) -> None:
    """Spec-mandated (client/elicitation §Statefulness: "State storage MUST be protected
    against unauthorized access"): the file holds every caller's tasks, answers and
    results, so one presa creates is mode 0600, and SQLite gives its write-ahead log
    and shared memory the file's mode, whatever the umask lets others read. A file
    that exists keeps the mode its owner gave it."""
    path, shared = tmp_path / "tasks.db", tmp_path / "shared.db"
    sqlite3.connect(shared).close()
    shared.chmod(0o640)
    before = os.umask(0o022)
    try:
        for name in (path, shared):
            async with open_store(f"sqlite:///{name}") as store:
                await store.create(stored(), ROOMY, T0)
                modes = modes_of(tmp_path, name.name)
            expected = 0o600 if name == path else 0o640
            assert modes == dict.fromkeys(
                [name.name, f"{name.name}-wal", f"{name.name}-shm"], expected
            )
    finally:
        os.umask(before)


def modes_of(directory: Path, prefix: str) -> dict[str, int]:
    """The permission bits of the files in ``directory`` whose names start ``prefix``,
    the lock file aside."""
    return {
        name: os.stat(directory / name).st_mode & 0o777
        for name in os.listdir(directory)
        if name.startswith(prefix) and not name.endswith(".lock")
    }

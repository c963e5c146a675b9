"""The parent of ``serve --workers N`` (:mod:`presa_trio.http.workers`), in-process, with
real worker processes that exit at once.

presa-defined (docs/deployment.md, "Many processes" and "Metrics"): the parent keeps
the Trio thread free while it supervises, its file-system work on worker threads; a
worker keeps what it was given to itself.
"""

from __future__ import annotations

import os
import socket
import sys
import threading
from pathlib import Path

import prometheus_client.multiprocess
import pytest
import trio

from presa_trio.http import workers
from presa_trio.http.worker_link import LINK_FD_ENV
from presa_trio.http.workers import (
    LISTEN_FD_ENV,
    MULTIPROCESS_DIR_ENV,
    Workers,
    keep_inherited,
    listen,
    shared_samples,
)


def on_trio_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


async def test_a_dead_worker_s_samples_are_marked_off_the_trio_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A first worker that exits without saying it serves is seen to exit, and its
    samples are marked dead on a worker thread, not the one supervising the others."""
    marked: list[bool] = []
    monkeypatch.setattr(
        prometheus_client.multiprocess,
        "mark_process_dead",
        lambda pid, directory: marked.append(on_trio_thread()),
    )
    with socket.socket() as listener:
        parent = Workers(
            [sys.executable, "-c", "pass"],
            1,
            listener,
            bound=30.0,
            shared={MULTIPROCESS_DIR_ENV: str(tmp_path)},
        )
        with trio.fail_after(30):
            assert await parent.run_worker(1) == 0
    assert marked == [False]


async def test_a_directory_the_operator_gave_is_emptied_off_the_trio_thread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The previous run's samples are removed on a worker thread."""
    cleared: list[bool] = []
    monkeypatch.setenv(MULTIPROCESS_DIR_ENV, str(tmp_path))
    monkeypatch.setattr(
        workers, "clear_samples", lambda directory: cleared.append(on_trio_thread())
    )
    async with shared_samples(True) as environment:
        assert environment == {MULTIPROCESS_DIR_ENV: str(tmp_path)}
    assert cleared == [False]


async def test_the_parent_s_own_directory_goes_however_the_parent_ends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its own directory (none given) is removed even when the parent is cancelled."""
    monkeypatch.delenv(MULTIPROCESS_DIR_ENV, raising=False)
    with trio.CancelScope() as scope:
        async with shared_samples(True) as environment:
            directory = trio.Path(environment[MULTIPROCESS_DIR_ENV])
            assert await directory.is_dir()
            scope.cancel()
            await trio.sleep_forever()
    assert not await directory.exists()


async def test_a_worker_passes_what_it_was_given_to_no_process_it_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Its listening socket and its end of the link, inheritable as ``pass_fds`` leaves
    them, are given to no process it starts, even one given every descriptor it may
    inherit (as ``os.system`` gives them)."""
    with socket.socket() as listener, socket.socket() as link:
        given = (listener.fileno(), link.fileno())
        for fd in given:
            os.set_inheritable(fd, True)
        monkeypatch.setenv(LISTEN_FD_ENV, str(listener.fileno()))
        monkeypatch.setenv(LINK_FD_ENV, str(link.fileno()))
        keep_inherited()
        looks = " || ".join(f"test -e /proc/self/fd/{fd}" for fd in given)
        done = await trio.run_process(["sh", "-c", looks], check=False, close_fds=False)
    assert done.returncode != 0


@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_the_parent_listens_on_an_ipv6_host_given_with_or_without_brackets(host: str) -> None:
    """The parent binds as a single server binds (:func:`~presa_trio.wire.http_values.authority`):
    an IPv6 literal, bracketed or not, is the same address."""
    with listen(host, 0) as listener:
        assert listener.family == socket.AF_INET6
        assert listener.getsockname()[0] == "::1"

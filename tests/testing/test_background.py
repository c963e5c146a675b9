"""The failure policy of the nursery behind a test's block (presa_trio.testing.background).

presa-defined: the block's lone exception comes out as itself; anything that
failed behind the block stays an ExceptionGroup, alone or with the block's.
"""

from __future__ import annotations

import pytest
import trio
from trio.testing import wait_all_tasks_blocked

from presa_trio.testing.background import open_nursery_behind_block


async def fail_with(error: Exception) -> None:
    raise error


async def test_an_exception_of_the_block_alone_comes_out_unwrapped() -> None:
    """The block's error, the very object raised, with nothing failed behind it."""
    raised = KeyError("from the block")

    async def fail_in_the_block() -> None:
        async with open_nursery_behind_block() as nursery:
            nursery.start_soon(trio.sleep_forever)
            raise raised

    with pytest.raises(KeyError) as caught:
        await fail_in_the_block()
    assert caught.value is raised


async def test_a_failure_behind_the_block_stays_a_group_even_alone() -> None:
    """A lone failure of the server is not unwrapped: it is not the caller's error."""
    with pytest.RaisesGroup(ValueError):
        async with open_nursery_behind_block() as nursery:
            nursery.start_soon(fail_with, ValueError("behind"))
            await trio.sleep_forever()


async def test_two_concurrent_failures_stay_a_group_of_both() -> None:
    """A failure behind the block and the block's own: neither is picked out."""
    with pytest.RaisesGroup(ValueError, KeyError):
        async with open_nursery_behind_block() as nursery:
            nursery.start_soon(fail_with, ValueError("behind"))
            try:
                await trio.sleep_forever()
            finally:
                raise KeyError("from the block, as it was cancelled")


async def test_without_failures_the_nursery_waits_for_its_children() -> None:
    """Leaving the block neither cancels nor abandons what was started behind it."""
    finished: list[str] = []

    async def child() -> None:
        await wait_all_tasks_blocked()
        finished.append("child")

    async with open_nursery_behind_block() as nursery:
        nursery.start_soon(child)
    assert finished == ["child"]

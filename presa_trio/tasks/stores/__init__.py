"""``--store URL``: which store a URL names, and how to open it.

=====================  ================================================
``memory:``            :class:`~presa_trio.tasks.stores.memory.MemoryStore` (default)
``sqlite:///PATH``     :mod:`presa_trio.tasks.stores.sqlite`; four slashes for
                       an absolute path, as in SQLAlchemy
``postgresql://…``     :mod:`presa_trio.tasks.stores.postgres`; any libpq URL
                       (``postgres://`` too); many processes, one database
=====================  ================================================

A store is opened as an async context manager and closed when it exits;
``store_timeout`` bounds each of its calls (``--store-timeout``; the memory store
never waits).
A URL that names no store, or a store that cannot be opened, raises
:class:`~presa_trio.tasks.stores.base.StoreUnavailable` with a one-line message,
which the command line prints before it exits with status 2. The line never
holds the URL's password (:func:`redacted`): it goes to the operator's logs.
"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from urllib.parse import unquote

from presa_trio.tasks.stores.base import DEFAULT_STORE_TIMEOUT_S, StoreUnavailable, TaskStore
from presa_trio.tasks.stores.memory import MemoryStore

DEFAULT_STORE = "memory:"

#: Opens the store a URL names, with a timeout (s), for as long as the context lasts.
StoreOpener = Callable[[str, float], AbstractAsyncContextManager[TaskStore]]


@asynccontextmanager
async def open_memory_store(url: str, store_timeout: float) -> AsyncIterator[TaskStore]:
    """``memory:``: nothing to open or close."""
    if url.rstrip("/") not in {"memory:", "memory:/"}:
        raise StoreUnavailable(f"bad store URL {url!r}: use memory:")
    yield MemoryStore()


@asynccontextmanager
async def open_sqlite(url: str, store_timeout: float) -> AsyncIterator[TaskStore]:
    """``sqlite:///PATH``: imported only here, so a server on ``memory:`` never loads sqlite3."""
    from presa_trio.tasks.stores.sqlite.store import open_sqlite_store

    async with open_sqlite_store(url, store_timeout) as store:
        yield store


@asynccontextmanager
async def open_postgresql(url: str, store_timeout: float) -> AsyncIterator[TaskStore]:
    """``postgresql://…``: psycopg is an optional dependency, imported only here."""
    try:
        from presa_trio.tasks.stores.postgres.store import open_postgresql_store
    except ImportError as error:
        raise StoreUnavailable(
            f"{url.partition(':')[0]}: URLs need psycopg: pip install 'presa-trio[postgresql]'"
        ) from error
    async with open_postgresql_store(url, store_timeout) as store:
        yield store


#: URL scheme -> opener. A new store adds its scheme here.
OPENERS: dict[str, StoreOpener] = {
    "memory": open_memory_store,
    "sqlite": open_sqlite,
    "postgresql": open_postgresql,
    "postgres": open_postgresql,
}


def store_opener(url: str) -> StoreOpener:
    """The opener of the store ``url`` names, by its scheme; an unknown one is refused."""
    scheme, colon, _ = url.partition(":")
    opener = OPENERS.get(scheme) if colon else None
    if opener is None:
        known = ", ".join(f"{name}:" for name in OPENERS)
        raise StoreUnavailable(f"unknown store URL {redacted(url, url)!r}: the schemes are {known}")
    return opener


@asynccontextmanager
async def open_store(
    url: str, store_timeout: float = DEFAULT_STORE_TIMEOUT_S
) -> AsyncIterator[TaskStore]:
    """The store ``url`` names, to open with ``async with``.

    A refusal to open it says why without the URL's password; what the
    store raises once open is its own.
    """
    opened = False
    try:
        async with store_opener(url)(url, store_timeout) as store:
            opened = True
            yield store
    except StoreUnavailable as refused:
        if opened:
            raise
        # Not chained: the driver's own error may quote the URL whole.
        raise StoreUnavailable(redacted(str(refused), url)) from None


#: Where a URL's authority ends: its path, query or fragment.
AUTHORITY_END = re.compile(r"[/?#]")


def url_passwords(url: str) -> list[str]:
    """The passwords ``url`` holds, as written: its userinfo's, and a ``password=`` parameter's."""
    found = []
    authority = AUTHORITY_END.split(url.partition("://")[2], maxsplit=1)[0]
    userinfo, at, _ = authority.rpartition("@")
    if at:
        found.append(userinfo.partition(":")[2])
    for pair in url.partition("?")[2].partition("#")[0].split("&"):
        name, _, value = pair.partition("=")
        if unquote(name) == "password":
            found.append(value)
    return [password for password in found if password]


def redacted(text: str, url: str) -> str:
    """``text`` with each password of ``url``, as written and percent-decoded, as ``[redacted]``.

    libpq quotes what it cannot parse of a URL (the whole URL, or the
    password alone); a message naming the URL names its shape, not its secret.
    """
    for password in url_passwords(url):
        for form in dict.fromkeys([password, unquote(password)]):
            text = text.replace(form, "[redacted]")
    return text

"""Which file a path names: its device and inode, compared again before each store call.

The SQLite store keeps three names to the files it opened: the database,
its write-ahead log (:mod:`~presa_trio.tasks.stores.sqlite.database`) and
the lock beside them (:mod:`~presa_trio.tasks.stores.sqlite.lock`). Each is
a :class:`FileIdentity`, and each call first asks whether the name still
names that file (:meth:`FileIdentity.names_it`). Called in a thread: a
``stat`` is file I/O.
"""

from __future__ import annotations

import os
from pathlib import Path

import attrs

from presa_trio.tasks.stores.base import StoreUnavailable


@attrs.frozen
class FileIdentity:
    """A file a store opened: its path, and the device and inode the path named then."""

    path: Path
    device: int
    inode: int

    @classmethod
    def of(cls, path: Path) -> FileIdentity:
        """In a thread: the file ``path`` names now."""
        path = path.absolute()
        found = path.stat()
        return cls(path, found.st_dev, found.st_ino)

    @classmethod
    def of_open(cls, path: Path, descriptor: int) -> FileIdentity:
        """The file open as ``descriptor``, which was opened by the name ``path``."""
        found = os.fstat(descriptor)
        return cls(path, found.st_dev, found.st_ino)

    def names_it(self) -> bool:
        """In a thread: whether the path still names this file."""
        try:
            found = self.path.stat()
        except OSError:
            return False
        return (found.st_dev, found.st_ino) == (self.device, self.inode)

    def check(self) -> None:
        """In a thread: :class:`StoreUnavailable` unless the path still names the file."""
        if not self.names_it():
            raise StoreUnavailable(
                f"sqlite: {self.path} no longer names the file this server opened"
                " (moved, deleted or replaced): nothing is written until it is back"
            )

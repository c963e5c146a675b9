"""One server per SQLite file: the lock on ``PATH.lock``, held while the store is open.

The store holds an exclusive :func:`fcntl.flock` on ``PATH.lock`` beside
the file, with its pid in it; the operating system releases it when the
process ends, however it ends. A second server on the same file is refused
at start, with one line naming the holder's pid: two processes would each
run, answer and cancel tasks the other cannot see.

**The lock keeps its name.** A lock file removed while the server runs (a
clean-up of "stale" locks, say) or replaced would let a second server start
on the file. So before each store call the name is checked to still name
the file locked (:meth:`HeldLock.keep`); if it does not, the lock is taken
again under the name, as at start: once it is, the call goes on (one
warning in the log); while another process holds it, every call is
unavailable (retryable), and nothing is written.
"""

from __future__ import annotations

import errno
import fcntl
import logging
import os
import threading
from pathlib import Path

import attrs

from presa_trio.tasks.stores.base import StoreUnavailable
from presa_trio.tasks.stores.sqlite.identity import FileIdentity

log = logging.getLogger(__name__)


def lock_path(path: Path) -> Path:
    """The file beside ``path`` whose lock says which process serves it.

    Beside the file itself, its symbolic links followed, so a second server
    that names the file through a link, or by another relative path, meets
    the same lock.
    """
    try:
        real = path.resolve()
    except (OSError, RuntimeError) as error:  # links in a loop (RuntimeError before 3.13)
        raise StoreUnavailable(f"cannot open {path}: {error}") from None
    return real.with_name(real.name + ".lock")


def hold_lock(path: Path, lock_file: Path) -> tuple[int, bool]:
    """Lock ``lock_file`` (``PATH.lock``) for this process, its pid in it; the open
    descriptor, and whether the lock file was made just now.

    ``flock`` locks belong to the open file, so the operating system drops
    the lock when the process ends, however it ends; a stale file left by a
    killed server is simply locked again.
    """
    try:
        descriptor = os.open(lock_file, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o644)
        made = True
    except FileExistsError:
        descriptor, made = None, False
    except OSError as error:  # a link into a directory that does not exist, say
        raise StoreUnavailable(f"cannot open {lock_file}: {error.strerror}") from None
    try:
        if descriptor is None:
            descriptor = os.open(lock_file, os.O_RDWR)
    except OSError as error:
        raise StoreUnavailable(f"cannot open {lock_file}: {error.strerror}") from None
    try:
        fcntl.flock(descriptor, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError as error:
        holder = os.pread(descriptor, 32, 0).decode(errors="replace").strip()
        os.close(descriptor)
        if error.errno not in (errno.EWOULDBLOCK, errno.EAGAIN):
            raise StoreUnavailable(f"cannot lock {lock_file}: {error.strerror}") from None
        who = f"pid {holder}" if holder.isdigit() else "a process that wrote no pid"
        raise StoreUnavailable(
            f"{path} is served by another presa process ({who}); one server per file"
        ) from None
    try:
        os.ftruncate(descriptor, 0)
        os.pwrite(descriptor, f"{os.getpid()}\n".encode(), 0)
    except OSError as error:  # a full disk, say: refused like any file that cannot be opened
        os.close(descriptor)
        if made:
            lock_file.unlink()
        raise StoreUnavailable(f"cannot write {lock_file}: {error.strerror}") from None
    return descriptor, made


@attrs.define(eq=False)
class HeldLock:
    """This process's lock on the file ``path``: see the module docstring."""

    path: Path
    lock_file: Path
    descriptor: int
    # Whether the lock file was made at start (a refused file keeps nothing beside it).
    made: bool
    # The file locked, which ``lock_file`` must name.
    locked: FileIdentity
    # The writer's and the reader's worker threads both keep the lock, and one at a
    # time takes it again: a threading.Lock, since trio's locks are for tasks, not threads.
    _keeping: threading.Lock = attrs.field(init=False, factory=threading.Lock)

    @classmethod
    def take(cls, path: Path) -> HeldLock:
        """Lock ``PATH.lock`` for this process; :class:`StoreUnavailable` if another holds it."""
        lock_file = lock_path(path)
        descriptor, made = hold_lock(path, lock_file)
        return cls(path, lock_file, descriptor, made, FileIdentity.of_open(lock_file, descriptor))

    def keep(self) -> None:
        """In a thread: go on only while this process holds the lock under its name.

        A lock file gone or replaced is locked again (a warning);
        :class:`StoreUnavailable` while another process holds it.
        """
        with self._keeping:
            if self.locked.names_it():
                return
            try:
                descriptor, _ = hold_lock(self.path, self.lock_file)
            except StoreUnavailable as error:
                raise StoreUnavailable(f"sqlite: {error}") from None
            os.close(self.descriptor)
            self.descriptor = descriptor
            self.locked = FileIdentity.of_open(self.lock_file, descriptor)
            log.warning(
                "%s was removed or replaced while this server held it: locked again", self.lock_file
            )

    def release(self) -> None:
        """Let the lock go (the lock file stays: the next server locks it again)."""
        os.close(self.descriptor)

"""A real PostgreSQL for the tests, from the binaries the ``pgserver`` wheel ships.

``pgserver`` (PyPI) carries a complete PostgreSQL build, so a fresh machine
gets a database server from ``pip install`` alone: no system package, no
root. Only its binaries are used here: its own server manager adds system
users, widens the permissions of every parent directory, and listens on a
Unix socket only, while the tests need a loopback TCP port, a clean stop at
the end, and a way to restart the server in the middle of a test.

PostgreSQL refuses to run as root (``initdb`` and ``postgres`` both exit).
When the tests run as root -- as CI does -- the server runs as ``nobody``,
in a temporary directory handed over to that user; if the installed
binaries sit below a directory ``nobody`` cannot enter, they are copied
into the temporary directory first.
"""

from __future__ import annotations

import importlib.util
import os
import pwd
import shutil
import signal
import socket
import stat
import subprocess
import tempfile
import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

import attrs
import psycopg
from psycopg import sql

from presa_trio.tasks.stores.postgres.schema import CHANNEL

# The account a root test run hands the server to; present on every Debian.
UNPRIVILEGED = "nobody"
# How long a start may take before the harness gives up (a bound, not a check).
START_BOUND_S = 60.0


def installed_binaries() -> Path:
    """The ``bin`` directory of the PostgreSQL inside the ``pgserver`` wheel."""
    # Found, not imported: importing pgserver starts its own machinery.
    spec = importlib.util.find_spec("pgserver")
    if spec is None or not spec.submodule_search_locations:
        raise RuntimeError("pgserver is not installed: pip install -e '.[test]'")
    return Path(spec.submodule_search_locations[0]) / "pginstall" / "bin"


def others_can_reach(path: Path) -> bool:
    """Whether a user with no ownership can enter every directory down to ``path``."""
    return all(p.stat().st_mode & stat.S_IXOTH for p in [path, *path.parents])


def free_port() -> int:
    """A loopback port nothing listens on right now (the kernel's choice)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


#: Free ports the first start tries, each found taken by the time the server bound it.
PORT_TRIES = 5


class PortTaken(RuntimeError):
    """The server could not bind its port: something else took it first."""


@attrs.define(eq=False)
class Postgres:
    """One PostgreSQL server in a temporary directory, on a loopback port."""

    root: Path
    bin: Path
    # Keyword arguments that make a child process run as the server's user.
    as_owner: dict[str, Any]
    # Chosen free at the first start (PostgreSQL takes no port 0), then kept.
    port: int = 0
    process: subprocess.Popen[bytes] | None = None

    @classmethod
    def create(cls) -> Postgres:
        """Make the directory and the cluster (``initdb``); the server is not started."""
        root = Path(tempfile.mkdtemp(prefix="presa-pg-"))
        binaries = installed_binaries()
        as_owner: dict[str, Any] = {}
        if os.geteuid() == 0:
            owner = pwd.getpwnam(UNPRIVILEGED)
            os.chown(root, owner.pw_uid, owner.pw_gid)
            as_owner = {"user": owner.pw_uid, "group": owner.pw_gid, "extra_groups": []}
            if not others_can_reach(binaries):
                binaries = copy_install(binaries, root / "install")
        server = cls(root, binaries, as_owner)
        try:
            server._run(
                "initdb", "-D", str(server.data), "-U", "postgres", "--auth=trust",
                "--encoding=UTF8", "--no-sync",
            )  # fmt: skip
        except BaseException:
            shutil.rmtree(root, ignore_errors=True)
            raise
        return server

    @property
    def data(self) -> Path:
        return self.root / "data"

    @property
    def log(self) -> Path:
        return self.root / "postgres.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/{database}"

    def _run(self, program: str, *args: str) -> None:
        subprocess.run(
            [str(self.bin / program), *args], check=True, capture_output=True, **self.as_owner
        )

    def start(self) -> None:
        """Start the server and return once it accepts connections.

        The first start takes a free port, and another if something took that
        one before the server could bind it; a restart keeps the port.
        """
        if self.port:
            self._start()
            return
        for _ in range(PORT_TRIES - 1):
            self.port = free_port()
            try:
                self._start()
                return
            except PortTaken:
                continue
        self.port = free_port()
        self._start()

    def _start(self) -> None:
        logged_before = self.log.stat().st_size if self.log.exists() else 0
        with self.log.open("ab") as log:
            self.process = subprocess.Popen(
                [
                    str(self.bin / "postgres"), "-D", str(self.data),
                    "-h", "127.0.0.1", "-p", str(self.port), "-k", str(self.root),
                    # Test data need not survive a power cut: no fsync.
                    "-c", "fsync=off", "-c", "synchronous_commit=off",
                    "-c", "full_page_writes=off", "-c", "max_connections=200",
                ],
                stdout=log,
                stderr=subprocess.STDOUT,
                **self.as_owner,
            )  # fmt: skip
        deadline = time.monotonic() + START_BOUND_S
        while True:
            if self.process.poll() is not None:
                self.process = None
                said = self.log.read_bytes()[logged_before:]
                if b"could not bind" in said:
                    raise PortTaken(f"port {self.port} was taken; see {self.log}")
                raise RuntimeError(f"postgres exited at start; see {self.log}")
            try:
                psycopg.connect(self.url(), connect_timeout=2).close()
                return
            except psycopg.OperationalError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)

    def stop(self) -> None:
        """Fast shutdown: open sessions are ended, committed data is kept."""
        if self.process is not None:
            self.process.send_signal(signal.SIGINT)
            self.process.wait()
            self.process = None

    def freeze(self) -> None:
        """SIGSTOP the server and its backends: connections stay open, nothing answers."""
        self._signal_all(signal.SIGSTOP)

    def thaw(self) -> None:
        """SIGCONT: the frozen server goes on where it stopped."""
        self._signal_all(signal.SIGCONT)

    def _signal_all(self, number: signal.Signals) -> None:
        """Signal the postmaster and every process it started (each in a session of its own)."""
        assert self.process is not None
        os.kill(self.process.pid, number)
        for pid in children_of(self.process.pid):
            with suppress(ProcessLookupError):  # ended meanwhile
                os.kill(pid, number)

    def execute(self, statement: str, database: str = "postgres") -> list[tuple[Any, ...]]:
        """Run one statement as the superuser, in autocommit; its rows, if any."""
        with psycopg.connect(self.url(database), autocommit=True) as admin:
            cursor = admin.execute(statement)
            return cursor.fetchall() if cursor.description else []

    @contextmanager
    def read_only(self, database: str) -> Iterator[None]:
        """``database`` read-only for the block: its sessions ended, new ones read-only."""
        name = sql.Identifier(database)
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(
                sql.SQL("ALTER DATABASE {} SET default_transaction_read_only = on").format(name)
            )
            admin.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity"
                " WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            )
            try:
                yield
            finally:
                admin.execute(
                    sql.SQL("ALTER DATABASE {} RESET default_transaction_read_only").format(name)
                )

    def restart(self) -> None:
        """Stop and start again on the same port and data: every connection drops."""
        self.stop()
        self.start()

    def new_database(self) -> str:
        """A fresh, empty database; its URL. Each test gets its own."""
        name = f"t_{uuid.uuid4().hex[:16]}"
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(f'CREATE DATABASE "{name}"')  # a name made above, not input
        return self.url(name)

    def password_login(self, password: str) -> str:
        """A fresh database owned by a new role that logs in with ``password`` alone;
        its URL, which does not hold the password.

        The role's rule goes first in ``pg_hba.conf`` (every other login stays
        as it was), and this returns once the server asks it for the password.
        """
        database = self.new_database().rsplit("/", 1)[1]
        role = f"r_{uuid.uuid4().hex[:16]}"
        self.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{password}'")  # names made here
        self.execute(f'ALTER DATABASE "{database}" OWNER TO {role}')
        rules = self.data / "pg_hba.conf"
        rules.write_text(f"host all {role} 127.0.0.1/32 scram-sha-256\n{rules.read_text()}")
        self.execute("SELECT pg_reload_conf()")
        url = f"postgresql://{role}@127.0.0.1:{self.port}/{database}"
        deadline = time.monotonic() + START_BOUND_S
        while time.monotonic() < deadline:  # the reload is read by the server in its time
            try:
                psycopg.connect(url, connect_timeout=2).close()
            except psycopg.OperationalError:
                return url
            time.sleep(0.05)
        raise RuntimeError(f"{role} still logs in without a password")

    def destroy(self) -> None:
        self.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def children_of(parent: int) -> list[int]:
    """The pids of ``parent``'s child processes, from ``/proc`` (Linux)."""
    children = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue  # ended meanwhile
            # After "pid (command)", the fields are: state, ppid, ...
            if int(stat.rpartition(")")[2].split()[1]) == parent:
                children.append(int(entry.name))
    return children


def copy_install(binaries: Path, into: Path) -> Path:
    """Copy the wheel's PostgreSQL below ``into``; its ``bin`` directory there.

    The binaries find their shared libraries at ``$ORIGIN/../../../pgserver.libs``
    (the wheel's layout), so the copy keeps that layout; C headers are left out.
    """
    site = binaries.parents[2]
    shutil.copytree(
        site / "pgserver" / "pginstall",
        into / "pgserver" / "pginstall",
        ignore=lambda directory, names: {"include"} & set(names),
    )
    shutil.copytree(site / "pgserver.libs", into / "pgserver.libs")
    return into / "pgserver" / "pginstall" / "bin"


@contextmanager
def temporary_postgresql() -> Iterator[Postgres]:
    """A started server for as long as the block runs; nothing is left after it."""
    server = Postgres.create()
    try:
        server.start()
        yield server
    finally:
        server.destroy()


@contextmanager
def listeners_cut(postgres: Postgres, database: str, channel: str = CHANNEL) -> Iterator[None]:
    """While the block runs, nobody listens on ``channel`` of ``database``: its listeners
    are ended and no new connection is allowed; after it, connections are allowed again."""
    with psycopg.connect(postgres.url(), autocommit=True) as admin:
        allow = sql.SQL("ALTER DATABASE {} ALLOW_CONNECTIONS {}")
        admin.execute(allow.format(sql.Identifier(database), sql.SQL("false")))
        try:
            cut_listeners(admin, database, channel)
            yield
        finally:
            admin.execute(allow.format(sql.Identifier(database), sql.SQL("true")))


def cut_listeners(
    admin: psycopg.Connection[tuple[object, ...]], database: str, channel: str = CHANNEL
) -> None:
    """End every connection listening on ``channel`` of ``database``; wait until they are gone."""
    listening = "SELECT pid FROM pg_stat_activity WHERE datname = %s AND query = %s"
    query = sql.SQL("LISTEN {}").format(sql.Identifier(channel)).as_string(admin)
    pids = [pid for (pid,) in admin.execute(listening, (database, query)).fetchall()]
    assert pids, "nobody was listening"
    for pid in pids:
        admin.execute("SELECT pg_terminate_backend(%s, 10000)", (pid,))

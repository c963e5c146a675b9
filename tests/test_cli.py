"""The command line's own behaviour: help, version, and one-line errors for mistakes.

Rules of this file: each mistake runs the real ``python -m presa_trio`` as a
child process and must end with exit status 2, exactly one line on stderr,
and no traceback.
"""

from __future__ import annotations

import json
import os
import re
import sys
import tomllib
from pathlib import Path

import pytest
import trio

from presa_trio import __version__
from presa_trio.cli.entry import EXIT_INTERRUPTED
from presa_trio.cli.main import build_parser
from presa_trio.cli.target import TargetError, load_server
from presa_trio.client.errors import EXIT_CANCELLED
from presa_trio.server import Server
from presa_trio.testing import request
from tests.e2e.serve_process import REPOSITORY
from tests.server import mistakes

STATE_KEY = "k" * 16


async def presa(*arguments: str, env: dict[str, str] | None = None) -> tuple[int, str, str]:
    """Run ``python -m presa_trio ARGUMENTS``; exit status, stdout, stderr."""
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "presa_trio", *arguments],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=REPOSITORY,
            env={**os.environ, **(env or {})},
        )
    return done.returncode, done.stdout.decode(), done.stderr.decode()


MISTAKES = {
    "port out of range": (["serve", "--port", "99999"], "--port: '99999' is not a port"),
    "port not a number": (["serve", "--port", "http"], "--port: 'http' is not a port"),
    "blank allowed host": (["serve", "--allow-host", ""], "--allow-host: '' is not a host name"),
    "allowed host with a space": (
        ["serve", "--allow-host", "a b"],
        "--allow-host: 'a b' is not a host name",
    ),
    "log level": (["serve", "--log-level", "LOUD"], "--log-level: 'LOUD' is not one of"),
    "workers below none": (["serve", "--workers", "-1"], "--workers: '-1' is not a number of"),
    "workers past any machine's cores": (["serve", "--workers", "1025"], "at most 1024"),
    "workers on memory:": (
        ["serve", "--workers", "2"],
        "--workers 2: memory: keeps tasks inside each process, so a task created on one worker "
        "would not be found on another; use --store postgresql://… or --workers 1",
    ),
    "workers on sqlite:": (
        ["serve", "--workers", "2", "--store", "sqlite:///never.db"],
        "--workers 2: a sqlite: store serves one process per file",
    ),
    "log format": (["serve", "--log-format", "xml"], "--log-format: invalid choice"),
    "max body": (["serve", "--max-body", "0"], "--max-body: '0' is not a positive"),
    "read timeout": (["serve", "--read-timeout", "-1"], "--read-timeout: '-1' is not"),
    "grace": (["serve", "--shutdown-grace", "nan"], "--shutdown-grace: 'nan' is not"),
    "store timeout": (["serve", "--store-timeout", "0"], "--store-timeout: '0' is not a positive"),
    # Started, a postgresql:// store could not connect (its TCP keepalive's idle time is
    # the timeout), and no store could make a call whose milliseconds overflow.
    "a store timeout no store takes": (
        ["serve", "--store-timeout", "1e308", "--transcript", "/no/t"],
        "--store-timeout: '1e308' is not a positive number of seconds, at most 32767",
    ),
    "a store timeout past TCP keepalive's": (
        ["stdio", "--store-timeout", "32768", "no_such_module:server"],
        "--store-timeout: '32768' is not a positive number of seconds, at most 32767",
    ),
    "lease that rounds to no time": (
        ["serve", "--port", "0", "--task-lease", "0.0001"],
        "--task-lease: '0.0001' is not a lease of 0.1 to 86400 seconds",
    ),
    "lease past what a store holds": (
        ["serve", "--port", "0", "--task-lease", "1e17"],
        "--task-lease: '1e17' is not a lease of 0.1 to 86400 seconds",
    ),
    "empty key": (["serve", "--state-key", ""], "--state-key #1: a requestState key must"),
    "short key": (
        ["serve", "--state-key", STATE_KEY, "--state-key", "short"],
        "--state-key #2: a requestState key must be at least 16 bytes",
    ),
    "unknown module": (["serve", "no_such_module:server"], "cannot import module"),
    "unknown attribute": (["serve", "examples.hello_server:nope"], "has no attribute 'nope'"),
    "not a server": (["serve", "examples.task_tool:CONFIRM"], "is a dict, not a Server"),
    "no attribute given": (["serve", "examples.hello_server"], "is not MODULE:ATTR"),
    "stdio target": (["stdio", "no_such_module:server"], "cannot import module"),
    "unknown command": (["bogus"], "invalid choice: 'bogus'"),
    "missing transcript": (["transcript", "no-such-file.jsonl"], "cannot read no-such-file"),
    "unwritable transcript": (
        ["serve", "--transcript", "/no-such-dir/t.jsonl"],
        "cannot write the transcript",
    ),
    "bad host": (["serve", "--host", "no-such-host.invalid"], "cannot listen on"),
    # An empty address (a shell variable left unset) would bind every interface.
    "blank host": (["serve", "--host", ""], "--host: '' is not a host name"),
    "reload without a target": (["serve", "--reload"], "--reload watches the files of MODULE"),
    "task events without tasks": (
        ["stdio", "--task-events", "examples.hello_server:server"],
        "--task-events needs a server with the Tasks extension",
    ),
    "an event stream option with streams off": (
        ["serve", "--task-events-max-age", "60", "--task-events-max", "10"],
        "--task-events-max-age needs --task-events (task event streams are off)",
    ),
    "an event stream option with streams off, over stdio": (
        ["stdio", "--task-events-max-streams=5"],
        "--task-events-max-streams needs --task-events",
    ),
    # An unwritable transcript, refused later at start, makes a server that ignored the
    # option stop too, with the wrong line, rather than serve.
    "an auth option with a default, authorization off": (
        ["serve", "--auth-leeway", "5", "--transcript", "/no/t"],
        "--auth-leeway needs --auth-issuer (it is the clock skew allowed on the issuer's",
    ),
    "the key set refetch with development tokens only": (
        ["serve", "--auth-token", "a=s", "--auth-key-refetch=1", "--transcript", "/no/t"],
        "--auth-key-refetch needs --auth-issuer",
    ),
    "the introspection cache without introspection": (
        ["serve", "--auth-issuer", "https://a.example", "--auth-cache-ttl=5", "--transcript=/no/t"],
        "--auth-cache-ttl needs --auth-client-id (it is how long an introspection answer",
    ),
    "an introspection endpoint without introspection": (
        [
            "serve",
            "--auth-issuer",
            "https://a.example",
            "--transcript=/no/t",
            "--auth-introspection-endpoint",
            "https://a.example/introspect",
        ],
        "--auth-introspection-endpoint needs --auth-client-id (it is where tokens are",
    ),
    "an introspection secret without introspection": (
        ["serve", "--auth-client-secret", "s"],
        "--auth-client-secret needs --auth-client-id",
    ),
    "no listen streams": (
        ["serve", "--listen-max-streams-per-client", "0"],
        "is not a positive number of streams",
    ),
    "no events kept": (["serve", "--task-events-max", "0"], "is not a positive number of events"),
    # A postgresql:// store would fail the creation of every task on it.
    "more tasks than a store counts": (
        ["serve", "--task-max-stored", str(2**63), "--transcript", "/no/t"],
        "--task-max-stored: '9223372036854775808' is not a positive number of tasks (at most",
    ),
    "more events kept than a store counts": (
        ["serve", "--port", "0", "--task-events", "--task-events-max", str(2**63)],
        "--task-events-max: '9223372036854775808' is not a positive number of events",
    ),
    "an event age no store holds": (
        ["serve", "--port", "0", "--task-events", "--task-events-max-age", "1e300"],
        "--task-events-max-age: '1e300' is not a number of seconds",
    ),
    "an event age under a millisecond, which would be none": (
        ["serve", "--task-events", "--task-events-max-age", "0.0004", "--transcript", "/no/t"],
        "--task-events-max-age: '0.0004' is not a number of seconds, 0 or at least 0.001",
    ),
    "a terminal retention no store holds": (
        ["serve", "--port", "0", "--task-events", "--task-events-terminal-retention", "1e300"],
        "--task-events-terminal-retention: '1e300' is not a number of seconds",
    ),
    "a payload limit no object fits": (
        ["serve", "--port", "0", "--task-events", "--task-events-max-payload", "1"],
        "--task-events-max-payload: '1' is not a payload size of at least 2 bytes",
    ),
    "a rate whose wait overflows": (
        ["serve", "--rate-limit", "1e-320", "--transcript", "/no/t"],
        "--rate-limit: '1e-320' is not a positive number of calls a second",
    ),
    "no streams": (
        ["serve", "--task-events-max-streams-per-client", "0"],
        "is not a positive number of streams",
    ),
}
if len(getattr(os, "sched_getaffinity", lambda _: ())(0)) > 1:
    # On one core --workers 0 is one worker, which memory: serves.
    MISTAKES["one worker per core on memory:"] = (
        ["serve", "--workers", "0"],
        f"--workers 0 (one per core: {len(os.sched_getaffinity(0))}): memory: keeps tasks",
    )


async def test_an_operator_mistake_is_one_line_and_status_2() -> None:
    """presa-defined (command line): each mistake is named in one line, exit status 2.
    The processes run side by side; each case is checked under its own name."""
    outcomes: dict[str, tuple[int, str, str]] = {}

    async def run(case: str, arguments: list[str]) -> None:
        outcomes[case] = await presa(*arguments)

    async with trio.open_nursery() as nursery:
        for case, (arguments, _) in MISTAKES.items():
            nursery.start_soon(run, case, arguments)
    for case, (_, says) in MISTAKES.items():
        status, _, stderr = outcomes[case]
        assert status == 2, case
        assert len(stderr.splitlines()) == 1, (case, stderr)
        assert stderr.startswith("presa-trio: error: "), case
        assert says in stderr, (case, stderr)
        assert "Traceback" not in stderr, case


async def test_a_refused_registration_or_a_syntax_error_is_one_line_and_status_2(
    tmp_path: Path,
) -> None:
    """presa-defined (command line): each module of tests/server/mistakes.py, served by
    ``presa-trio serve MODULE:server``, ends with the registration error's one line
    and exit status 2; so does a module with a syntax error, under ``serve`` and
    ``stdio``. At most four processes run at once."""
    modules = {
        f"mistake_{index}": (mistakes.HEADER + source, f"presa-trio: error: {says}")
        for index, (source, says) in enumerate(mistakes.MISTAKES.values())
    }
    modules["broken"] = ("def broken(:\n    pass\n", "broken.py, line 1: invalid syntax")
    for module, (source, _) in modules.items():
        (tmp_path / f"{module}.py").write_text(source)
    runs = {module: ["serve", f"{module}:server"] for module in modules}
    runs["broken under stdio"] = ["stdio", "broken:server"]
    outcomes: dict[str, tuple[int, str, str]] = {}
    limit = trio.CapacityLimiter(4)

    async def run(case: str, arguments: list[str]) -> None:
        async with limit:
            outcomes[case] = await presa(*arguments, env={"PYTHONPATH": str(tmp_path)})

    async with trio.open_nursery() as nursery:
        for case, arguments in runs.items():
            nursery.start_soon(run, case, arguments)
    wrong = {}
    for case in runs:
        says = modules[case.removesuffix(" under stdio")][1]
        status, _, stderr = outcomes[case]
        if status != 2 or len(stderr.splitlines()) != 1 or says not in stderr:
            wrong[case] = (status, stderr)
    assert wrong == {}


async def test_a_port_in_use_is_one_line_and_status_2() -> None:
    """presa-defined (command line): binding fails before anything is served, and the
    "serving" line is never printed."""
    with trio.socket.socket() as taken:
        await taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, _, stderr = await presa("serve", "--port", str(port))
    assert status == 2
    assert stderr.splitlines() == [
        f"presa-trio: error: cannot listen on 127.0.0.1:{port}: Address already in use"
    ]


@pytest.mark.parametrize("keys", ["", f"{STATE_KEY},", f"{STATE_KEY},short"])
async def test_state_keys_from_the_environment_are_checked_too(keys: str) -> None:
    """presa-defined (command line): an empty or short entry in ``PRESA_STATE_KEY`` is
    refused, not dropped; an empty variable counts as unset (then binding is what
    fails)."""
    arguments = ["serve", "--host", "no-such-host.invalid"]
    status, _, stderr = await presa(*arguments, env={"PRESA_STATE_KEY": keys})
    assert status == 2
    assert len(stderr.splitlines()) == 1, stderr
    if keys:
        assert "PRESA_STATE_KEY entry 2: a requestState key must be at least 16 bytes" in stderr
    else:
        assert "cannot listen on no-such-host.invalid" in stderr


async def test_a_transcript_made_at_start_is_readable_by_its_owner_alone(tmp_path: Path) -> None:
    """Spec-mandated (client/elicitation §Statefulness: "State storage MUST be protected
    against unauthorized access"): ``serve --transcript FILE`` makes FILE at start, before
    it listens, mode 0600 whatever the umask: it will hold every caller's exchanges."""
    path = tmp_path / "t.jsonl"
    before = os.umask(0o022)
    try:
        status, _, stderr = await presa(
            "serve", "--transcript", str(path), "--host", "no-such-host.invalid"
        )
    finally:
        os.umask(before)
    assert (status, "cannot listen on no-such-host.invalid" in stderr) == (2, True), stderr
    assert os.stat(path).st_mode & 0o777 == 0o600


async def test_a_transcript_that_is_not_one_is_refused(tmp_path: Path) -> None:
    """presa-defined (command line): ``presa-trio transcript`` on a file of another kind."""
    other = tmp_path / "other.jsonl"
    other.write_text("this is not JSON\n", encoding="utf-8")
    status, _, stderr = await presa("transcript", str(other))
    assert status == 2
    assert len(stderr.splitlines()) == 1, stderr
    assert "is not a transcript" in stderr


#: A child that runs ``presa-trio``'s entry point (``module:function``, in argv[1]) as
#: its script does, with a Ctrl-C arriving while it loads the command line.
INTERRUPTED_WHILE_LOADING = """
import importlib, importlib.abc, sys

class Interrupting(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path, target=None):
        if name == "presa_trio.cli.main":
            raise KeyboardInterrupt
        return None

sys.meta_path.insert(0, Interrupting())
module, function = sys.argv[1].split(":")
getattr(importlib.import_module(module), function)()
"""


async def test_ctrl_c_while_the_command_line_loads_is_130_and_no_traceback() -> None:
    """presa-defined (docs/client.md, exit statuses): Ctrl-C is 130, never a traceback,
    even before the command line has loaded; the entry point is the one pyproject
    declares."""
    with (REPOSITORY / "pyproject.toml").open("rb") as file:
        entry = tomllib.load(file)["project"]["scripts"]["presa-trio"]
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-c", INTERRUPTED_WHILE_LOADING, entry],
            capture_stdout=True,
            capture_stderr=True,
            check=False,
            cwd=REPOSITORY,
        )
    assert (done.returncode, done.stdout, done.stderr) == (130, b"", b"")


def test_ctrl_c_while_loading_and_while_running_exit_with_the_same_status() -> None:
    """presa-defined (docs/client.md, exit statuses): the entry point's status for a
    Ctrl-C, written out where nothing is imported yet, is the one every command's is."""
    assert EXIT_INTERRUPTED == EXIT_CANCELLED


async def test_version_names_the_package_version() -> None:
    """presa-defined (command line): ``--version``, on stdout, exit 0."""
    assert await presa("--version") == (0, f"presa-trio {__version__}\n", "")


def test_the_help_is_plain_text(capsys: pytest.CaptureFixture[str]) -> None:
    """presa-defined (command line): ``presa-trio --help`` says what the program does
    in words a terminal shows as they are, without a docstring's markup."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args(["--help"])
    assert exited.value.code == 0
    help_text = capsys.readouterr().out
    assert "MCP 2026-07-28" in help_text
    assert re.findall(r"``|:(?:mod|class|func|meth|data):`", help_text) == []


@pytest.mark.parametrize("command", ["serve", "stdio"])
def test_every_option_shows_its_default(command: str, capsys: pytest.CaptureFixture[str]) -> None:
    """presa-defined (command line): ``--help`` states each option's default."""
    with pytest.raises(SystemExit) as exited:
        build_parser().parse_args([command, "--help"])
    assert exited.value.code == 0
    help_text = capsys.readouterr().out
    options = help_text.split("options:")[1]
    entries = re.split(r"\n  (?=[-A-Z])", options)[1:]
    assert {entry.split()[0] for entry in entries} >= {"--state-key", "--log-level"}
    for entry in entries:
        if not entry.startswith("-h"):
            assert "(default: " in " ".join(entry.split()), entry
    assert "(default: the built-in demo)" in " ".join(help_text.split())


def test_a_target_may_be_a_server_or_a_factory_of_one() -> None:
    """presa-defined (``MODULE:ATTR``): a ``Server`` is served as is; a zero-argument
    callable is called for one; a callable needing arguments is refused by name."""
    from examples.hello_server import server

    assert load_server("examples.hello_server:server") is server
    built = load_server("presa_trio.demo:build_server")
    assert isinstance(built, Server)
    assert "test_simple_text" in built.tools
    with pytest.raises(TargetError, match="needs arguments"):
        load_server("presa_trio.demo:McpApp.for_server")


async def test_stdio_serves_a_user_server_too() -> None:
    """presa-defined (``presa-trio stdio MODULE:ATTR``): the same target as ``serve``,
    over stdin/stdout."""
    message = request("tools/call", {"name": "greet", "arguments": {"name": "Ada"}})
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "presa_trio", "stdio", "examples.hello_server:server"],
            stdin=json.dumps(message).encode() + b"\n",
            capture_stdout=True,
            capture_stderr=True,
            cwd=REPOSITORY,
        )
    answer = json.loads(done.stdout.splitlines()[0])
    assert answer["result"]["content"] == [{"type": "text", "text": "Hello, Ada!"}]


async def test_the_listen_cap_is_the_option_s() -> None:
    """presa-defined (spec-notes §62): ``--listen-max-streams-per-client 1`` over stdio,
    where the pipe is the one client: the first listen is acknowledged, a second one is
    the retryable -32603 naming the limit."""
    lines = [
        request("subscriptions/listen", {"notifications": {"toolsListChanged": True}}, request_id=n)
        for n in (1, 2)
    ]
    arguments = ["stdio", "--listen-max-streams-per-client", "1", "examples.hello_server:server"]
    with trio.fail_after(60):
        done = await trio.run_process(
            [sys.executable, "-m", "presa_trio", *arguments],
            stdin=b"".join(json.dumps(line).encode() + b"\n" for line in lines),
            capture_stdout=True,
            capture_stderr=True,
            cwd=REPOSITORY,
        )
    said = [json.loads(line) for line in done.stdout.splitlines()]
    assert [m.get("method", m.get("id")) for m in said] == [
        "notifications/subscriptions/acknowledged",
        2,
    ]
    assert said[1]["error"]["data"] == {
        "retryable": True,
        "limit": "max_listen_streams_per_client",
        "reason": "too_many_streams",
    }


async def test_a_transcript_whose_last_write_was_cut_short_is_rendered(tmp_path: Path) -> None:
    """presa-defined (command line): a transcript cut inside a character, its writer
    stopped mid-line, renders its whole records and names the line it left out."""
    record = {
        "started": 1.0,
        "request": {"method": "POST", "path": "/mcp", "headers": {}, "body": None},
        "response": {"status": 200, "contentType": "application/json", "body": "日本"},
    }
    line = (json.dumps(record, ensure_ascii=False) + "\n").encode()
    torn = tmp_path / "torn.jsonl"
    torn.write_bytes(line + line[:-5])
    status, stdout, stderr = await presa("transcript", str(torn))
    assert (status, stderr) == (0, "")
    assert "\n日本\n" in stdout
    assert "line 2 is not a whole record" in stdout

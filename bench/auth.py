"""What checking a JWT access token costs per request, in process.

Two ways of counting, both in one process with no sockets:

- **instructions** (when valgrind is installed): the process runs under
  ``valgrind --tool=callgrind``; ``callgrind_control --dump`` marks blocks
  of N ``tools/call test_simple_text`` requests through presa's ASGI app
  with authorization off, and as many with a JWT access token (RS256, RFC
  9068) checked by the authorization rung, the issuer's key cached and the
  token reused as clients do, the two kinds in turn. Whatever else runs on
  the machine, the mean over the blocks repeats to about 0.1 % of a
  request (one block alone varies by some 0.3 %: Trio shuffles its run
  queue at random). Valgrind hides the CPU's SHA instructions, so the token's
  SHA-256 (the cache key) runs in software there and is overstated: the
  ratio is an upper bound of the CPU one.
  A third count, the token's SHA-256 alone, shows how much of the
  difference that is.
- **CPU time** (``time.process_time``): the same two requests, in many
  short rounds that measure both back to back (in alternating order), so
  a neighbour's load hits both alike; the share is the median over the
  rounds of the paired difference. Beside them, the guard's lookup of the
  reused token alone (:meth:`ResourceGuard.remembered`), and the full check
  of a token seen for the first time (signature and claims), each the best
  of a few rounds.

The target compares the added cost per request (with a JWT minus without)
with presa's own work on a tools/call (without). That leaves out
hypercorn's HTTP parsing, so the ratio is an upper bound of the share in a
served request. It is met when every share measured is within it.
"""

from __future__ import annotations

import gc
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import attrs
import trio
from joserfc import jwt
from joserfc.jwk import KeySet, RSAKey

from bench import instructions
from bench.mcp import body
from presa_trio.auth.guard import ResourceGuard, Verifiers
from presa_trio.auth.jwt_tokens import JwtVerifier
from presa_trio.auth.keys import IssuerKeys
from presa_trio.auth.verifier import token_digest
from presa_trio.demo import build_server
from presa_trio.http.app import McpApp

ISSUER = "https://issuer.example"
RESOURCE = "http://localhost:3000/mcp"
#: The target: a JWT check costs at most this share of presa's tools/call CPU.
TARGET_SHARE = 0.10
#: Paired rounds of CPU time (plain, with a JWT) and the requests in each.
ROUNDS, PER_ROUND = 200, 50
#: Rounds for the JWT check alone, each of ``PER_ROUND`` calls; the best is kept.
CHECK_ROUNDS = 7
#: Requests of each kind counted under callgrind, in blocks that alternate the two
#: kinds (after a warm-up of one block each): Trio shuffles its run queue at
#: random, so one request's count varies by about 1 k instructions; blocks in
#: turn average that and any drift out of the difference.
COUNTED, BLOCKS = 400, 4


@attrs.frozen
class AuthReport:
    requests: int
    plain_us: float  # presa's tools/call, authorization off (median round)
    with_jwt_us: float  # the same with a JWT checked, token reused (median round)
    cpu_share: float  # median over the rounds of (with JWT - plain) / plain
    lookup_us: float  # the JWT check alone, token reused: the guard's lookup (best round)
    first_use_us: float  # the full check of a new token (best round)
    # Instructions per request (plain, with a JWT, the token's SHA-256 alone),
    # when valgrind is installed.
    instructions: tuple[float, float, float] | None = None

    @property
    def instruction_share(self) -> float | None:
        if self.instructions is None:
            return None
        plain, with_jwt, _ = self.instructions
        return max(with_jwt - plain, 0.0) / plain

    @property
    def met(self) -> bool:
        shares = (self.cpu_share, self.instruction_share)
        return all(share <= TARGET_SHARE for share in shares if share is not None)


def signed_token(key: RSAKey) -> str:
    now = int(time.time())
    claims: dict[str, object] = {"iss": ISSUER, "sub": "alice", "aud": RESOURCE}
    claims |= {"client_id": "bench", "iat": now, "exp": now + 3600, "scope": "mcp"}
    return jwt.encode({"alg": "RS256", "typ": "at+jwt", "kid": key.kid}, claims, key)


def scope_for(token: str | None) -> dict[str, Any]:
    headers = [
        (b"host", b"localhost:3000"),
        (b"content-type", b"application/json"),
        (b"accept", b"application/json, text/event-stream"),
        (b"mcp-protocol-version", b"2026-07-28"),
        (b"mcp-method", b"tools/call"),
        (b"mcp-name", b"test_simple_text"),
    ]
    if token is not None:
        headers.append((b"authorization", b"Bearer " + token.encode()))
    return {"type": "http", "http_version": "1.1", "method": "POST", "path": "/mcp",
            "query_string": b"", "headers": headers}  # fmt: skip


async def one_call(app: McpApp, scope: dict[str, Any], payload: bytes) -> None:
    statuses: list[int] = []
    complete = trio.Event()

    async def receive() -> dict[str, Any]:
        if not statuses:
            statuses.append(0)
            return {"type": "http.request", "body": payload, "more_body": False}
        await complete.wait()  # as hypercorn: the end of the response ends the stream
        return {"type": "http.disconnect"}

    async def send(event: dict[str, Any]) -> None:
        if event["type"] == "http.response.start":
            statuses.append(event["status"])
        elif not event.get("more_body", False):
            complete.set()

    await app.http(scope, receive, send)  # type: ignore[arg-type]
    if statuses[-1] != 200:
        raise RuntimeError(f"tools/call answered {statuses[-1]}")


Step = Callable[[], Awaitable[object]]


async def remembered(guard: ResourceGuard, token: bytes) -> object:
    """The guard's lookup of a token it verified before (a call, not a coroutine, in presa)."""
    return guard.remembered(token)


async def cpu_rounds(rounds_run: int, requests: int, steps: list[Step]) -> list[list[float]]:
    """CPU microseconds per call of each step, one list per step with a figure per round.

    Each round runs every step ``requests`` times, in turn, the order
    reversed every other round, so a neighbour's load and any drift hit them
    alike.
    """
    rounds: list[list[float]] = [[] for _ in steps]
    for number in range(rounds_run):
        order = list(enumerate(steps))
        for index, step in order if number % 2 == 0 else reversed(order):
            started = time.process_time()
            for _ in range(requests):
                await step()
            rounds[index].append((time.process_time() - started) / requests * 1e6)
    return rounds


def guard(verifier: JwtVerifier) -> ResourceGuard:
    """The guard ``presa-trio serve --auth-issuer`` builds for JWTs (no introspection)."""
    return ResourceGuard(RESOURCE, Verifiers(jwt=verifier), authorization_servers=[ISSUER])


@attrs.frozen
class Setup:
    """The two requests compared, and the checks of the guarded one's token."""

    plain: Step
    with_jwt: Step
    remembered: Step
    first_use: Step
    token: bytes


async def measured(work: Callable[[Setup], Awaitable[None]]) -> None:
    """Run ``work`` with both apps serving (their lifespans running), then stop them."""
    key = RSAKey.generate_key(2048, parameters={"kid": "bench"})
    token = signed_token(key)
    now = time.time()
    keys = IssuerKeys(ISSUER + "/jwks", keys=KeySet([key]), fetched_at=now, expires_at=now + 3600)
    verifier = JwtVerifier(ISSUER, RESOURCE, keys=keys)
    payload = body("tools/call", {"name": "test_simple_text"})
    plain = McpApp.for_server(build_server())
    guarded = McpApp.for_server(build_server(), auth=guard(verifier))
    async with trio.open_nursery() as nursery:
        for app in (plain, guarded):
            await nursery.start(app.run)
        assert guarded.auth is not None
        http = guarded.auth._http
        assert http is not None
        await work(
            Setup(
                partial(one_call, plain, scope_for(None), payload),
                partial(one_call, guarded, scope_for(token), payload),
                partial(remembered, guarded.auth, token.encode()),
                partial(verifier.check, token, http),
                token.encode(),
            )
        )
        nursery.cancel_scope.cancel()


async def measure(rounds_run: int) -> AuthReport:
    rounds: list[list[float]] = []

    async def work(setup: Setup) -> None:
        for step in (setup.plain, setup.with_jwt):  # warm up
            for _ in range(PER_ROUND):
                await step()
        rounds.extend(await cpu_rounds(rounds_run, PER_ROUND, [setup.plain, setup.with_jwt]))
        checks = [setup.remembered, setup.first_use]
        rounds.extend(await cpu_rounds(CHECK_ROUNDS, PER_ROUND, checks))

    await measured(work)
    plain, with_jwt, lookup, first_use = rounds
    shares = [(j - p) / p for p, j in zip(plain, with_jwt, strict=True)]
    return AuthReport(
        rounds_run * PER_ROUND,
        statistics.median(plain),
        statistics.median(with_jwt),
        statistics.median(shares),
        min(lookup),
        min(first_use),
    )


def dump(label: str) -> None:
    """Mark this process's callgrind counts so far with ``label`` and start them again."""
    instructions.mark(os.getpid(), label)


async def count_under_callgrind(requests: int, blocks: int) -> None:
    """The child's part: ``blocks`` blocks of ``requests`` calls of each app in turn,
    each between two dumps, after a warm-up; a garbage collection before each block
    (so no collection of earlier objects falls in one); then the token's SHA-256."""

    async def work(setup: Setup) -> None:
        kinds = (("plain", setup.plain), ("with-jwt", setup.with_jwt))
        for _, step in kinds:
            for _ in range(requests):
                await step()
        for block in range(blocks):
            for label, step in kinds:
                gc.collect()
                await trio.to_thread.run_sync(dump, f"before-{label}-{block}")
                for _ in range(requests):
                    await step()
                await trio.to_thread.run_sync(dump, f"after-{label}-{block}")
        await trio.to_thread.run_sync(dump, "before-digest-0")
        for _ in range(requests):
            token_digest(setup.token)
        await trio.to_thread.run_sync(dump, "after-digest-0")

    await measured(work)


def count_instructions(requests: int, blocks: int) -> tuple[float, float, float]:
    """Instructions per request (plain, with a JWT: the mean over the blocks) and per
    token SHA-256: this module run again under callgrind."""
    with tempfile.TemporaryDirectory(prefix="bench-auth-callgrind-") as scratch:
        out = Path(scratch) / "callgrind.out"
        command = ["valgrind", "--tool=callgrind", f"--callgrind-out-file={out}"]
        command += [sys.executable, "-m", "bench.auth", "--count", str(requests), str(blocks)]
        env = os.environ | {"PYTHONHASHSEED": "0"}
        subprocess.run(command, check=True, capture_output=True, env=env)
        totals = dict(instructions.read_dumps(Path(scratch)))
    counted: dict[str, list[float]] = {}
    for trigger, total in totals.items():
        label = trigger.split()[-1]  # after-KIND-BLOCK
        if label.startswith("after-"):
            kind = label.removeprefix("after-").rsplit("-", 1)[0]
            counted.setdefault(kind, []).append(total / requests)
    plain, with_jwt, digest = (statistics.mean(counted[k]) for k in ("plain", "with-jwt", "digest"))
    return plain, with_jwt, digest


def run(quick: bool) -> AuthReport:
    report = trio.run(measure, ROUNDS // 5 if quick else ROUNDS)
    if instructions.available():
        counted = count_instructions(100 if quick else COUNTED, 2 if quick else BLOCKS)
        report = attrs.evolve(report, instructions=counted)
    return report


def table(report: AuthReport) -> str:
    verdict = "met" if report.met else "MISSED"
    lines = [
        f"JWT access-token check, in process, per request ({report.requests} requests each, "
        f"in rounds of {PER_ROUND}):",
        "",
        "| figure | µs CPU | instructions |",
        "| --- | ---: | ---: |",
    ]
    plain_i, with_jwt_i, digest_i = report.instructions or (None, None, None)

    def row(figure: str, us: float | None, counted: float | None = None) -> str:
        shown = "—" if us is None else f"{us:.1f}"
        return f"| {figure} | {shown} | {'—' if counted is None else f'{counted:,.0f}'} |"

    lines += [
        row("tools/call, authorization off", report.plain_us, plain_i),
        row("tools/call with a JWT checked (key cached)", report.with_jwt_us, with_jwt_i),
        row("the JWT check alone, token reused (the guard's lookup)", report.lookup_us),
        row("the token's SHA-256 alone (under callgrind: in software)", None, digest_i),
        row("the JWT check of a new token (RS256, claims)", report.first_use_us),
        "",
        f"added per request / presa's tools/call: CPU time {report.cpu_share:.1%} "
        "(median of the paired rounds)",
    ]
    counted = report.instruction_share
    if counted is None or report.instructions is None:
        lines.append("instructions: valgrind is not installed; the verdict is on CPU time")
    else:
        plain_i = report.instructions[0]
        lines.append(
            f"added per request / presa's tools/call: instructions {counted:.1%} (callgrind), "
            f"of which the token's SHA-256 {report.instructions[2] / plain_i:.1%}: valgrind "
            "hides the CPU's SHA instructions, so it runs in software there"
        )
    lines.append(f"target ≤ {TARGET_SHARE:.0%} (every share measured): {verdict}")
    return "\n".join(lines)


if __name__ == "__main__":
    if sys.argv[1:2] == ["--count"]:
        trio.run(count_under_callgrind, int(sys.argv[2]), int(sys.argv[3]))
    else:
        print(table(run(quick="--quick" in sys.argv[1:])))

"""``presa-trio login URL --no-browser``, with the test as the person and their browser.

The client prints the authorization URL on stderr and waits on its
loopback redirect (RFC 8252 §7.3). A browser takes the URL from there:
:func:`consent` follows the redirects (an authorization server whose user
is signed in and has consented, as the tests' own one), :func:`submit_forms`
also submits each form a page shows, with the values the page fills in (a
sign-in page such as the SDK example's, whose form carries its demo
credentials), until a page has no form: the client's "you may close this
window".
"""

from __future__ import annotations

import subprocess
from collections.abc import Awaitable, Callable
from functools import partial
from html.parser import HTMLParser
from urllib.parse import urljoin

import attrs
import httpx
import trio

from tests.client.helpers import client_command
from tests.e2e.serve_process import REPOSITORY

#: What the person's browser does with the authorization URL; the last page.
Browser = Callable[[httpx.AsyncClient, str], Awaitable[httpx.Response]]
#: Forms a sign-in may show before the redirect back (a login, a consent).
MAX_FORMS = 3


async def consent(http: httpx.AsyncClient, url: str) -> httpx.Response:
    """The browser of a person already signed in who has consented: redirects only."""
    return await http.get(url, follow_redirects=True)


@attrs.define
class Form:
    """The first form of a page: where it goes and the values its inputs hold."""

    action: str = ""
    method: str = "get"
    fields: dict[str, str] = attrs.field(factory=dict)


class FormReader(HTMLParser):
    """Reads the first ``<form>`` of a page, as a browser would submit it unchanged."""

    def __init__(self) -> None:
        super().__init__()
        self.form: Form | None = None
        self.inside = False

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        named = {name: value or "" for name, value in attrs}
        if tag == "form" and self.form is None:
            self.form = Form(named.get("action", ""), named.get("method", "get").lower())
            self.inside = True
        elif tag == "input" and self.inside and self.form is not None and "name" in named:
            self.form.fields[named["name"]] = named.get("value", "")

    def handle_endtag(self, tag: str) -> None:
        if tag == "form":
            self.inside = False


async def submit_forms(http: httpx.AsyncClient, url: str) -> httpx.Response:
    """Follow ``url``; submit each page's form as filled in, until a page has none."""
    page = await http.get(url, follow_redirects=True)
    for _ in range(MAX_FORMS):
        reader = FormReader()
        reader.feed(page.text)
        if reader.form is None:
            return page
        target = urljoin(str(page.url), reader.form.action)
        if reader.form.method == "post":
            page = await http.post(target, data=reader.form.fields, follow_redirects=True)
        else:
            page = await http.get(target, params=reader.form.fields, follow_redirects=True)
    raise AssertionError(f"still a form after {MAX_FORMS}: {page.text[:500]}")


async def login(
    url: str,
    http: httpx.AsyncClient,
    env: dict[str, str],
    browser: Browser = consent,
    *flags: str,
) -> tuple[int, str]:
    """``presa-trio login URL --no-browser FLAGS``, the printed URL taken by ``browser``.

    Returns the exit status and all the client printed on stderr; a client
    that ends without printing a URL (it refused to sign in) is not browsed.
    """
    return await signing_in(["login", url, *flags], http, env, browser)


async def signing_in(
    arguments: list[str], http: httpx.AsyncClient, env: dict[str, str], browser: Browser = consent
) -> tuple[int, str]:
    """``presa-trio COMMAND --no-browser ARGUMENTS``, a sign-in it prints taken by ``browser``: the
    exit status and all it printed on stderr (:func:`login`, or a command that signs in
    on its way, a step-up say)."""
    with trio.fail_after(60):
        async with trio.open_nursery() as nursery:
            process: trio.Process = await nursery.start(
                partial(
                    trio.run_process,
                    client_command(arguments[0], "--no-browser", *arguments[1:]),
                    stdin=subprocess.DEVNULL,
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.PIPE,
                    cwd=REPOSITORY,
                    env=env,
                    check=False,
                )
            )
            assert process.stderr is not None
            said = b""
            while b"/authorize?" not in said or not said.endswith(b"\n"):
                chunk = await process.stderr.receive_some(4096)
                if not chunk:
                    break  # the client ended before asking the person: a refusal
                said += chunk
            else:
                line = next(w for w in said.decode().split() if "/authorize?" in w)
                last = await browser(http, line)
                assert last.status_code == 200, last.text
            async for chunk in process.stderr:
                said += chunk
    assert process.returncode is not None
    return process.returncode, said.decode()

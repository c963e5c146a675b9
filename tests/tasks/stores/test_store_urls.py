"""A ``--store`` URL that cannot be opened is named in one line, never with its password.

The line goes to stderr, and so to the operator's logs (a journal others
may read): what libpq quotes of a URL it cannot parse, and a URL that names
no store, keep the URL's shape with the password written ``[redacted]``.
No database is needed: each URL is refused before any connection is made.
"""

from __future__ import annotations

import pytest

from presa_trio.tasks.stores import open_store, store_opener
from presa_trio.tasks.stores.base import StoreUnavailable

SECRET = "s3cret-pw"


@pytest.mark.parametrize(
    "url",
    [
        f"postgresq://presa:{SECRET}@db/presa",  # a typo in the scheme
        f"postgresql+psycopg://presa:{SECRET}@db/presa",  # SQLAlchemy's spelling
        f"postgresql://presa:{SECRET}@[::1/presa",  # libpq quotes the whole URL
        f"postgresql://presa:{SECRET}%zz@db/presa",  # libpq quotes the password
        f"postgresql://db/presa?password={SECRET}%zz",  # the password as a parameter
        f"sqlite://presa:{SECRET}@x/tasks.db",
    ],
)
async def test_a_url_that_cannot_be_opened_is_named_without_its_password(url: str) -> None:
    """presa-defined (a secret in a log line is a secret every reader of the log
    holds): the one line says what is wrong with the URL, with ``[redacted]`` for
    the password."""
    with pytest.raises(StoreUnavailable) as refused:
        async with open_store(url):
            pass
    said = str(refused.value)
    assert "s3cret" not in said, said
    assert "[redacted]" in said, said
    assert "\n" not in said


def test_the_parents_check_of_a_url_keeps_the_password_out_too() -> None:
    """presa-defined: ``serve --workers N`` checks the URL's scheme once in the parent;
    its line hides the password as the opening does."""
    with pytest.raises(StoreUnavailable) as refused:
        store_opener(f"postgresq://presa:{SECRET}@db/presa")
    assert str(refused.value).startswith(
        "unknown store URL 'postgresq://presa:[redacted]@db/presa'"
    )

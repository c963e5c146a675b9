"""docs/haproxy.cfg, the HAProxy recipe docs/deployment.md ships, is one HAProxy accepts
without a warning, and the config the HAProxy tests run is that file, its addresses
alone replaced (tests/haproxy.py)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.haproxy import RECIPE, RECIPE_FRONTEND, recipe

#: The addresses of the recipe's servers, in order.
SERVERS = ["127.0.0.1:3001", "127.0.0.1:3002", "127.0.0.1:3003"]


def checked(haproxy: str, config: Path) -> str:
    """What ``haproxy -c`` says of ``config``, once it has found it valid."""
    done = subprocess.run(
        [haproxy, "-c", "-f", str(config)], capture_output=True, timeout=60, check=False
    )
    said = (done.stdout + done.stderr).decode()
    assert done.returncode == 0, said
    return said


def test_haproxy_finds_the_recipe_valid_without_a_warning(haproxy: str, tmp_path: Path) -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"): ``haproxy -c`` accepts the
    recipe as it ships, and the config the tests run from it, and warns of nothing."""
    tested = tmp_path / "haproxy.cfg"
    tested.write_text(recipe(8081, [8082, 8083, 8084]))
    for config in (RECIPE, tested):
        assert "WARNING" not in checked(haproxy, config)


def test_the_tested_config_is_the_recipe_with_its_addresses_replaced() -> None:
    """presa-defined (docs/deployment.md, "Behind HAProxy"): line for line, the config
    the HAProxy tests run is the recipe, but for the frontend's address and each
    server's, so nothing the recipe says (a server's options among them) goes
    untested."""
    ports = [8082, 8083, 8084]
    addresses = {RECIPE_FRONTEND: "127.0.0.1:8081"}
    for server, port in zip(SERVERS, ports, strict=True):
        addresses[server] = f"127.0.0.1:{port}"

    def addressed(line: str) -> str:
        for old, new in addresses.items():
            line = line.replace(old, new)
        return line

    shipped = RECIPE.read_text().splitlines()
    assert sum(addressed(line) != line for line in shipped) == len(addresses)
    assert recipe(8081, ports).splitlines() == [addressed(line) for line in shipped]


def test_a_config_with_fewer_servers_leaves_the_others_out() -> None:
    """presa-defined (bench/scaleout.py): the recipe with one server keeps the first
    server's line, its address replaced, and drops the others."""
    servers = [line.split() for line in recipe(8081, [8082]).splitlines()]
    assert [words for words in servers if words[:1] == ["server"]] == [
        ["server", "a", "127.0.0.1:8082", "check"]
    ]


def test_a_recipe_with_too_few_servers_is_an_error() -> None:
    """presa-defined: asked for more servers than the recipe has, the tests stop rather
    than run a config the recipe does not hold."""
    with pytest.raises(ValueError, match="too few servers"):
        recipe(8081, [8082, 8083, 8084, 8085])

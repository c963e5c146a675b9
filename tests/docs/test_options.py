"""The command line the pages describe is the one ``presa-trio`` parses.

Every option of every command is named somewhere in README.md or docs/*.md,
and every option a page writes after ``presa-trio COMMAND`` (in a code
block or an inline code span) is one that command takes, and every default
a page states for an option is the one it has. The commands are read from
the parser itself (:func:`presa_trio.cli.main.build_parser`), so an option
added without a word in the docs, or a page left naming an option renamed
or a default changed since, fails here. A ``sh`` block, meant to be pasted,
runs the venv's ``presa-trio``, as the README's commands do.
"""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from presa_trio.cli.main import build_parser

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: A command as a page writes it: ``presa-trio`` or ``.venv/bin/presa-trio``, then words.
COMMAND = re.compile(r"(?<![\w-])(?:[\w./-]*/)?presa-trio((?: +[^ `]+)*)")
#: argparse's own option, which no page needs to name.
HELP = {"-h", "--help"}
#: Words that end one shell command.
SHELL = {"&", "&&", "|", "||", ";", "2>&1"}


def subparsers(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def commands(
    parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
) -> Iterator[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every command and subcommand (``("task", "get")``) with its parser."""
    yield path, parser
    for name, child in subparsers(parser).items():
        yield from commands(child, (*path, name))


def options(parser: argparse.ArgumentParser) -> set[str]:
    return {flag for action in parser._actions for flag in action.option_strings} - HELP


def text_of(page: Path) -> str:
    return page.read_text(encoding="utf-8")


def written_commands(text: str) -> Iterator[list[str]]:
    """The words after ``presa-trio`` of each command ``text`` writes: in its code
    blocks (continued lines joined) and its inline code spans, each up to the end
    of the shell command."""
    prose: list[str] = []
    code: list[str] = []
    fenced = False
    for line in text.splitlines():
        if line.lstrip().startswith("```"):
            fenced = not fenced
        else:
            (code if fenced else prose).append(line)
    spans = re.findall(r"`([^`]+)`", " ".join(" ".join(prose).split()))
    lines = "\n".join(code).replace("\\\n", " ").splitlines()
    for command in [*spans, *(line.split(" #")[0] for line in lines)]:
        for match in COMMAND.finditer(command):
            words = match[1].split()
            ends = [i for i, word in enumerate(words) if word in SHELL or word[0] in "<>"]
            yield words[: min(ends, default=len(words))]


def misnamed(text: str) -> list[str]:
    """Each option a command of ``text`` gives that its command does not take."""
    parser = build_parser()
    problems = []
    for words in written_commands(text):
        target: argparse.ArgumentParser = parser
        path: list[str] = []
        while words and words[0].split("|")[0] in subparsers(target):
            name = words.pop(0).split("|")[0]
            target, path = subparsers(target)[name], [*path, name]
        if not path:
            continue
        taken = options(target) | HELP
        for word in words:
            if word == "--":
                break
            flag = word.split("=")[0].rstrip(",.;:)")
            if re.fullmatch(r"--?[a-z][\w-]*", flag) and flag not in taken:
                problems.append(f"presa-trio {' '.join(path)} {flag}")
    return problems


def test_every_option_of_every_command_is_documented() -> None:
    """presa-defined (README.md, docs/): each option ``presa-trio`` takes is named on
    some page, in backticks."""
    named = " ".join(text_of(page) for page in PAGES)
    missing = set()
    for path, parser in commands(build_parser()):
        for action in parser._actions:
            flags = set(action.option_strings) - HELP
            if flags and not any(
                re.search(rf"`[^`]*(?<![\w-]){re.escape(flag)}(?![\w-])[^`]*`", named)
                for flag in flags
            ):
                missing.add(" ".join(["presa-trio", *path, "/".join(sorted(flags))]))
    assert sorted(missing) == []


def test_every_option_a_page_gives_is_one_its_command_takes() -> None:
    """presa-defined (README.md, docs/): a ``presa-trio COMMAND --option`` on a page
    runs: the command takes that option."""
    assert {page.name: misnamed(text_of(page)) for page in PAGES} == {
        page.name: [] for page in PAGES
    }


def test_the_checker_finds_an_option_its_command_lacks() -> None:
    """presa-defined: the check reads commands in code spans and blocks, follows
    subcommands, stops at ``--`` and knows each command's own options."""
    text = (
        "Run `presa-trio serve --port 0 --workers 2` or `presa-trio stdio --port 1`.\n"
        "```sh\n.venv/bin/presa-trio task get --no-listen URL ID --bogus\n"
        "presa-trio call --stdio tool -- presa-trio stdio --store memory: --json\n```\n"
    )
    assert misnamed(text) == ["presa-trio stdio --port", "presa-trio task get --bogus"]


#: ``--flag …`` in backticks and, in the same breath, ``(default N``.
STATED_DEFAULT = re.compile(r"`(--[a-z][\w-]*)[^`]*`[^`|()]{0,40}\(default ([\d.,]+)")


def defaults() -> dict[str, object]:
    """Each option's default, from the first command that takes it."""
    found: dict[str, object] = {}
    for _, parser in commands(build_parser()):
        for action in parser._actions:
            for flag in action.option_strings:
                found.setdefault(flag, action.default)
    return found


def stated_defaults(text: str) -> Iterator[tuple[str, str]]:
    """(option, default) for each default a page states: ``(default N)`` after the
    option, or the leading number of a table's "default" column in its row."""
    yield from STATED_DEFAULT.findall(" ".join(text.split()))
    column = None
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not line.startswith("|"):
            column = None
        elif column is None:
            lowered = [cell.lower() for cell in cells]
            column = lowered.index("default") if "default" in lowered else -1
        elif flag := next(
            filter(None, (re.match(r"`(--[a-z][\w-]*)", cell) for cell in cells)), None
        ):
            said = re.search(r"\(default ([\d.,]+)", line)
            if column >= 0 and (number := re.match(r"[\d.,]+", cells[column])):
                yield flag[1], number[0]
            elif column < 0 and said:
                yield flag[1], said[1]


def wrong_defaults(text: str) -> list[str]:
    known = defaults()
    return [
        f"{flag}: the page says {stated}, the parser {known[flag]}"
        for flag, stated in stated_defaults(text)
        if flag in known and float(stated.replace(",", "").rstrip(".")) != known[flag]
    ]


def test_every_default_a_page_states_is_the_parser_s() -> None:
    """presa-defined (README.md, docs/): a default a page gives an option, in its
    text or in a table's "default" column, is the one ``presa-trio`` uses."""
    stated = [pair for page in PAGES for pair in stated_defaults(text_of(page))]
    assert len(stated) >= 15
    assert {page.name: wrong_defaults(text_of(page)) for page in PAGES} == {
        page.name: [] for page in PAGES
    }


def test_the_checker_finds_a_stale_default() -> None:
    """presa-defined: both forms are read, and a wrong one is named."""
    text = (
        "`--store-timeout SECONDS` (default 5) and `--drain-delay` seconds (default 3).\n"
        "| Limit | Flag | Default |\n|---|---|---|\n"
        "| one | `--task-events-max N` | 1,000 |\n| two | `--task-events-max-streams N` | 25 |\n"
    )
    assert wrong_defaults(text) == [
        "--drain-delay: the page says 3, the parser 0.0",
        "--task-events-max-streams: the page says 25, the parser 256",
    ]


def bare_commands(text: str) -> list[str]:
    """The lines of ``text``'s ``sh`` blocks that run ``presa-trio`` from the PATH."""
    blocks = re.findall(r"^```sh\n(.*?)^```$", text, re.M | re.S)
    lines = "\n".join(blocks).splitlines()
    return [line for line in lines if re.search(r"(?<![\w./-])presa-trio\b", line)]


def test_every_shell_block_runs_presa_trio_from_the_venv() -> None:
    """presa-defined (docs/, as README.md): a ``sh`` block pasted into a shell without
    the venv activated runs the venv's ``presa-trio``, as the README's commands do;
    a ``console`` block shows a session and may say ``presa-trio``."""
    assert {page.name: bare_commands(text_of(page)) for page in PAGES} == {
        page.name: [] for page in PAGES
    }
    assert bare_commands("```sh\npresa-trio serve &\n.venv/bin/presa-trio stdio\n```\n") == [
        "presa-trio serve &"
    ]

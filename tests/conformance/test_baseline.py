"""The conformance harness's pure half: the baseline, the results and their judgement.

No runner, no network, no Trio: the baseline and the runner's scenario listing
are strings here, and the runner's output directory is written into
``tmp_path`` in the layout the runner leaves
(``server-<scenario>-<timestamp>/checks.json``).
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

import conformance.baseline
from conformance.baseline import (
    BaselineEntry,
    Catalogue,
    Check,
    HarnessError,
    ScenarioResult,
    Verdict,
    collect_results,
    judge,
    parse_baseline,
    parse_catalogue,
)
from tests.import_graph import imported_modules

CATALOGUE = Catalogue(
    scored=("caching", "tools-list"),
    unscored={"tasks-lifecycle": "extension", "http-header-validation": "pending"},
)
STAMP = "2026-11-30T10-06-15-427Z"
LATER = "2026-11-30T10-06-16-001Z"
NO_CHECKS = "no checks.json (the scenario crashed or was skipped)"


def result(scenario: str, *checks: tuple[str, str]) -> ScenarioResult:
    """A scenario that left ``checks.json`` with these (id, status) pairs."""
    return ScenarioResult(scenario, [Check(id, status) for id, status in checks])


def verdict_of(scenario_result: ScenarioResult, baseline: str) -> Verdict:
    """Judge one scenario by a baseline given as text."""
    results = {scenario_result.scenario: scenario_result}
    (verdict,) = judge(results, parse_baseline(baseline), CATALOGUE)
    return verdict


def write_result(outdir: Path, scenario: str, text: str | None, stamp: str = STAMP) -> Path:
    """Leave what the runner leaves for one scenario; ``text=None`` writes no checks.json."""
    directory = outdir / f"server-{scenario}-{stamp}"
    directory.mkdir(parents=True)
    if text is None:
        return directory
    path = directory / "checks.json"
    path.write_text(text, encoding="utf-8")
    return path


def test_the_baseline_module_does_no_io_of_its_own() -> None:
    """presa-defined: baseline.py imports no trio, hypercorn or subprocess, so it
    can be tested without the runner."""
    imported = {m.split(".")[0] for m in imported_modules(Path(conformance.baseline.__file__))}
    assert not imported & {"trio", "hypercorn", "subprocess", "asyncio", "socket"}


# --------------------------------------------------------------------------- #
# The baseline file
# --------------------------------------------------------------------------- #


def test_comments_blank_lines_and_both_entry_forms_are_read() -> None:
    """presa-defined (expected-failures.yml): whole-line and trailing ``#``
    comments and blank lines are skipped; an item names a whole scenario or
    ``scenario:check-id``, and each entry keeps its line number."""
    text = (
        "# Expected failures\n"
        "\n"
        "server:  # the only section presa reads\n"
        "  - caching\n"
        "\n"
        "  # a known gap\n"
        "  - tools-list:tools-name-format  # trailing comment\n"
    )
    assert parse_baseline(text) == [
        BaselineEntry("caching", None, 4),
        BaselineEntry("tools-list", "tools-name-format", 7),
    ]


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("# nothing is expected to fail\nserver: []\n", id="empty flow list"),
        pytest.param("server:\n", id="key without items"),
        pytest.param("# comments only\n\n", id="no key"),
    ],
)
def test_an_empty_server_list_is_an_empty_baseline(text: str) -> None:
    """presa-defined: ``server: []`` (the committed form), a bare ``server:`` and
    a file of comments all expect no failure at all."""
    assert parse_baseline(text) == []


def test_the_committed_baseline_parses() -> None:
    """presa-defined: conformance/expected-failures.yml stays in the accepted subset."""
    path = Path(conformance.baseline.__file__).with_name("expected-failures.yml")
    entries = parse_baseline(path.read_text(encoding="utf-8"), str(path))
    assert all(isinstance(entry, BaselineEntry) for entry in entries)


def test_a_quoted_item_is_the_same_entry_and_prints_as_written() -> None:
    """presa-defined: YAML quotes around an item are dropped, and an entry prints
    in the form the file uses, as the report quotes it."""
    text = "server:\n  - 'caching'\n  - \"tools-list:tools-name-format\"\n"
    assert [str(entry) for entry in parse_baseline(text)] == [
        "caching",
        "tools-list:tools-name-format",
    ]


def test_a_client_section_is_tolerated_and_ignored() -> None:
    """presa-defined (runner README "Expected Failures"): the runner's format has
    a ``client:`` list too; presa runs no client scenarios and skips its items."""
    text = "client:\n  - sse-retry\nserver:\n  - caching\n"
    assert [str(entry) for entry in parse_baseline(text)] == ["caching"]


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "server:\n  - caching: wire-schema-valid\n",
            "expected-failures.yml:2: 'caching: wire-schema-valid' is not '<scenario>'",
            id="space after the colon",
        ),
        pytest.param(
            "server:\n  - caching:\n",
            "expected-failures.yml:2: 'caching:' is not '<scenario>'",
            id="empty check id",
        ),
        pytest.param(
            "server:\n  - :wire-schema-valid\n",
            "expected-failures.yml:2: ':wire-schema-valid' is not '<scenario>'",
            id="empty scenario",
        ),
        pytest.param(
            "servers:\n  - caching\n",
            "expected-failures.yml:1: unknown key 'servers' (expected server or client)",
            id="unknown key",
        ),
        pytest.param(
            "  - caching\n",
            "expected-failures.yml:1: expected 'server:' or",
            id="item before any key",
        ),
        pytest.param(
            "server:\n- caching\n",
            "expected-failures.yml:2: expected 'server:' or",
            id="item not indented",
        ),
        pytest.param(
            "server:\n  caching\n",
            "expected-failures.yml:2: expected 'server:' or",
            id="item without a dash",
        ),
        pytest.param(
            "server: [caching]\n",
            "expected-failures.yml:1: expected 'server:' or",
            id="flow list with items",
        ),
        pytest.param(
            "server:\n  - caching\n  - caching\n",
            "expected-failures.yml:3: caching is listed twice",
            id="duplicate",
        ),
        pytest.param(
            "server:\n  - caching:wire-schema-valid\n  - caching\n",
            "expected-failures.yml:2: caching is listed whole,"
            " so caching:wire-schema-valid is redundant",
            id="check entry under a whole scenario",
        ),
    ],
)
def test_a_malformed_baseline_is_rejected_with_file_and_line(text: str, message: str) -> None:
    """presa-defined (runner README "Expected Failures"): only the documented
    subset is accepted, checked as the runner checks it -- no space after the
    colon, nothing empty around it, no duplicates, no check entry for a scenario
    listed whole -- and the error names the file and the line."""
    with pytest.raises(HarnessError, match=re.escape(message)):
        parse_baseline(text, "expected-failures.yml")


# --------------------------------------------------------------------------- #
# The scenario catalogue
# --------------------------------------------------------------------------- #

LISTING = """\
Required for 2026-07-28 (3 scenarios, frozen; run at the 2026-07-28 wire):

\x1b[1mServer scenarios (test against a server):\x1b[22m
  - caching
  - tools-list

Client scenarios (test against a client):
  - tools_call

Run and reported, but never scored:
  extension (2):
    - auth/dpop [client]
    - tasks-lifecycle [server]
  pending (1):
    - http-header-validation [server]
"""


def test_the_listing_gives_scored_then_unscored_server_scenarios() -> None:
    """presa-defined: the runner's ``list --requirements`` output, colours and
    all, yields the server scenarios in order; client scenarios and the client
    leg of the unscored block are left out, and each unscored one keeps its reason."""
    catalogue = parse_catalogue(LISTING)
    assert catalogue == CATALOGUE
    assert catalogue.names == ("caching", "tools-list", "tasks-lifecycle", "http-header-validation")
    assert [catalogue.kind(name) for name in (*catalogue.names, "tools_call")] == [
        "scored",
        "scored",
        "extension",
        "pending",
        "?",
    ]


def test_a_listing_without_server_scenarios_is_a_harness_error() -> None:
    """presa-defined: output with no server scenario means the runner changed,
    not that there is nothing to run."""
    with pytest.raises(HarnessError, match="could not read the scenario list"):
        parse_catalogue("Client scenarios (test against a client):\n  - tools_call\n")


# --------------------------------------------------------------------------- #
# Judging
# --------------------------------------------------------------------------- #


@pytest.mark.parametrize("status", ["FAILURE", "WARNING", "ERROR"])
def test_a_failure_or_warning_the_baseline_does_not_list_is_unexpected(status: str) -> None:
    """presa-defined: FAILURE, WARNING, and any status the harness does not know,
    must be listed; unlisted, it is unexpected and the scenario needs attention."""
    verdict = verdict_of(result("caching", ("ok", "SUCCESS"), ("bad", status)), "server: []\n")
    assert [check.id for check in verdict.unexpected] == ["bad"]
    assert verdict.expected == []
    assert not verdict.ok


@pytest.mark.parametrize("status", ["SUCCESS", "SKIPPED", "INFO"])
def test_success_skipped_and_info_never_count(status: str) -> None:
    """presa-defined: SUCCESS, SKIPPED and INFO need no entry and are only counted."""
    verdict = verdict_of(result("caching", ("a", status), ("b", status)), "server: []\n")
    assert verdict.ok
    assert verdict.unexpected == verdict.expected == []
    assert dict(verdict.counts) == {status: 2}


def test_a_scenario_entry_expects_every_failure_and_warning_in_it() -> None:
    """presa-defined: ``- scenario`` covers all its failing checks, whatever their ids."""
    scenario = result("caching", ("a", "FAILURE"), ("b", "WARNING"), ("c", "SUCCESS"))
    verdict = verdict_of(scenario, "server:\n  - caching\n")
    assert [check.id for check in verdict.expected] == ["a", "b"]
    assert verdict.unexpected == []
    assert verdict.stale == []
    assert verdict.ok


def test_a_check_entry_expects_that_check_only() -> None:
    """presa-defined (runner README "Baselining a single check"): with
    ``- scenario:check-id`` every other failing check of the scenario is still
    unexpected."""
    scenario = result("caching", ("a", "FAILURE"), ("b", "FAILURE"))
    verdict = verdict_of(scenario, "server:\n  - caching:a\n")
    assert [check.id for check in verdict.expected] == ["a"]
    assert [check.id for check in verdict.unexpected] == ["b"]
    assert verdict.stale == []
    assert not verdict.ok


def test_a_scenario_entry_that_covers_nothing_is_stale() -> None:
    """presa-defined: a listed scenario with no FAILURE or WARNING left makes the
    entry stale, and the run fails until it is removed."""
    verdict = verdict_of(
        result("caching", ("a", "SUCCESS"), ("b", "SKIPPED")), "server:\n  - caching\n"
    )
    assert [str(entry) for entry in verdict.stale] == ["caching"]
    assert not verdict.ok


@pytest.mark.parametrize(
    "checks",
    [
        pytest.param([("a", "SUCCESS")], id="passes"),
        pytest.param([("a", "SKIPPED")], id="skipped"),
        pytest.param([("a", "INFO")], id="info"),
        pytest.param([("b", "SUCCESS")], id="absent"),
        pytest.param([("b", "FAILURE")], id="absent while another fails"),
    ],
)
def test_a_check_entry_whose_check_does_not_fail_is_stale(checks: list[tuple[str, str]]) -> None:
    """presa-defined: ``- scenario:check-id`` is stale when that check passes, is
    skipped or is absent -- stricter than the runner, which tolerates a listed
    check that is absent or skipped."""
    verdict = verdict_of(result("caching", *checks), "server:\n  - caching:a\n")
    assert [str(entry) for entry in verdict.stale] == ["caching:a"]
    assert verdict.expected == []
    assert not verdict.ok


@pytest.mark.parametrize("baseline", ["server: []\n", "server:\n  - caching\n"])
def test_a_scenario_without_checks_json_fails_even_when_listed(baseline: str) -> None:
    """presa-defined: a scenario that left no checks.json is missing, whatever the
    baseline says, and its entries are not called stale."""
    verdict = verdict_of(ScenarioResult("caching", None, problem=NO_CHECKS), baseline)
    assert verdict.missing
    assert verdict.unexpected == verdict.expected == []
    assert verdict.stale == []
    assert not verdict.counts
    assert not verdict.ok


def test_a_repeated_check_id_is_judged_occurrence_by_occurrence() -> None:
    """presa-defined: each occurrence of a repeated id is counted and judged on its
    own (the runner collapses them to one verdict, most severe first; the outcome
    is the same): a passing occurrence hides no failing one, and one entry covers
    them all."""
    scenario = result("caching", ("a", "SUCCESS"), ("a", "FAILURE"), ("a", "WARNING"))
    unlisted = verdict_of(scenario, "server: []\n")
    assert [check.status for check in unlisted.unexpected] == ["FAILURE", "WARNING"]
    listed = verdict_of(scenario, "server:\n  - caching:a\n")
    assert [check.status for check in listed.expected] == ["FAILURE", "WARNING"]
    assert listed.stale == []
    assert listed.ok
    assert dict(listed.counts) == {"SUCCESS": 1, "FAILURE": 1, "WARNING": 1}


def test_every_result_is_judged_in_order_with_its_kind() -> None:
    """presa-defined: one verdict per result, in the order given, with the set it
    belongs to; a result for a scenario outside the requirement set needs
    attention, and an entry for a scenario that did not run (a ``--scenario``
    run) is not judged."""
    results = {
        "caching": result("caching", ("a", "FAILURE")),
        "tasks-lifecycle": result("tasks-lifecycle", ("b", "SUCCESS")),
        "surprise": result("surprise", ("c", "SUCCESS")),
    }
    verdicts = judge(results, parse_baseline("server:\n  - tools-list\n"), CATALOGUE)
    assert [(v.result.scenario, v.kind, v.unknown, v.ok) for v in verdicts] == [
        ("caching", "scored", False, False),
        ("tasks-lifecycle", "extension", False, True),
        ("surprise", "?", True, False),
    ]
    assert all(v.stale == [] for v in verdicts)


# --------------------------------------------------------------------------- #
# Reading the runner's output directory
# --------------------------------------------------------------------------- #


def test_checks_json_is_read_for_each_scenario(tmp_path: Path) -> None:
    """presa-defined: ``server-<scenario>-<timestamp>/checks.json`` is read for
    its scenario (hyphens in the name and all); a check keeps id, status, name
    and errorMessage, absent fields read as ``?`` or empty, and files or folders
    of another shape are ignored."""
    checks = [
        {"id": "ttl", "name": "TTL", "status": "FAILURE", "errorMessage": "ttl < 0", "x": 1},
        {"id": "scope", "name": "Scope", "status": "SUCCESS", "errorMessage": None},
        {},
    ]
    path = write_result(tmp_path, "input-required-result-basic-elicitation", json.dumps(checks))
    (tmp_path / "runner-output.txt").write_text("log\n", encoding="utf-8")
    (tmp_path / "server-caching").mkdir()
    results = collect_results(tmp_path, ["input-required-result-basic-elicitation"])
    assert results == {
        "input-required-result-basic-elicitation": ScenarioResult(
            "input-required-result-basic-elicitation",
            [
                Check("ttl", "FAILURE", "TTL", "ttl < 0"),
                Check("scope", "SUCCESS", "Scope", ""),
                Check("?", "?", "", ""),
            ],
            path,
        )
    }


@pytest.mark.parametrize("outdir_exists", [True, False])
def test_a_scenario_without_a_result_directory_is_missing(
    tmp_path: Path, outdir_exists: bool
) -> None:
    """presa-defined: a scenario the runner should have run but left nothing for
    is reported, even when the output directory itself is absent."""
    outdir = tmp_path if outdir_exists else tmp_path / "absent"
    results = collect_results(outdir, ["caching"])
    assert results == {
        "caching": ScenarioResult("caching", None, problem="the runner did not run it")
    }


def test_a_result_directory_without_checks_json_is_missing(tmp_path: Path) -> None:
    """presa-defined: a result directory with no checks.json means the scenario
    crashed or was skipped."""
    directory = write_result(tmp_path, "caching", None)
    results = collect_results(tmp_path, ["caching"])
    assert results == {"caching": ScenarioResult("caching", None, directory, NO_CHECKS)}


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("not json", id="not JSON"),
        pytest.param('{"id": "ttl"}', id="an object"),
        pytest.param('["ttl"]', id="an element that is not an object"),
    ],
)
def test_an_unreadable_checks_json_is_missing(tmp_path: Path, text: str) -> None:
    """presa-defined: a checks.json that is not a JSON array of objects gives no
    checks, and the problem says why."""
    path = write_result(tmp_path, "caching", text)
    (scenario_result,) = collect_results(tmp_path, ["caching"]).values()
    assert scenario_result.checks is None
    assert scenario_result.path == path
    assert scenario_result.problem.startswith("unreadable checks.json: ")


def test_two_result_directories_for_one_scenario_are_missing(tmp_path: Path) -> None:
    """presa-defined: two runs of one scenario in one output directory cannot be
    told apart, so neither is read; the later one is named."""
    write_result(tmp_path, "caching", "[]")
    later = write_result(tmp_path, "caching", "[]", stamp=LATER)
    results = collect_results(tmp_path, ["caching"])
    assert results == {
        "caching": ScenarioResult("caching", None, later.parent, "2 result directories")
    }


def test_results_of_scenarios_not_asked_for_come_after_the_expected_ones(
    tmp_path: Path,
) -> None:
    """presa-defined: the expected scenarios come first, in the order given, then
    any other result directory the runner left, by name."""
    write_result(tmp_path, "caching", "[]")
    write_result(tmp_path, "zz-extra", "[]")
    write_result(tmp_path, "aa-extra", "[]")
    results = collect_results(tmp_path, ["tools-list", "caching"])
    assert list(results) == ["tools-list", "caching", "aa-extra", "zz-extra"]
    assert [r.checks for r in results.values()] == [None, [], [], []]


def test_the_client_leg_reads_its_own_listing_section_and_nested_results(tmp_path: Path) -> None:
    """presa-defined: for the client leg the listing's client block and the
    client entries of the unscored block are read, the baseline's ``client:``
    section alone counts, and results are ``<scenario>-<timestamp>`` folders,
    ``auth/…`` ones a folder deeper."""
    catalogue = parse_catalogue(LISTING, "client")
    assert catalogue.names == ("tools_call", "auth/dpop")
    assert catalogue.kind("auth/dpop") == "extension"
    text = "server:\n  - caching\nclient:\n  - auth/dpop\n"
    assert [str(e) for e in parse_baseline(text, leg="client")] == ["auth/dpop"]
    for scenario in ("tools_call", "auth/dpop"):
        directory = tmp_path / f"{scenario}-{STAMP}"
        directory.mkdir(parents=True)
        (directory / "checks.json").write_text("[]", encoding="utf-8")
    results = collect_results(tmp_path, ["tools_call", "auth/dpop"], "client")
    assert {name: result.checks for name, result in results.items()} == {
        "tools_call": [],
        "auth/dpop": [],
    }

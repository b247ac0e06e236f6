"""`discoverygym verify` holds a run to its plan (issue #38): every forgery of the issue,
played on a real keyed run through the same door a participant has (the files of the
run directory, then `discoverygym verify`), exits 1 with a reason; the honest run and
its honest copies confirm."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core import EpisodeSpec, make_agent, play_agent
from discoverygym.core.keys import Key, read_key_file
from discoverygym.run.note import verification_of
from discoverygym.run.plan import plan_digest
from discoverygym.run.verify import REL_TOL, same_json, same_number

TASKS = "period,is_bound"


def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def keyed(tmp_path_factory) -> dict[str, Any]:
    """Two keyed gravity runs (the expert passes both, the constant agent fails the
    period), and the key."""
    root = tmp_path_factory.mktemp("verify-forgeries")
    key_file = root / "eval.key"
    assert _cli("key", "new", "--out", str(key_file)).exit_code == 0
    runs = {}
    for agent in ("expert-full", "constant"):
        out = root / agent
        made = _cli("run", "gravity", "--agent", agent, "--tasks", TASKS, "--worlds", "A",
                    "--protocol", "full-obs", "--executor", "serial", "--quiet",
                    "--out", str(out), "--key-file", str(key_file))
        assert made.exit_code == 0, made.output
        runs[agent] = out
    return {"key_file": key_file, "key": read_key_file(key_file), "runs": runs, "root": root}


def _copy(keyed: dict[str, Any], agent: str, dest: Path) -> Path:
    out = dest / agent
    shutil.copytree(keyed["runs"][agent], out)
    (out / "verified.json").unlink(missing_ok=True)
    return out


def _records(run: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (run / "records.jsonl").read_text().splitlines()]


def _write_records(run: Path, records: list[dict[str, Any]], extra: str = "") -> None:
    text = "".join(json.dumps(r) + "\n" for r in records)
    (run / "records.jsonl").write_text(text + extra)


def _edit_run_json(run: Path, edit, *, redigest: bool) -> None:
    info = json.loads((run / "run.json").read_text())
    edit(info)
    if redigest:
        info["plan_digest"] = plan_digest(info["plan"])
    (run / "run.json").write_text(json.dumps(info))


def _verify(run: Path, keyed: dict[str, Any], *extra: str):
    return _cli("verify", str(run), "--key-file", str(keyed["key_file"]),
                "--commitment", keyed["key"].commitment, *extra)


def _rejected(result, run: Path, *reasons: str) -> None:
    """Exit 1, and each reason in the output or in verified.json (the table of the
    output folds long details over lines)."""
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    text = " ".join(result.output.split())
    if (run / "verified.json").is_file():
        note = json.loads((run / "verified.json").read_text())
        assert note["verdict"] == "rejected"
        text += " " + json.dumps(note["problems"])
    for reason in reasons:
        assert reason in text, (reason, text)


# ---- honest runs -------------------------------------------------------------------------

@pytest.mark.parametrize("agent", ["expert-full", "constant"])
def test_an_honest_keyed_run_verifies_and_says_so_beside_the_run(keyed, tmp_path, agent):
    run = _copy(keyed, agent, tmp_path)
    result = _verify(run, keyed)
    assert result.exit_code == 0, result.output
    assert "2 confirmed, 0 mismatched, 0 missing, 0 unreadable of 2 planned" in result.output
    info = json.loads((run / "run.json").read_text())
    assert info["plan"]["key_commitment"] == keyed["key"].commitment
    assert info["plan_digest"] == plan_digest(info["plan"])
    note = verification_of(run)
    assert note == {"status": "verified", "commitment": keyed["key"].commitment,
                    "key_id": keyed["key"].id, "plan_digest": info["plan_digest"]}
    assert "plan not pinned" in result.output
    pinned = _verify(run, keyed, "--plan-digest", info["plan_digest"])
    assert pinned.exit_code == 0, pinned.output
    assert "plan not pinned" not in pinned.output
    _rejected(_verify(run, keyed, "--plan-digest", "0" * 64), tmp_path / "no-note",
              "not the published")
    # a record edited after verification makes the note stale, never "verified"
    with (run / "records.jsonl").open("a") as fh:
        fh.write("\n")
    assert verification_of(run)["status"] == "stale"


def test_the_expert_run_passes_so_the_forgeries_below_forge_passes(keyed):
    assert all(r["passed"] for r in _records(keyed["runs"]["expert-full"]))
    assert not _records(keyed["runs"]["constant"])[0]["passed"]  # period: a failure


# ---- played without the key -------------------------------------------------------------

def _public_record(record: dict[str, Any], agent: str) -> dict[str, Any]:
    """What a participant without the key makes: the public episode of the same
    identity, solved, its answer, truth and score recorded (no key id)."""
    spec = EpisodeSpec(record["suite"], record["task_id"], record["seed"], record["options"])
    episode = spec.build()
    play_agent(make_agent("gravity", agent), episode)
    return episode.record(agent=agent).to_dict()


def test_records_recomputed_publicly_without_their_key_id_are_rejected(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)
    forged = [_public_record(r, "expert-full") for r in _records(run)]
    assert all(r["passed"] and "key_id" not in r for r in forged)
    _write_records(run, forged)
    _rejected(_verify(run, keyed), run, "key id missing (public draws)",
              "0 confirmed, 2 mismatched")
    assert verification_of(run)["status"] == "rejected"


def test_a_public_run_under_a_keyed_run_json_is_rejected(keyed, tmp_path):
    public = tmp_path / "public"
    made = _cli("run", "gravity", "--agent", "expert-full", "--tasks", TASKS, "--worlds", "A",
                "--protocol", "full-obs", "--executor", "serial", "--quiet", "--out",
                str(public))
    assert made.exit_code == 0, made.output
    assert _cli("verify", str(public)).exit_code == 0  # honest as a public run
    shutil.copy(keyed["runs"]["expert-full"] / "run.json", public / "run.json")
    _rejected(_verify(public, keyed), public, "key id missing (public draws)")


def test_a_keyed_run_json_made_public_is_rejected_with_the_key(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)
    _write_records(run, [_public_record(r, "expert-full") for r in _records(run)])

    def unkey(info):
        info["plan"]["key_id"] = info["plan"]["key_commitment"] = None
        for name in ("key_id", "key_commitment"):
            info["config"].pop(name)

    _edit_run_json(run, unkey, redigest=True)
    _rejected(_verify(run, keyed), run, "plans public draws")


# ---- claims that cannot be replayed ------------------------------------------------------

def _flip(record: dict[str, Any]) -> dict[str, Any]:
    return {**record, "passed": True, "score": 1.0}


@pytest.mark.parametrize("forgery", ["infrastructure_failure", "seed -1", "NaN answer",
                                     "8 MB line"])
def test_a_failure_flipped_to_a_pass_that_cannot_be_replayed_is_rejected(keyed, tmp_path,
                                                                        forgery):
    run = _copy(keyed, "constant", tmp_path)
    first, second = _records(run)
    forged = _flip(first)
    extra = ""
    if forgery == "infrastructure_failure":
        forged["details"] = {**forged.get("details", {}), "infrastructure_failure": "lost"}
        reason = "never played (infrastructure failure), yet it claims a pass"
    elif forgery == "seed -1":
        forged["seed"] = -1
        reason = "not in run.json's plan"
    elif forgery == "NaN answer":
        forged["answer"] = float("nan")
        reason = "cannot re-score"
    else:
        forged["details"] = {**forged.get("details", {}), "pad": "x" * 8_000_001}
        extra, forged = json.dumps(forged) + "\n", None
        reason = "line longer than"
    _write_records(run, [r for r in (forged, second) if r is not None], extra)
    _rejected(_verify(run, keyed), run, reason)


def test_a_failure_never_played_that_is_relabelled_is_rejected(keyed, tmp_path):
    """A lost episode's failure moved to another protocol's row of the leaderboard."""
    run = _copy(keyed, "constant", tmp_path)
    first, second = _records(run)
    first.update(passed=False, score=0.0, answer=None, protocol="budget-obs-10",
                 details={"infrastructure_failure": "lost"})
    _write_records(run, [first, second])
    _rejected(_verify(run, keyed), run, "protocol 'budget-obs-10', replay 'full-obs'")
    _write_records(run, [first, *_records(keyed["runs"]["constant"])])  # then retried
    _rejected(_verify(run, keyed), run, "a second record of the episode")


def test_an_unreplayable_failure_that_claims_nothing_counts_as_a_failure(keyed, tmp_path):
    run = _copy(keyed, "constant", tmp_path)
    first, second = _records(run)
    first["details"] = {**first.get("details", {}), "infrastructure_failure": "lost"}
    _write_records(run, [first, second])
    result = _verify(run, keyed)
    assert result.exit_code == 0, result.output
    assert "1 not replayable, counted as failures" in result.output


def test_twenty_invented_passing_records_are_rejected(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)
    records = _records(run)
    invented = [{**records[0], "task_id": f"invented-{i}", "passed": True, "score": 1.0}
                for i in range(20)]
    _write_records(run, records + invented)
    _rejected(_verify(run, keyed), run, "2 confirmed, 20 mismatched", "not in run.json's plan")


# ---- records deleted, duplicated, the plan edited -----------------------------------------

def test_a_deleted_record_is_reported_missing(keyed, tmp_path):
    run = _copy(keyed, "constant", tmp_path)
    _write_records(run, _records(run)[1:])
    _rejected(_verify(run, keyed), run, "1 confirmed, 0 mismatched, 1 missing",
              "planned, but no record")


def test_a_duplicated_record_is_rejected(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)
    records = _records(run)
    _write_records(run, records + records[:1])
    _rejected(_verify(run, keyed), run, "a second record of the episode on line 1")


def test_an_endless_line_is_never_held_whole(tmp_path, monkeypatch):
    """Before, a line was read whole before its length was checked: a records.jsonl of
    one 300 MB line took 760 MB to reject (and a few GB, the machine). Here the limit
    is 1000 characters and the line 20 MB: reading it holds a chunk at a time, and the
    records after it are read."""
    import tracemalloc

    from discoverygym.run import verify

    monkeypatch.setattr(verify, "MAX_LINE_CHARS", 1000)
    monkeypatch.setattr(verify, "_SKIP_CHUNK", 4096)
    path = tmp_path / "records.jsonl"
    with path.open("w") as fh:
        fh.write("x" * 20_000_000 + "\n" + json.dumps({"a": 1}) + "\n" + "y" * 5000)
    tracemalloc.start()
    try:
        lines = verify.read_bounded_records(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert lines == [(1, "line longer than 1000 characters"), (2, {"a": 1}),
                     (3, "line longer than 1000 characters")]
    assert peak < 2_000_000, peak


def test_an_unreadable_line_counts_against_the_run(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)
    _write_records(run, _records(run), "[" * 10_000 + "\n")
    _rejected(_verify(run, keyed), run, "1 unreadable")


@pytest.mark.parametrize("edit", ["config options", "plan options, redigested",
                                  "plan episodes, redigested", "plan, not redigested",
                                  "config key id", "plan commitment, redigested",
                                  "no plan"])
def test_an_edited_run_json_is_rejected(keyed, tmp_path, edit):
    run = _copy(keyed, "expert-full", tmp_path)

    def change(info):
        plan, config = info["plan"], info["config"]
        if edit == "config options":
            config["options"]["worlds"] = ["B"]
        elif edit.startswith("plan options"):
            plan["options"]["worlds"] = ["B"]
        elif edit.startswith("plan episodes"):
            plan["episodes"] = plan["episodes"][:1]
        elif edit == "plan, not redigested":
            plan["seeds"] = [1]
        elif edit == "config key id":
            config["key_id"] = "key-0000000000000000"
        elif edit.startswith("plan commitment"):
            plan["key_commitment"] = config["key_commitment"] = "0" * 64
        else:
            del info["plan"]

    _edit_run_json(run, change, redigest=edit.endswith(", redigested"))
    reasons = {"config options": "disagree on options",
               "plan options, redigested": "disagree on options",
               "plan episodes, redigested": "not the plan of its options",
               "plan, not redigested": "does not match its plan_digest",
               "config key id": "disagree on key_id",
               "plan commitment, redigested": "the key given is",
               "no plan": "holds no plan"}
    _rejected(_verify(run, keyed), run, reasons[edit])


def test_a_plan_options_edit_matching_config_still_fails_the_replan(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)

    def change(info):
        info["plan"]["options"]["worlds"] = info["config"]["options"]["worlds"] = ["B"]

    _edit_run_json(run, change, redigest=True)
    _rejected(_verify(run, keyed), run, "not the plan of its options")


def test_a_plan_rewritten_whole_is_caught_only_by_the_published_digest(keyed, tmp_path):
    """The limit docs/keys.md states: run.json is the participant's file. The failing
    period episodes deleted together with the task from the plan's options and episodes,
    the digest recomputed: a consistent run of the plan it now states (2 of 2), which
    verify says is not pinned; the digest published before the evaluation rejects it."""
    run = _copy(keyed, "constant", tmp_path)
    published = json.loads((run / "run.json").read_text())["plan_digest"]
    _write_records(run, [r for r in _records(run) if r["task_id"] != "period"])

    def drop_period(info):
        for part in (info["plan"], info["config"]):
            part["options"]["tasks"] = ["is_bound"]
        info["plan"]["episodes"] = [e for e in info["plan"]["episodes"] if e[0] != "period"]

    _edit_run_json(run, drop_period, redigest=True)
    unpinned = _verify(run, keyed)
    assert unpinned.exit_code == 0 and "of 1 planned" in unpinned.output, unpinned.output
    assert "plan not pinned" in unpinned.output
    _rejected(_verify(run, keyed, "--plan-digest", published), tmp_path / "no-note",
              "not the published")


def test_the_wrong_key_or_commitment_or_none_is_refused_in_one_line(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)
    wrong = tmp_path / "wrong.key"
    assert _cli("key", "new", "--out", str(wrong)).exit_code == 0
    for result in (_cli("verify", str(run), "--key-file", str(wrong)),
                   _cli("verify", str(run)),
                   _cli("verify", str(run), "--key-file", str(keyed["key_file"]),
                        "--commitment", "0" * 64)):
        assert result.exit_code == 1 and result.output.count("\n") == 1, result.output
        assert "error:" in result.output


# ---- each replayed field ------------------------------------------------------------------

@pytest.mark.parametrize("field,value,reason", [
    ("value", 1e-9, "metric value"), ("passed", False, "passed False"),
    ("score", 0.5, "score 0.5"), ("truth", 12345.0, "truth differs"),
    ("key_id", "key-0000000000000000", "run.json's is"),
    ("answer", 1.0, "score"),
    # the labels the leaderboard groups by: a full-obs run shown under a harder protocol
    ("protocol", "budget-obs-10", "protocol 'budget-obs-10', replay 'full-obs'"),
    ("world", "B", "world 'B', replay 'A'"),
    ("metric", "exact_match", "metric 'exact_match'"),
    ("threshold", 1.0, "threshold 1.0")])
def test_each_field_of_a_record_is_replayed(keyed, tmp_path, field, value, reason):
    run = _copy(keyed, "expert-full", tmp_path)
    records = _records(run)
    records[0][field] = value
    _write_records(run, records)
    _rejected(_verify(run, keyed), run, reason)


def test_numbers_compare_within_the_stated_tolerance():
    assert same_number(1.0, 1.0 + 1.2e-15) and same_number(0.0, 1e-13)
    assert not same_number(1.0, 1.0 + 10 * REL_TOL) and not same_number(0.05, 1e-9)
    assert not same_number(True, 1.0) and not same_number("1.0", 1.0)
    assert same_json({"a": [1.0, "x", None]}, {"a": [1.0 + 1e-15, "x", None]})
    assert not same_json({"a": [1.0]}, {"a": [1.0, 2.0]})
    assert not same_json({"a": 1.0, "b": 2.0}, {"a": 1.0})
    assert not same_json("1", 1)


def test_a_run_without_a_plan_or_records_is_refused(tmp_path):
    result = _cli("verify", str(tmp_path))
    assert result.exit_code == 1 and "no records" in result.output
    (tmp_path / "records.jsonl").write_text("")
    result = _cli("verify", str(tmp_path))
    assert result.exit_code == 1 and "no run.json" in result.output


def test_a_key_is_never_written_into_verified_json(keyed, tmp_path):
    run = _copy(keyed, "expert-full", tmp_path)
    assert _verify(run, keyed).exit_code == 0
    key: Key = keyed["key"]
    assert key.hex() not in (run / "verified.json").read_text()


# ---- what the leaderboard and the report show --------------------------------------------

def test_leaderboard_and_report_say_whether_and_against_what_a_run_was_verified(keyed,
                                                                                 tmp_path):
    from discoverygym.report import write_report
    from discoverygym.run.leaderboard import leaderboard

    run = _copy(keyed, "expert-full", tmp_path)
    assert leaderboard([str(run)], ["agent"])[0]["verified"] == "no"
    assert "Not verified" in write_report(run).read_text()
    assert _verify(run, keyed).exit_code == 0
    row = leaderboard([str(run)], ["agent"])[0]
    commitment = keyed["key"].commitment
    assert row["verified"] == f"yes ({commitment[:12]})" and row["commitment"] == commitment
    assert f"<code>{commitment}</code>" in write_report(run).read_text()
    other = _copy(keyed, "constant", tmp_path)  # a second run, never verified
    assert leaderboard([str(run), str(other)], ["suite"])[0]["verified"] == "1 of 2 runs"
    records = _records(run)
    records[0]["passed"] = not records[0]["passed"]
    _write_records(run, records)  # edited after verification: stale, never "yes"
    assert leaderboard([str(run)], ["agent"])[0]["verified"] == "stale"
    assert "changed after" in write_report(run).read_text()


def test_a_hand_written_note_shows_nothing_it_should_not(keyed, tmp_path):
    """verified.json is anyone's file: what it names is shown only in its own shape."""
    from discoverygym.report import write_report
    from discoverygym.run.leaderboard import leaderboard
    from discoverygym.run.note import sha256_file

    run = _copy(keyed, "expert-full", tmp_path)
    (run / "verified.json").write_text(json.dumps({
        "verdict": "verified", "commitment": "<script>alert(1)</script>",
        "records_sha256": sha256_file(run / "records.jsonl"),
        "run_json_sha256": sha256_file(run / "run.json")}))
    assert leaderboard([str(run)], ["agent"])[0]["verified"] == "yes (public)"
    assert "<script>alert" not in write_report(run).read_text()


def test_an_infrastructure_failure_retried_on_resume_gives_way(keyed, tmp_path):
    """As records.dedupe has it: a lost episode's failure record, then its retry."""
    run = _copy(keyed, "constant", tmp_path)
    first, second = _records(run)
    lost = {**first, "passed": False, "score": 0.0, "answer": None, "truth": None,
            "details": {"infrastructure_failure": "worker died"}}
    _write_records(run, [lost, first, second])
    result = _cli("verify", str(run / "records.jsonl"), "--key-file", str(keyed["key_file"]))
    assert result.exit_code == 0, result.output
    assert "2 confirmed" in result.output and "1 infrastructure failures retried" in result.output
    # a real record never gives way: the same record twice is a duplicate
    _write_records(run, [first, first, second])
    _rejected(_verify(run, keyed), run, "a second record of the episode")


def test_verify_rows_name_the_options_that_tell_episodes_apart():
    """Issue #36: two mad records of one task in different worlds read alike in verify's
    table; each row names its options."""
    from discoverygym.run.verify import _name

    a = {"suite": "mad", "task_id": "predict", "seed": 0,
         "options": {"world": "classical", "law": "normal"}}
    b = {**a, "options": {"world": "fluid", "law": "normal"}}
    assert _name(a) != _name(b)
    assert _name(a) == "mad/predict seed=0 law=normal world=classical"
    assert _name({**a, "options": "not a dict"}) == "mad/predict seed=0"


def test_a_plan_asking_for_millions_of_episodes_is_refused_before_they_are_made(
        keyed, tmp_path, monkeypatch):
    """A hostile run.json naming 10 000 seeds (millions of episodes to replan) is refused
    by counting, in one line: the episodes are never made."""
    import discoverygym.core as core

    run = _copy(keyed, "expert-full", tmp_path)

    def many_seeds(info):
        info["plan"]["seeds"] = info["config"]["seeds"] = list(range(10_000))

    _edit_run_json(run, many_seeds, redigest=True)

    def never(*args, **kwargs):
        raise AssertionError("the plan's episodes were made")

    monkeypatch.setattr(core, "plan_episodes", never)
    from discoverygym.run.verify import RunRefused, verify_run

    with pytest.raises(RunRefused, match="make [0-9]+ episodes, its list"):
        verify_run(run, keyed["key"], key_given=True)

"""Keyed draws (issue #28): with a key, nobody who holds the package and the public seeds
can rebuild an episode; without one, records are as they were (test_golden_records.py).

The attack of the issue is played here as an agent would: it holds the package, rebuilds
the suite's plan for the public seeds, finds its episode by comparing the prompt and
workspace it sees, and submits the rebuilt truth. It passes on public draws (the attack
is real) and fails on keyed ones."""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import re
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core import EpisodeSpec, get_suite
from discoverygym.core.keys import KEY_ENV, KEY_FILE_ENV, Key, read_key_file, write_key_file
from testpaths import REPO

# Strong keys (a counting sequence such as bytes(range(32)) is refused as weak when read
# from a file or the environment), fixed so the tests are deterministic.
KEY = Key(hashlib.sha256(b"discoverygym test key").digest())
OTHER_KEY = Key(hashlib.sha256(b"discoverygym other test key").digest())
GRAVITY_A = EpisodeSpec("gravity", "period", 0,
                        {"world": "A", "protocol": "full-obs", "setup": "leak-free"})
GRAVITY_PROC = EpisodeSpec("gravity", "total_energy", 0,
                           {"world_seed": 3, "protocol": "full-obs"})
STARGAZER = EpisodeSpec("stargazer", "easy-000", 0, {"mode": "v2"})


def _golden_tool():
    path = REPO / "tools" / "golden_records.py"
    spec = importlib.util.spec_from_file_location("golden_records_for_keys", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_digest = _golden_tool()._digest


def _seen(view_or_episode: Any) -> str:
    """What an agent sees of an episode, as one digest (prompt and workspace)."""
    return _digest([view_or_episode.prompt, view_or_episode.workspace()])


def _gravity_truth(episode) -> dict[str, Any]:
    return {"answer": episode.replay_truth()}


def _stargazer_truth(episode) -> dict[str, Any]:
    return episode.truth_submission()


def rebuild_attack(view, candidates: list[EpisodeSpec], truth_args) -> bool:
    """The attacker: rebuild every public candidate, find the one that looks like the
    episode it plays, submit that one's truth. Returns whether it found its episode (if
    not, it submits the truth of the first candidate, its best guess)."""
    seen = _seen(view)
    rebuilt = [spec.build() for spec in candidates]  # public draws: no key
    match = next((e for e in rebuilt if _seen(e) == seen), None)
    view.call("submit", truth_args(match or rebuilt[0]))
    return match is not None


def _public_candidates(spec: EpisodeSpec, seeds=range(3)) -> list[EpisodeSpec]:
    """The attacker's search: the suite's plan for this task at small public seeds."""
    return [EpisodeSpec(spec.suite, spec.task_id, s, dict(spec.options)) for s in seeds]


@pytest.mark.parametrize(("spec", "truth_args"), [
    (GRAVITY_A, _gravity_truth), (GRAVITY_PROC, _gravity_truth),
    (STARGAZER, _stargazer_truth)], ids=["gravity-A", "gravity-procedural", "stargazer"])
def test_rebuilding_the_episode_passes_public_draws_and_fails_keyed_ones(spec, truth_args):
    public = spec.build()
    assert rebuild_attack(public.view(), _public_candidates(spec), truth_args)
    assert public.record().passed  # the attack is real on public draws

    keyed = spec.with_key(KEY).build()
    assert not rebuild_attack(keyed.view(), _public_candidates(spec), truth_args)
    record = keyed.record()
    assert not record.passed and record.key_id == KEY.id


def test_gravity_attack_on_the_plan_itself():
    """The issue's attacker built the suite's own plan (1-4 builds): every planned
    episode of world A is a candidate; with a key none matches."""
    plan = get_suite("gravity").episodes(tasks="period", worlds="A", protocol="full-obs")
    keyed = plan[0].with_key(KEY).build()
    assert not rebuild_attack(keyed.view(), plan, _gravity_truth)
    assert not keyed.record().passed


@pytest.mark.parametrize("spec", [GRAVITY_A, GRAVITY_PROC, STARGAZER],
                         ids=["gravity-A", "gravity-procedural", "stargazer"])
def test_keyed_draws_are_deterministic_secret_and_keep_the_public_identity(spec):
    first, again = spec.with_key(KEY).build(), spec.with_key(KEY).build()
    other = spec.with_key(OTHER_KEY).build()
    assert _seen(first) == _seen(again) != _seen(other)
    assert _seen(first) != _seen(spec.build())
    # the record names the public seed, options and world, and the key's id only
    record = first.record(agent="x").to_dict()
    assert (record["seed"], record["key_id"]) == (spec.seed, KEY.id)
    for name, value in spec.options.items():
        assert record["options"][name] == value
    if spec.suite == "gravity":
        assert record["world"] == (spec.options.get("world")
                                   or f"proc-{spec.options['world_seed']}")
    # the draw seed never shows where an agent looks
    draw = str(KEY.derive(spec.suite, spec.task_id, spec.seed))
    shown = first.prompt + json.dumps([t for t in first.tools()], default=str)
    shown += repr(first.workspace())
    assert draw not in shown and KEY.hex() not in shown and draw not in json.dumps(record)


def test_procedural_keyed_world_keeps_its_kind_so_the_plan_still_applies():
    suite = get_suite("gravity")
    for spec in suite.episodes(world_seed=3, protocol="full-obs"):
        spec.with_key(KEY).build().record()  # every planned task applies to the keyed world


def test_unkeyed_records_have_no_key_id():
    record = GRAVITY_A.build().record().to_dict()
    assert "key_id" not in record


# ---- run, key new, verify ----------------------------------------------------------------

def _cli(*args: str):
    return CliRunner().invoke(app, list(args))


@pytest.fixture(scope="module")
def keyed_run(tmp_path_factory):
    """A keyed gravity run played in worker processes, and its key file."""
    root = tmp_path_factory.mktemp("keyed-run")
    key_file = root / "eval.key"
    made = _cli("key", "new", "--out", str(key_file))
    assert made.exit_code == 0, made.output
    key = read_key_file(key_file)
    assert key.id in made.output and key.commitment in made.output
    assert oct(key_file.stat().st_mode & 0o777) == "0o600"
    out = root / "run"
    result = _cli("run", "gravity", "--agent", "constant", "--tasks", "period,is_bound",
                  "--worlds", "A", "--protocol", "full-obs", "--executor", "process",
                  "--workers", "1", "--quiet", "--out", str(out), "--key-file", str(key_file))
    assert result.exit_code == 0, result.output
    return {"out": out, "key_file": key_file, "key": key, "root": root}


def test_key_new_never_overwrites(keyed_run):
    again = _cli("key", "new", "--out", str(keyed_run["key_file"]))
    assert again.exit_code == 1 and "never overwritten" in again.output
    assert "Traceback" not in again.output


def test_records_carry_the_key_id_and_never_the_key(keyed_run):
    out, key = keyed_run["out"], keyed_run["key"]
    records = [json.loads(line) for line in (out / "records.jsonl").read_text().splitlines()]
    assert len(records) == 2
    assert all(r["key_id"] == key.id and r["seed"] == 0 for r in records)
    run_info = json.loads((out / "run.json").read_text())
    assert run_info["config"]["key_commitment"] == key.commitment
    for path in out.rglob("*"):
        if path.is_file():
            text = path.read_text(errors="replace")
            assert key.hex() not in text, path
            assert str(key.derive("gravity", "period", 0)) not in text, path


def test_verify_confirms_every_record(keyed_run):
    result = _cli("verify", str(keyed_run["out"]), "--key-file", str(keyed_run["key_file"]),
                  "--commitment", keyed_run["key"].commitment)
    assert result.exit_code == 0, result.output
    assert "2 confirmed, 0 mismatched" in result.output


def test_verify_refuses_a_wrong_key_or_none_in_one_line(keyed_run):
    wrong = keyed_run["root"] / "wrong.key"
    assert _cli("key", "new", "--out", str(wrong)).exit_code == 0
    for extra in (["--key-file", str(wrong)], []):
        result = _cli("verify", str(keyed_run["out"]), *extra)
        assert result.exit_code == 1
        assert result.output.count("\n") == 1 and "error:" in result.output
        assert keyed_run["key"].id in result.output
    bad_commitment = _cli("verify", str(keyed_run["out"]), "--key-file",
                          str(keyed_run["key_file"]), "--commitment", "0" * 64)
    assert bad_commitment.exit_code == 1 and "commitment" in bad_commitment.output


@pytest.mark.parametrize("tamper", ["score", "passed", "truth"])
def test_verify_catches_a_tampered_record(keyed_run, tmp_path, tamper):
    lines = (keyed_run["out"] / "records.jsonl").read_text().splitlines()
    record = json.loads(lines[0])
    if tamper == "score":
        record["score"] = 1.0 - record["score"]
    elif tamper == "passed":
        record["passed"] = not record["passed"]
    else:
        record["truth"] = 12345.0
    lines[0] = json.dumps(record)
    (tmp_path / "records.jsonl").write_text("\n".join(lines) + "\n")
    shutil.copy(keyed_run["out"] / "run.json", tmp_path / "run.json")
    result = _cli("verify", str(tmp_path), "--key-file", str(keyed_run["key_file"]))
    assert result.exit_code == 1 and "mismatch" in result.output


def test_verify_replays_public_records_without_a_key_and_reports_hostile_lines(tmp_path):
    out = tmp_path / "public"
    played = _cli("run", "gravity", "--agent", "constant", "--tasks", "period", "--worlds",
                  "A", "--protocol", "full-obs", "--executor", "serial", "--quiet",
                  "--out", str(out))
    assert played.exit_code == 0, played.output
    with (out / "records.jsonl").open("a") as fh:
        fh.write("[" * 10_000 + "\n")  # nesting no parser should follow
        fh.write(json.dumps({"suite": "gravity", "task_id": "period", "seed": 10**400,
                             "options": {}}) + "\n")
    result = _cli("verify", str(out))
    assert result.exit_code == 1, result.output  # a run with lines no reader can use
    assert "1 confirmed, 1 mismatched, 0 missing, 1 unreadable" in result.output


def test_resuming_a_run_with_another_key_is_refused(keyed_run, tmp_path):
    out = tmp_path / "run"
    shutil.copytree(keyed_run["out"], out)
    result = _cli("run", "gravity", "--agent", "constant", "--tasks", "period,is_bound",
                  "--worlds", "A", "--protocol", "full-obs", "--executor", "serial",
                  "--quiet", "--out", str(out), "--resume")
    assert result.exit_code == 1 and "same key" in result.output


def test_the_key_comes_from_the_environment(keyed_run, tmp_path, monkeypatch):
    monkeypatch.setenv(KEY_FILE_ENV, str(keyed_run["key_file"]))
    out = tmp_path / "run"
    result = _cli("run", "gravity", "--agent", "constant", "--tasks", "period", "--worlds",
                  "A", "--protocol", "full-obs", "--executor", "serial", "--quiet",
                  "--out", str(out))
    assert result.exit_code == 0, result.output
    (record,) = [json.loads(x) for x in (out / "records.jsonl").read_text().splitlines()]
    assert record["key_id"] == keyed_run["key"].id
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "missing.key"))
    bad = _cli("run", "gravity", "--agent", "constant", "--out", str(tmp_path / "x"))
    assert bad.exit_code == 1 and "cannot read key file" in bad.output
    assert "Traceback" not in bad.output


# ---- the sandboxed interpreter never sees the key -------------------------------------------

def test_the_interpreter_environment_holds_no_key(tmp_path, monkeypatch):
    from discoverygym.sandbox import Interpreter, SandboxConfig

    monkeypatch.setenv(KEY_ENV, KEY.hex())
    monkeypatch.setenv(KEY_FILE_ENV, str(tmp_path / "eval.key"))
    interp = Interpreter({}, SandboxConfig(time_limit_s=10.0))
    try:
        result = interp.execute("import os; sorted(k for k in os.environ if 'KEY' in k)")
    finally:
        interp.close()
    assert (result.value or "").strip() == "[]", result


# ---- Harbor export: always keyed, opaque names, the key on the verifier's side ---------------

def test_harbor_export_is_keyed_with_opaque_names(tmp_path):
    from discoverygym.doors.harbor import export_tasks
    from discoverygym.doors.harbor.export import replay_solution
    from discoverygym.doors.harbor.verify import verify

    (task,) = export_tasks("gravity", tmp_path / "out", specs=[GRAVITY_A], key=KEY)
    name = task.path.name
    assert re.fullmatch(r"gravity-[0-9a-f]{16}", name)
    assert "period" not in name and "s0" not in name
    index = json.loads((tmp_path / "out" / "discoverygym-index.json").read_text())
    assert index["tasks"][name]["task_id"] == "period"
    assert index["tasks"][name]["key_id"] == KEY.id and KEY.hex() not in json.dumps(index)
    # the key: in the verifier's tests/ only, never in what the agent's image is built from
    agent_side = [p for p in (task.path / "environment").rglob("*") if p.is_file()]
    agent_side += [task.path / "instruction.md", task.path / "task.toml"]
    for path in agent_side:
        assert KEY.hex() not in path.read_text(errors="replace"), path
    conf = json.loads((task.path / "tests" / "spec.json").read_text())
    # the task's own subkey of the export key, never the export key itself
    from discoverygym.doors.harbor.keyed import task_key
    assert conf["spec"]["key"] == task_key(KEY, GRAVITY_A).hex() != KEY.hex()
    assert index["tasks"][name]["task_key_id"] == task_key(KEY, GRAVITY_A).id
    for path in task.path.rglob("*"):
        if path.is_file():
            assert KEY.hex() not in path.read_text(errors="replace"), path
    toml = (task.path / "task.toml").read_text()
    assert "period" not in toml and '"A"' not in toml
    # the verifier scores the oracle's files 1 and nothing 0
    conf = json.loads((task.path / "tests" / "spec.json").read_text())
    assert task.oracle_passed is True and replay_solution(task.path, conf).passed
    empty = tmp_path / "empty"
    (empty / "app").mkdir(parents=True)
    assert verify(conf, root=empty).passed is False
    # the attack through the files: the rebuilt public truth fails the verifier
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        (root / "app").mkdir()
        (root / "app" / "answer.json").write_text(json.dumps(_gravity_truth(GRAVITY_A.build())))
        assert verify(conf, root=root).passed is False


def test_harbor_export_gets_a_fresh_key_each_time(tmp_path):
    from discoverygym.doors.harbor import export_tasks

    (one,) = export_tasks("gravity", tmp_path / "one", specs=[GRAVITY_A], oracle="constant")
    (two,) = export_tasks("gravity", tmp_path / "two", specs=[GRAVITY_A], oracle="constant")
    key_of = [json.loads((t.path / "tests" / "spec.json").read_text())["spec"]["key"]
              for t in (one, two)]
    assert key_of[0] != key_of[1] and one.path.name != two.path.name


# ---- the verifiers door: the eval split is keyed ---------------------------------------------

def test_verifiers_eval_split_is_keyed_and_train_is_public(monkeypatch, tmp_path):
    from discoverygym.doors.verifiers.selection import split_specs

    key_file = tmp_path / "k"
    write_key_file(key_file, KEY)
    monkeypatch.setenv(KEY_FILE_ENV, str(key_file))
    evaluation = list(split_specs("gravity", "eval", {"tasks": "period", "worlds": "A"}))
    assert evaluation and all(s.key == KEY and s.key.id == KEY.id for s in evaluation)
    train = split_specs("gravity", "train", {"tasks": "period"})
    assert next(train).key is None
    # with no key configured the eval split still draws with a fresh one, which the
    # tool servers it starts find through DISCOVERYGYM_KEY_FILE (a path, not the key)
    monkeypatch.delenv(KEY_FILE_ENV)
    fresh = list(split_specs("gravity", "eval", {"tasks": "period", "worlds": "A"}))
    assert fresh[0].key is not None and fresh[0].key != KEY
    assert read_key_file(os.environ[KEY_FILE_ENV]) == fresh[0].key


# ---- the Inspect door: a keyed LLM run --------------------------------------------------------

def test_keyed_model_run_through_inspect(tmp_path):
    """`run --model` with a key: the episode the model plays is the keyed one, its record
    carries the key id, and neither the key nor the draw seed reaches Inspect's log."""
    pytest.importorskip("inspect_ai")
    from discoverygym.doors.inspect.model_run import run_model

    specs = [EpisodeSpec("gravity", "eccentricity", 0,
                         {"world": "PM1", "protocol": "full-obs", "setup": "leak-free"}, KEY)]
    (record,) = run_model("gravity", specs, model="discoverygym/expert",
                          out_dir=tmp_path / "run").records
    assert record["key_id"] == KEY.id and record["seed"] == 0
    keyed_truth = specs[0].build().replay_truth()
    assert record["truth"] == keyed_truth != EpisodeSpec(**specs[0].to_dict()).build().replay_truth()
    draw = str(KEY.derive("gravity", "eccentricity", 0))
    import zipfile

    seen = 0
    for path in (tmp_path / "run").rglob("*"):
        if not path.is_file():
            continue
        blobs = [path.read_bytes()]
        if zipfile.is_zipfile(path):  # Inspect's .eval logs are zip archives
            with zipfile.ZipFile(path) as archive:
                blobs = [archive.read(name) for name in archive.namelist()]
        for data in blobs:
            seen += KEY.id.encode() in data
            assert KEY.hex().encode() not in data and draw.encode() not in data, path
    assert seen >= 2  # the log was read: it names the key id (metadata), as the record does


# ---- every suite: a key holds out every episode that is not public by nature -----------------

def _first_per_suite() -> list[tuple[str, str, int, dict[str, Any]]]:
    """The golden sample's first episode of each suite, and of each mad world but the
    quantum one (its eigensystems take minutes per fresh draw; its packets come from the
    same world seed as the classical and fluid worlds' states)."""
    chosen: dict[str, tuple[str, str, int, dict[str, Any]]] = {}
    for _, suite, task, seed, options in _golden_tool().SAMPLE:
        if task.startswith("quantum"):
            continue
        chosen.setdefault(suite if suite != "mad" else task.split("-")[0],
                          (suite, task, seed, options))
    return list(chosen.values())


SAMPLE = _first_per_suite()


def _identity(episode) -> tuple[str, str]:
    """What the agent sees and what it is scored against."""
    return _seen(episode), json.dumps(episode.replay_truth(), default=str, sort_keys=True)


@pytest.mark.parametrize("entry", SAMPLE, ids=[f"{s}-{t}" for s, t, _, _ in SAMPLE])
def test_every_suite_keys_what_is_not_public_by_nature(entry):
    """No public rebuild (this seed or another) is the keyed episode, unless the suite
    says the episode is public by nature (calibrate and the README say so too)."""
    suite, task_id, seed, options = entry
    spec = EpisodeSpec(suite, task_id, seed, dict(options))
    public_reason = get_suite(suite).public_by_nature(spec)
    keyed = spec.with_key(KEY).build()
    try:
        candidates = [_identity(c.build()) for c in _public_candidates(spec, {seed, seed + 1})]
        if public_reason is None:
            assert _identity(keyed) not in candidates, f"{suite}/{task_id} is not keyed"
        else:  # the key changes nothing here
            assert _identity(keyed) in candidates
    finally:
        record = keyed.record()
    assert record.key_id == KEY.id and record.seed == seed


# ---- calibrate says what stays public by nature ----------------------------------------------

def test_calibrate_names_what_is_public_by_nature(tmp_path):
    from discoverygym.calibrate import CalibrationResult, tabulate

    roles = {"oracle": ["o"], "baselines": [], "no_science": [], "trivial": []}
    records = {"o": [{"task_id": t, "passed": True} for t in ("period", "is_bound")]}
    reason = get_suite("gravity").public_by_nature(
        EpisodeSpec("gravity", "period", 0, {"world": "A", "setup": "published"}))
    assert reason and get_suite("gravity").public_by_nature(GRAVITY_A) is None
    result = CalibrationResult("gravity", [0], roles, tabulate(records, roles, {}), "cmd",
                               {}, [], 0.0, {"period": reason})
    text = result.to_markdown()
    assert f"Public by nature ({reason})" in text and "`period`" in text.split("Public")[1]
    assert result.to_dict()["tasks"][1]["public_by_nature"] == reason
    assert result.public_note() in text
    cli = _cli("calibrate", "tpbench", "--seeds", "0", "--tasks", "atwood-disk-pulley",
               "--executor", "serial", "--runs", str(tmp_path / "runs"))
    assert cli.exit_code == 0, cli.output
    assert "Public by nature (a published problem" in " ".join(cli.output.split())
    assert get_suite("tpbench").public_by_nature(EpisodeSpec("tpbench", "x", 0, {}))
    assert get_suite("stargazer").public_by_nature(STARGAZER) is None
    assert get_suite("stargazer").public_by_nature(EpisodeSpec("stargazer", "real-001", 0))


def test_verify_replays_a_stored_answer_and_says_what_it_cannot_replay(tmp_path):
    """tpbench scores the answer it stored (replayed through a rebuilt episode); a
    packages score reads the files the agent left, which no record holds."""
    from discoverygym.core import make_agent, play_agent
    from discoverygym.run.plan import make_plan, plan_digest
    from discoverygym.run.verify import OK, TRUTH_ONLY, verify_run

    verdicts = []
    for suite, task, agent in (("tpbench", "atwood-disk-pulley", "reference"),
                               ("packages", "gravity-force-law", "constant")):
        spec = EpisodeSpec(suite, task, 0, {}, KEY)
        episode = spec.build()
        play_agent(make_agent(suite, agent), episode)
        run = tmp_path / suite
        run.mkdir()
        (run / "records.jsonl").write_text(episode.record(agent=agent).to_json() + "\n")
        plan = make_plan([spec])
        (run / "run.json").write_text(json.dumps({"plan": plan,
                                                  "plan_digest": plan_digest(plan)}))
        report = verify_run(run, KEY)
        assert report.verified, report
        verdicts += report.verdicts
    tpbench, packages = verdicts
    assert tpbench.status == OK, tpbench
    assert packages.status == TRUTH_ONLY and "truth confirmed" in packages.detail

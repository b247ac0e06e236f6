"""Calibration of the mad suite's classical world (issue 16): under the default
(discovery) protocol the question is a fresh preparation, scored against normal physics
rolled out from it, so the normal-physics baseline fails an altered law while the
law-aware oracle passes; `--protocol paper` keeps the published scoring (skill against
persistence). The bench script writes its table between README markers."""

from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

from discoverygym.core import get_suite, make_agent
from discoverygym.run.episode_worker import play_scripted
from discoverygym.suites.mad.baselines import AGENTS, CALIBRATION
from discoverygym.suites.mad.classical import nrmse
from testpaths import REPO

SHORT = {"t_max": 30.0}  # a short world: the same physics, cheaper trajectories
SEEDS = (0, 1, 2)


def play(law: str, agent: str, seed: int, short: bool = True, **options) -> dict:
    spec = {"suite": "mad", "task_id": f"classical-{law}", "seed": seed,
            "options": {**(SHORT if short else {}), **options}}
    record = play_scripted(spec, agent)
    assert record["error"] is None, record["error"]
    return record


def test_newtonian_passed_kappa20_under_the_paper_protocol_and_fails_it_now():
    paper = [play("kappa20", "newtonian", s, protocol="paper") for s in SEEDS]
    default = [play("kappa20", "newtonian", s) for s in SEEDS]
    assert all(r["passed"] for r in paper)  # the problem of issue 16
    assert not any(r["passed"] for r in default)
    assert all(r["options"]["protocol"] == "discovery" for r in default)
    # One meaning per field (issue 36): `protocol` is the protocol, the variant is its own.
    assert {r["protocol"] for r in paper} == {"paper"}
    assert {r["protocol"] for r in default} == {"discovery"}
    assert {r["details"]["variant"] for r in paper + default} == {"predict"}
    assert all(r["details"]["reference"].startswith("normal physics") for r in default)


def test_law_oracle_passes_where_newtonian_fails_and_on_the_normal_law():
    # The benchmark's T_max = 300. The 1/r form has no number to fit (G = 1, masses
    # told), so the oracle's error is the integrator's rounding only.
    for seed in SEEDS:
        oracle = play("inv-r", "law-oracle", seed, short=False)
        newtonian = play("inv-r", "newtonian", seed, short=False)
        assert oracle["passed"] and not newtonian["passed"], seed
        assert oracle["details"]["privileged_agent"] is True
        assert oracle["value"] < 1e-9 < newtonian["value"]
        assert newtonian["details"]["skill"] == 0.0  # normal physics IS the reference
        assert play("normal", "law-oracle", seed, short=False)["passed"]


def test_paper_protocol_scores_skill_against_persistence_as_published():
    suite = get_suite("mad")
    record = play("kappa20", "newtonian", 0, protocol="paper")
    assert record["options"]["protocol"] == "paper"
    assert record["details"]["reference"].startswith("persistence")
    world = suite.episode("classical-kappa20", seed=0, protocol="paper", **SHORT)._world
    assert world.query_horizon == 30.0  # the published setup's horizon
    truth = np.asarray(record["truth"])
    held = np.stack([world.trajectory().positions_at(30.0)] * len(truth))
    reference_error = nrmse(held, truth, 3)
    assert record["details"]["reference_error"] == pytest.approx(reference_error, rel=1e-12)
    assert record["details"]["skill"] == pytest.approx(1 - record["value"] / reference_error)
    assert record["passed"] == (record["details"]["skill"] >= 0.5)
    # The published question: the measured world's own future, masses unknown, no
    # preparation; newtonian measures and fits (six high-fidelity snapshots of 3 spheres).
    assert "preparation" not in record["details"]
    assert record["usage"]["cost"] == 180
    assert all(30.0 < q["t"] <= 60.0 for q in record["details"]["queries"])
    episode = suite.episode("classical-kappa20", seed=0, protocol="paper", **SHORT)
    assert "Masses are unknown" in episode.prompt and "masses" not in episode.workspace()[
        "world_facts"]


def test_unknown_protocol_is_refused_and_every_world_defaults_to_discovery():
    suite = get_suite("mad")
    with pytest.raises(ValueError, match="protocol"):
        suite.episodes(world="classical", protocol="loose", seeds=[0])
    for world in ("classical", "fluid", "quantum"):
        specs = suite.episodes(world=world, law="normal", seeds=[0])
        assert specs[0].options["protocol"] == "discovery"
        assert suite.episodes(world=world, protocol="paper", seeds=[0])[0].options[
            "protocol"] == "paper"
    with pytest.raises(ValueError, match="protocol"):
        suite.episodes(world="fluid", protocol="loose", seeds=[0])


def test_calibration_roles_name_registered_agents_and_the_oracle_is_privileged():
    names = [name for role in CALIBRATION.values() for name in role]
    assert set(CALIBRATION) == {"oracle", "baselines", "no_science", "trivial"}
    assert set(names) <= set(AGENTS)
    assert getattr(make_agent("mad", "law-oracle"), "privileged", False)


def test_bench_script_prints_the_calibration_table(tmp_path):
    root = REPO
    out = subprocess.run(
        [sys.executable, str(root / "bench" / "mad_calibration.py"), "--seeds", "0",
         "--laws", "normal", "--agents", "last-seen", "--workers", "1",
         "--option", "t_max=5"], capture_output=True, text=True, check=True,
        env={"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin",
             "DISCOVERYGYM_CACHE": str(tmp_path)})
    table = json.loads(out.stdout)
    entry = table["table"]["classical-normal"]["last-seen"]
    assert entry["n"] == 1 and entry["pass_rate"] == 0.0 and entry["median_error"] > 0
    assert table["options"] == {"t_max": 5}


def test_bench_script_writes_its_table_between_the_readme_markers(tmp_path):
    root = REPO
    readme = tmp_path / "README.md"
    readme.write_text("intro\n<!-- mad-calibration:classical:begin -->\nold table\n"
                      "<!-- mad-calibration:classical:end -->\nafter\n")
    env = {"PYTHONPATH": str(root / "src"), "PATH": "/usr/bin:/bin",
           "DISCOVERYGYM_CACHE": str(tmp_path)}
    command = [sys.executable, str(root / "bench" / "mad_calibration.py"), "--seeds", "0",
               "--laws", "inv-r", "--agents", "newtonian,last-seen", "--workers", "1",
               "--option", "t_max=5", "--readme", str(readme)]
    out = json.loads(subprocess.run(command, capture_output=True, text=True, check=True,
                                    env=env).stdout)
    text = readme.read_text()
    assert "old table" not in text and text.startswith("intro\n") and text.endswith("after\n")
    row = next(line for line in text.splitlines() if line.startswith("| classical-inv-r"))
    # newtonian is the reference of an altered law: it never passes; last-seen neither
    assert row.startswith("| classical-inv-r | 0.00 / ")
    assert out["meets_targets"]["classical-inv-r"]["normal_physics_fails"] is True
    assert out["written_into"]["worlds"] == ["classical"]
    # A file without the markers is refused, and left as it was.
    bare = tmp_path / "bare.md"
    bare.write_text("no markers\n")
    failed = subprocess.run([*command[:-1], str(bare)], capture_output=True, text=True,
                            env=env)
    assert failed.returncode != 0 and "markers" in failed.stderr
    assert bare.read_text() == "no markers\n"

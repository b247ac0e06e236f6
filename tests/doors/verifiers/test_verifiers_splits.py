"""The verifiers door's train/eval split cannot leak: evaluation plays the suite's
planned (published) tasks on held-out seeds, training never reaches them, and a
procedural world is never shared. Pure Python over the registry: runs without the
[rl] extra."""

from __future__ import annotations

import itertools
import json

import pytest

import toy_suite
from discoverygym.core import UnknownName, episode_key
from discoverygym.doors.verifiers import selection
from discoverygym.doors.verifiers.selection import (
    EVAL_SEED_START,
    eval_specs,
    split_specs,
    train_specs,
)

toy_suite.install()


def _keys(specs) -> set[str]:
    return {episode_key(s.suite, s.task_id, s.seed, s.options) for s in specs}


def test_eval_plays_every_planned_task_on_held_out_seeds():
    specs = eval_specs("toy", seeds="0-2")
    assert [s.seed for s in specs] == [EVAL_SEED_START, EVAL_SEED_START + 1, EVAL_SEED_START + 2]
    assert {(s.task_id, tuple(s.options.items())) for s in specs} == {("guess", (("budget", 10),))}


def test_train_and_eval_share_no_episode_and_train_stops_below_the_held_out_range(monkeypatch):
    train = list(itertools.islice(train_specs("toy"), 500))
    assert [s.seed for s in train] == list(range(500))
    assert not _keys(train) & _keys(eval_specs("toy", seeds="0-4"))
    monkeypatch.setattr(selection, "EVAL_SEED_START", 7)
    assert [s.seed for s in train_specs("toy")] == list(range(7))  # ends, never reaches 7


def test_training_draws_procedural_worlds_and_evaluation_the_published_ones():
    train = list(itertools.islice(train_specs("gravity", {"tasks": "period"}), 3))
    assert [(s.task_id, s.seed, s.options["world_seed"]) for s in train] == [
        ("period", 0, 0), ("period", 1, 1), ("period", 2, 2)]
    evaluation = eval_specs("gravity", {"tasks": "period", "worlds": "A,B"})
    assert [(s.options["world"], s.seed) for s in evaluation] == [
        ("A", EVAL_SEED_START), ("B", EVAL_SEED_START)]
    assert not any("world_seed" in s.options for s in evaluation)


@pytest.mark.parametrize("suite, raw, message", [
    ("gravity", {"tasks": "period", "worlds": "A"}, "--worlds would train on a chosen"),
    ("gravity", {"worlds": "A,PM1"}, "--worlds"),
    ("gravity", {"world-seed": "3"}, "--world-seed"),
    ("mad", {"world": "classical"}, "--world"),
    ("mad", {}, "truths do not depend on the seed"),
    ("tpbench", {"level": "1"}, "for --split eval only"),
    ("packages", {}, "for --split eval only"),
])
def test_training_never_holds_an_evaluation_world_or_a_published_truth(suite, raw, message):
    """`--split train --worlds A` trained on evaluation world A without a word; a suite
    whose tasks are a fixed bank trained on the evaluation answers."""
    with pytest.raises(ValueError, match=message):
        train_specs(suite, raw)
    with pytest.raises(ValueError, match=message):
        split_specs(suite, "train", raw)


def test_a_world_seed_that_could_be_a_training_world_is_refused_for_evaluation():
    with pytest.raises(ValueError, match="at least"):
        eval_specs("gravity", {"tasks": "period", "world-seed": "12"})
    held_out = eval_specs("gravity", {"tasks": "period", "world-seed": str(EVAL_SEED_START)})
    assert held_out and all(s.options["world_seed"] == EVAL_SEED_START for s in held_out)
    with pytest.raises(ValueError, match="own procedural worlds"):
        train_specs("gravity", {"world-seed": str(EVAL_SEED_START)})


def test_bad_selection_is_a_clear_error():
    with pytest.raises(UnknownName, match="no option --bogus"):
        eval_specs("toy", {"bogus": "1"})
    with pytest.raises(UnknownName, match="no option --bogus"):
        train_specs("toy", {"bogus": "1"})  # before the first episode is asked for
    with pytest.raises(ValueError, match="Unknown split"):
        split_specs("toy", "test")
    with pytest.raises(ValueError, match="no seeds given"):
        eval_specs("toy", seeds="")


@pytest.mark.parametrize("argv, message", [
    (["gravity", "--worlds", "A"], "--worlds would train on a chosen (evaluation) world"),
    (["tpbench"], "for --split eval only"),
])
def test_rl_eval_refuses_a_train_split_that_would_hold_evaluation_truths(argv, message):
    """`discoverygym rl eval --split train --worlds A` trained on evaluation world A
    without a word. Refused in one line, before any model is asked."""
    from typer.testing import CliRunner

    from discoverygym.cli import app

    result = CliRunner().invoke(app, ["rl", "eval", *argv, "--split", "train", "-n", "1",
                                      "--model", "m", "--base-url", "http://127.0.0.1:9/v1"])
    assert result.exit_code == 1 and message in " ".join(result.output.split())
    assert "Traceback" not in result.output


def test_the_rl_eval_summary_counts_errored_rollouts_as_zero(tmp_path):
    """A model that passes half and crashes the rest averaged 1.0 against 0.5 for one
    that answers the rest wrong: every rollout counts in the mean."""
    from discoverygym.doors.verifiers.summary import (
        read_traces,
        summarize,
        summary_lines,
    )

    passed = {"ok": True, "rewards": {"episode_score": {"score": 1.0}},
              "info": {"record": {"passed": True}}}
    crashed = {"ok": False, "rewards": {}, "info": {},
               "errors": [{"type": "ProviderError", "message": "boom\x1b[2J\nagain"}]}
    path = tmp_path / "traces.jsonl"
    path.write_text("\n".join(json.dumps({"traces": [t]}) for t in
                              (passed, crashed, passed, crashed)) + "\n")
    summary = summarize(read_traces(path))
    assert (summary.rollouts, summary.mean_reward, summary.passed, summary.errored) == (
        4, 0.5, 2, 2)
    lines = summary_lines(summary, path)
    assert lines[1].split() == ["4", "0.500", "2", "2"]
    assert lines[2] == "errored: ProviderError: boom?[2J?again"  # one line, no escapes

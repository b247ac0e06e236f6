"""`discoverygym calibrate` in `make test` for the suites whose own test modules do not
run it (gravity, tpbench and mad fluid do): a small sample of tasks on seed 0 through
the real command path, failing on any leak and on any task the oracle cannot pass. The
full tables are in each suite's README."""

from __future__ import annotations

import pytest

from discoverygym.calibrate import LEAKS, TOO_HARD, calibrate

SAMPLES = {
    # one task of every tier; the classical and nested fits run on the hard ones too
    "stargazer": "easy-000,medium-000,hard-000,real-001",
    "packages": None,  # all four packages
}


@pytest.mark.parametrize("suite", sorted(SAMPLES))
def test_a_sample_has_no_leak_and_the_oracle_passes(suite, tmp_path):
    result = calibrate(suite, seeds=[0], tasks=SAMPLES[suite], runs_dir=tmp_path,
                       executor="serial", workers=1)
    assert result.tasks, "nothing was calibrated"
    if SAMPLES[suite]:
        assert {t.task_id for t in result.tasks} == set(SAMPLES[suite].split(","))
    verdicts = {t.task_id: t.verdict for t in result.tasks}
    assert not [t for t, v in verdicts.items() if v in (LEAKS, TOO_HARD)], \
        result.to_markdown(values=True)
    assert not result.infrastructure_failures

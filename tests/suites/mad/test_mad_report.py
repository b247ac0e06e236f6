"""`discoverygym report` for a mad run: the suite's plots (error per task, predicted vs
true positions per episode, estimate vs truth, a scatter for other worlds) are in the
self-contained HTML."""

from __future__ import annotations

from discoverygym.core import get_suite
from discoverygym.report.html import build_report
from discoverygym.run import run_episodes

SMALL = {"t_max": 5.0, "n_particles": 3, "dim": 2}


def test_report_of_a_tiny_run_has_the_mad_sections(tmp_path):
    suite = get_suite("mad")
    specs = suite.episodes(world="classical", law="normal", seeds=[0, 1], **SMALL)
    result = run_episodes(specs, out_dir=tmp_path, agent="newtonian", executor="serial",
                          show_progress=False)
    assert len(result.records) == 2 and not result.failures
    html = build_report(tmp_path)
    assert "Classical: predicted vs true positions" in html
    assert "Prediction error per task" in html
    assert "Suite plots unavailable" not in html
    section = html.split("Classical: predicted vs true positions", 1)[1]
    assert section.count("<img") >= 2 and "data:image/png;base64," in section


def test_report_sections_cover_inference_and_other_worlds():
    suite = get_suite("mad")
    records = [
        {"task_id": "classical-infer-kappa", "seed": 0, "world": "classical", "metric":
         "kappa_relative_error", "value": 0.2, "answer": {"value": 12.0}, "truth": 10.0},
        {"task_id": "fluid-normal", "seed": 0, "world": "fluid", "metric": "l2", "value": 0.3,
         "answer": {"predictions": [[0.1, 0.2], [0.3, 0.5]]}, "truth": [[0.0, 0.2], [0.4, 0.4]]},
        {"task_id": "fluid-normal", "seed": 1, "world": "fluid", "metric": "l2", "value": None,
         "answer": None, "truth": [[0.0, 0.2], [0.4, 0.4]]},
    ]
    titles = [title for title, _ in suite.report_sections(records)]
    assert titles == ["Prediction error per task", "Parameter inference: estimate vs truth",
                      "fluid: predicted vs true"]
    assert all("<img" in html for _, html in suite.report_sections(records))

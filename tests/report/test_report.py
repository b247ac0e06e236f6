"""The HTML report is self-contained and renders in headless Chromium without console
errors; the plots are present in the rendered page."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest

import toy_suite
from discoverygym.core import get_suite
from discoverygym.report import write_report
from discoverygym.run import run_episodes

toy_suite.install()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    out = tmp_path_factory.mktemp("run")
    run_episodes(get_suite("toy").episodes(range(6)), out_dir=out, agent="bisect", executor="serial",
                 show_progress=False)
    return write_report(out)


def test_report_is_self_contained(report):
    text = report.read_text()
    assert "<script" not in text
    assert not re.search(r'(src|href)="(https?:)?//', text), "no network resources"
    # the suite's plot and three usage histograms, all inline
    assert text.count('src="data:image/png;base64,') == 4
    assert "answers vs truth" in text and "By task" in text and "guess" in text


def _chromium() -> str | None:
    return shutil.which("chromium") or shutil.which("chromium-browser")


def test_report_renders_in_headless_chromium(report, tmp_path):
    browser = _chromium()
    if browser is None:
        pytest.skip("headless Chromium is not installed (Debian package 'chromium')")
    shot = tmp_path / "shot.png"
    proc = subprocess.run(
        [browser, "--headless", "--no-sandbox", "--disable-gpu", "--enable-logging=stderr",
         "--v=0", f"--screenshot={shot}", "--window-size=1200,2400", f"file://{report}"],
        capture_output=True, text=True, timeout=120)
    assert shot.exists() and shot.stat().st_size > 10_000
    console_errors = [line for line in proc.stderr.splitlines()
                      if "CONSOLE" in line and ("Error" in line or "Uncaught" in line)]
    assert console_errors == []
    from PIL import Image

    img = Image.open(shot).convert("RGB")
    # The plots are drawn in the default blue: a rendered page has many such pixels.
    colors = img.getcolors(maxcolors=1 << 20) or []
    blueish = sum(n for n, (r, g, b) in colors if b > 150 and r < 120 and g < 150)
    assert blueish > 2000


def test_cells_show_compact_numbers_and_percentages(report):
    from discoverygym.report.html import _short

    assert _short(535875777090.1743) == "5.35876e+11"
    assert _short([0.1234567891, {"P_days": 12.3456789, "ok": True}]) == \
        "[0.123457, {P_days: 12.3457, ok: true}]"
    assert _short(None) == "null" and _short("text") == "text"
    text = report.read_text()
    assert "100.0 %" in text  # the bisecting agent passes every toy episode

"""`package verify-release` holds against the forged releases of issue #38 item 4: a
commitment pinned with --commitment, a keyed check of a public-seed release, a package
removed from both folder and manifest, an added empty folder, an extra file. Each is
played through the command an operator runs and fails in one line with its reason."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from typer.testing import CliRunner

from discoverygym.cli import app
from discoverygym.core.keys import new_key, write_key_file
from discoverygym.naturegym.release import ReleaseMismatch, verify_release

# each test regenerates a release (about 10-30 s): before a commit, not between edits
pytestmark = pytest.mark.slow

runner = CliRunner()
FAST = "gravity-force-law"


def _invoke(*args: str):
    return runner.invoke(app, ["package", *args])


def _error(result) -> str:
    assert result.exit_code == 1, result.output
    assert "Traceback" not in result.output
    text = " ".join(result.output.split())
    assert text.startswith("error:"), result.output
    return text


@pytest.fixture(scope="module")
def made(tmp_path_factory):
    """A keyed release of two packages and a public-seed release of one."""
    base = tmp_path_factory.mktemp("releases")
    key = new_key()
    write_key_file(base / "k.key", key)
    for args in (["--out", str(base / "keyed"), "--count", "2", "--key-file",
                  str(base / "k.key")],
                 ["--out", str(base / "public"), "--count", "1", "--seed", "3"]):
        result = _invoke("generate", FAST, *args)
        assert result.exit_code == 0, result.output
    return base, key


def _copy(made, name: str, tmp_path: Path) -> Path:
    shutil.copytree(made[0] / name, tmp_path / name)
    return tmp_path / name


def _manifest(release: Path) -> dict:
    return json.loads((release / "release.json").read_text())


def _write_manifest(release: Path, data: dict) -> None:
    (release / "release.json").write_text(json.dumps(data))


def test_the_published_commitment_is_checked(made):
    base, key = made
    ok = _invoke("verify-release", str(base / "keyed"), "--key-file", str(base / "k.key"),
                 "--commitment", key.commitment)
    assert ok.exit_code == 0, ok.output
    assert "as given by --commitment" in ok.output
    other = new_key().commitment
    text = _error(_invoke("verify-release", str(base / "keyed"), "--key-file",
                          str(base / "k.key"), "--commitment", other))
    assert "does not match the commitment given" in text


def test_a_release_made_with_another_key_fails_the_pinned_commitment(made, tmp_path):
    """A release made and manifested with key B, checked with B: consistent in itself,
    but the commitment published beforehand was A's."""
    base, key = made
    b = new_key()
    write_key_file(tmp_path / "b.key", b)
    assert _invoke("generate", FAST, "--count", "1", "--out", str(tmp_path / "rel"),
                   "--key-file", str(tmp_path / "b.key")).exit_code == 0
    assert _invoke("verify-release", str(tmp_path / "rel"), "--key-file",
                   str(tmp_path / "b.key")).exit_code == 0  # without the pin: "ok"
    text = _error(_invoke("verify-release", str(tmp_path / "rel"), "--key-file",
                          str(tmp_path / "b.key"), "--commitment", key.commitment))
    assert "commitment" in text


def test_a_keyed_check_of_a_public_seed_release_is_refused(made):
    base, key = made
    text = _error(_invoke("verify-release", str(base / "public"), "--key-file",
                          str(base / "k.key")))
    assert "public-seed release" in text and "no key made it" in text
    text = _error(_invoke("verify-release", str(base / "public"), "--commitment",
                          key.commitment))
    assert "public-seed release" in text
    assert _invoke("verify-release", str(base / "public")).exit_code == 0


def test_a_package_removed_from_folder_and_manifest_is_refused(made, tmp_path):
    base, key = made
    release = _copy(made, "keyed", tmp_path)
    data = _manifest(release)
    gone = data["packages"].pop()
    shutil.rmtree(release / gone["id"])
    _write_manifest(release, data)
    text = _error(_invoke("verify-release", str(release), "--key-file",
                          str(base / "k.key")))
    assert "count (2) is not the number of packages it lists (1)" in text
    data["count"] = 1  # the count edited too: the indices no longer run from start
    data["packages"] = [gone]
    shutil.rmtree(release / _manifest(release)["packages"][0]["id"])
    shutil.copytree(base / "keyed" / gone["id"], release / gone["id"])
    _write_manifest(release, data)
    with pytest.raises(ReleaseMismatch, match="indices"):
        verify_release(release, key)


def test_an_added_empty_folder_is_refused_inside_a_package_and_beside_them(made, tmp_path):
    base, key = made
    release = _copy(made, "keyed", tmp_path)
    pid = _manifest(release)["packages"][0]["id"]
    (release / pid / "problem" / "extra").mkdir()
    text = _error(_invoke("verify-release", str(release), "--key-file",
                          str(base / "k.key")))
    assert "an empty folder the generator never writes" in text
    (release / pid / "problem" / "extra").rmdir()
    verify_release(release, key)
    (release / "spare").mkdir()
    with pytest.raises(ReleaseMismatch, match="spare: a folder in the release that its "
                                              "manifest does not list"):
        verify_release(release, key)


def test_an_extra_file_is_refused_inside_a_package_and_beside_them(made, tmp_path):
    base, key = made
    release = _copy(made, "keyed", tmp_path)
    pid = _manifest(release)["packages"][0]["id"]
    (release / "NOTES.txt").write_text("x")
    with pytest.raises(ReleaseMismatch, match="NOTES.txt: a file in the release"):
        verify_release(release, key)
    (release / "NOTES.txt").unlink()
    (release / pid / "extra.txt").write_text("x")
    with pytest.raises(ReleaseMismatch, match="extra.txt: not generated"):
        verify_release(release, key)


@pytest.mark.parametrize("count", [3, "2", True, None])
def test_a_count_that_is_not_the_list_is_refused(made, tmp_path, count):
    base, key = made
    release = _copy(made, "keyed", tmp_path)
    data = _manifest(release)
    data["count"] = count
    _write_manifest(release, data)
    with pytest.raises(ReleaseMismatch, match="count"):
        verify_release(release, key)

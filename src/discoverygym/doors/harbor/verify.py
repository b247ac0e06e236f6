"""The verifier of an exported file task: `python -m discoverygym.doors.harbor.verify
/tests/spec.json`, run in the task's verifier image after the agent has finished.

It rebuilds the episode from its spec (suite, task, seed, options) with the same
discoverygym version, copies the files the agent left in its output folders into the
episode's own, submits the answer file's arguments through the episode's `submit` tool
and writes Harbor's reward.json (`reward` is 1 for a pass, else 0; `score` is the
episode's score) and the full record beside it. Everything the agent left is hostile:
it is read without following links, with caps on size, depth and count, and a refused
file is a failed record that says why, never a crash.

The spec holds the task's key, and a tpbench answer runs as code in this container. So
the spec is read into memory and its file removed (or, where it cannot be, made
unreadable and sealed from every sandbox like a key file) before anything of the
agent's runs; reward and record files already in the verifier folder are removed before
scoring, so an early stop never leaves a planted reward; and the record's error and
details are cut to a bound and scrubbed of the key, should answer code have echoed it."""

from __future__ import annotations

import json
import os
import re
import shutil
import stat
import sys
import tempfile
from pathlib import Path
from typing import Any

from ... import __version__
from ...core import EpisodeRecord
from ...core.bounded import UnsafeInput, clip, loads
from ...core.keys import remember_key_file
from ...core.safe_paths import Caps, UnsafePath, read_beneath, snapshot_tree, write_beneath
from ...sandbox import SandboxConfig, SandboxUnavailable, resolve_level, strength
from . import layout
from .keyed import spec_from_conf

#: The longest error, and the longest string in a record's details, that answer code
#: can put into the verifier's record (its exception text, its output).
MAX_ERROR_CHARS = 2_000
MAX_DETAIL_CHARS = 8_000
#: What the verifier writes into its folder (and removes first).
OUTPUT_NAMES = ("reward.json", "record.json", ".reward.json.tmp", ".record.json.tmp")

#: Caps on what the agent may leave in an output folder.
OUTPUT_CAPS = Caps(max_files=2_000, max_total_bytes=256 * 1024 * 1024,
                   max_file_bytes=64 * 1024 * 1024)


class Refused(ValueError):
    """Something the agent left that the verifier will not read; the message says why."""


def _inside(root: Path, container_path: str) -> Path:
    return root / container_path.lstrip("/")


def read_answer(path: Path) -> dict[str, Any]:
    """The `submit` arguments in the answer file at `path`: a regular file (no link), at
    most MAX_ANSWER_BYTES, bounded JSON holding one object."""
    try:
        raw = read_beneath(path.parent, path.name, layout.MAX_ANSWER_BYTES)
    except FileNotFoundError as exc:
        raise Refused(f"no answer file at {layout.ANSWER}") from exc
    except (UnsafePath, OSError) as exc:
        raise Refused(f"the answer file was refused: {clip(str(exc), 300)}") from exc
    try:
        value = loads(raw, what="the answer file")
    except UnsafeInput as exc:
        raise Refused(f"the answer file was refused: {clip(str(exc), 300)}") from exc
    if not isinstance(value, dict):
        raise Refused("the answer file must hold one JSON object (the submit arguments), "
                      f"not a JSON {type(value).__name__}")
    return value


def copy_outputs(src: Path, dst: str) -> list[str]:
    """Copy the regular files the agent left in `src` into the episode's folder `dst`,
    never following a link; returns what was left out and why."""
    if src.is_symlink():
        raise Refused(f"the output folder {src.name!r} is a symbolic link; nothing was read")
    if not src.is_dir():
        return []
    with tempfile.TemporaryDirectory(prefix="dg-harbor-outputs-") as tmp:
        try:
            snap = snapshot_tree(src, Path(tmp) / "copy", OUTPUT_CAPS)
        except (UnsafePath, OSError) as exc:
            raise Refused(f"the output folder was refused: {clip(str(exc), 300)}") from exc
        for rel in snap.files:
            write_beneath(dst, rel, (snap.root / rel).read_bytes())
        return [f"{path} ({why})" for path, why in snap.refused]


def sidecar_record(conf: dict[str, Any], root: Path) -> EpisodeRecord:
    """The record the episode's MCP sidecar wrote (a live task), checked to be the
    episode the task names; a missing or foreign record is a failed one."""
    spec = spec_from_conf(conf["spec"])
    path = _inside(root, conf["record"])
    try:
        data = loads(read_beneath(path.parent, path.name, 16_000_000), what="the record")
        record = EpisodeRecord.from_dict(data)
        if (record.suite, record.task_id, record.seed) != (spec.suite, spec.task_id, spec.seed):
            raise Refused("the record is of another episode")
        return record
    except (OSError, UnsafePath, UnsafeInput, Refused, TypeError, ValueError) as exc:
        episode = spec.build()
        episode.end()
        return episode.record(agent="harbor", error="no usable record from the episode's "
                              f"sidecar: {clip(str(exc), 300)}")


def verify(conf: dict[str, Any], *, root: Path = Path("/")) -> EpisodeRecord:
    """Score the files under `root` (the verifier container's root, or a stand-in) for
    the episode `conf["spec"]` names. Never raises for anything the agent left."""
    if conf.get("record"):
        return scrub(sidecar_record(conf, root), conf["spec"].get("key"))
    spec = spec_from_conf(conf["spec"])
    episode = spec.build()
    problems: list[str] = []
    rw = episode.sandbox_dirs().get("rw", [])
    try:
        for folder, target in zip(conf.get("outputs", []), rw, strict=False):
            left_out = copy_outputs(_inside(root, folder), str(target))
            if left_out:
                problems.append("left out of the outputs: " + clip("; ".join(left_out), 300))
        if conf.get("answer"):
            args = read_answer(_inside(root, conf["answer"]))
        else:
            args = {}
        result = episode.call("submit", args)
        if result.is_error:
            problems.append(f"the submission was refused: {clip(result.text, 300)}")
    except Refused as exc:
        problems.append(str(exc))
    if not episode.done:
        episode.end()
    reason = "; ".join(problems) or None
    record = episode.record(agent="harbor", error=reason)
    if reason and reason not in (record.error or ""):  # the suite's own reason came first
        record.error = f"{record.error}; {reason}"
    return scrub(record, conf["spec"].get("key"))


def scrub(record: EpisodeRecord, secret_hex: str | None) -> EpisodeRecord:
    """Cut the record's error and every string in its details to a bound, and replace
    the key (hex, either case) wherever it shows: answer code may have read it and
    raised with it, and the record leaves the verifier."""
    secret = re.compile(re.escape(secret_hex), re.IGNORECASE) if secret_hex else None

    def clean(value: Any, limit: int) -> Any:
        if isinstance(value, str):
            text = secret.sub("[redacted]", value) if secret else value
            return clip(text, limit)
        if isinstance(value, dict):
            return {clean(k, 200): clean(v, limit) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [clean(v, limit) for v in value]
        return value

    if record.error is not None:
        record.error = clean(record.error, MAX_ERROR_CHARS)
    record.details = clean(record.details, MAX_DETAIL_CHARS)
    if secret is not None and isinstance(record.answer, str | dict | list):
        record.answer = clean(record.answer, 1 << 20)
    return record


def clear_outputs(logs: Path) -> None:
    """Remove what a reward and record written before this verifier would be (planted by
    the agent, or left by an earlier run), never following a link: if the verifier
    stops early, no reward is better than someone else's."""
    for name in OUTPUT_NAMES:
        path = logs / name
        try:
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink(missing_ok=True)
        except OSError as exc:
            print(f"warning: could not remove {str(path)!r}: {exc}", file=sys.stderr)


def take_spec(path: Path) -> dict[str, Any]:
    """The spec, read into memory; its file is removed before any answer code runs (it
    holds the task's key). Where it cannot be removed (a read-only folder) it is made
    unreadable to others and sealed from every sandbox, as a key file is."""
    conf = json.loads(path.read_text())
    remember_key_file(path)
    try:
        path.unlink()
    except OSError:
        try:
            os.chmod(path, 0)
        except OSError as exc:
            print(f"warning: the spec {str(path)!r} stays on disk ({exc}); it is sealed "
                  "from the sandbox", file=sys.stderr)
    return conf


def close_logs(logs: Path) -> None:
    """Make Harbor's verifier folder writable by this process only, before anything of
    the agent's runs: a sandboxed answer runs as a uid of its own (or sees no host
    folder at all) and must not be able to write or replace the reward. Harbor may
    hand the folder over open to everyone (0777)."""
    logs.mkdir(parents=True, exist_ok=True)
    try:
        os.chmod(logs, stat.S_IMODE(os.stat(logs).st_mode) & ~0o022)
    except OSError as exc:  # not ours to change: say so, score anyway (see write_reward)
        print(f"warning: could not close the verifier folder {str(logs)!r} to other "
              f"users: {exc}", file=sys.stderr)


def write_reward(record: EpisodeRecord, logs: Path) -> None:
    """record.json (the whole record, reason and `details["isolation"]` included), then
    reward.json, last: what Harbor reads (numbers only, so the sandbox level is
    `isolation_strength`: 4 bubblewrap, 3 unshare, 2 rlimits-uid, 1 rlimits-only).
    Both are written whole and renamed into place, in a folder no sandboxed process
    can write (close_logs), after every process of the agent's has ended (each
    sandboxed run is killed, all of it, before it returns)."""
    logs.mkdir(parents=True, exist_ok=True)
    level = record_isolation(record)
    record.details["isolation"] = level
    reward = {"reward": 1.0 if record.passed else 0.0, "score": float(record.score),
              "isolation_strength": strength(level)}
    for name, text in (("record.json", record.to_json() + "\n"),
                       ("reward.json", json.dumps(reward) + "\n")):
        tmp = logs / f".{name}.tmp"
        tmp.unlink(missing_ok=True)
        tmp.write_text(text)
        tmp.replace(logs / name)


def record_isolation(record: EpisodeRecord) -> str:
    """The sandbox level the episode's scoring ran at (the suite's own where it ran
    agent code, else this host's)."""
    level = record.details.get("isolation")
    if isinstance(level, str) and level:
        return level
    try:
        return resolve_level(SandboxConfig())
    except SandboxUnavailable:
        return "unavailable"


def score(conf: dict[str, Any], *, root: Path = Path("/"), logs: Path | None = None
          ) -> EpisodeRecord:
    """Close the verifier folder, score what the agent left, then write the record and
    the reward (last)."""
    logs = logs or Path(conf.get("logs", layout.VERIFIER_LOGS))
    close_logs(logs)
    clear_outputs(logs)
    record = verify(conf, root=root)
    write_reward(record, logs)
    return record


def verify_task(spec_path: Path, *, root: Path = Path("/")) -> EpisodeRecord:
    """What `test.sh` runs: take the spec (read, then removed), score, write the reward."""
    conf = take_spec(spec_path)
    if conf.get("discoverygym_version") != __version__:
        print(f"warning: the task was exported with discoverygym "
              f"{conf.get('discoverygym_version')}, this is {__version__}", file=sys.stderr)
    return score(conf, root=root)


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    record = verify_task(Path(args[0] if args else layout.SPEC))
    print(f"discoverygym verdict: passed={record.passed} score={record.score:.6g} "
          f"error={record.error or '-'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

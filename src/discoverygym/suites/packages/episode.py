"""A package as an episode: the agent reads `problem/`, writes outputs, asks for
evaluations, and is scored by its best attempt against the published SOTA."""

from __future__ import annotations

import base64
import binascii
import math
import os
import shutil
import tempfile
import weakref
from pathlib import Path
from typing import Any

from ...core import Budget, Episode, Score, ToolInputError, ToolResult, ToolSpec
from ...core.bounded import quote
from ...core.safe_paths import (
    Caps,
    UnsafePath,
    read_beneath,
    split_relative,
    walk_beneath,
    write_beneath,
)
from ...naturegym.format.evaluator_runner import Evaluation, find_metric
from ...naturegym.format.package import Package
from ...naturegym.format.scoring import FAILED_G, clip_g, clipped_task_score
from . import validity
from .service import BudgetExpired, EvaluationService, OutputsRefused

#: Scoring rules. "discoverygym" (the default): the outputs left behind are the answer
#: (they are evaluated once more at `submit`, as every door of discoverygym hands in
#: what is in OUTPUT_DIR), and an evaluation that measured no instance is no submission
#: (not completed). "naturebench": their rules exactly: only the evaluations the agent
#: asked for count (none: no score, g = -1), and any evaluation that ran is a score,
#: even one where every instance failed (g = -1, scored).
SCORING_PROTOCOLS = ("discoverygym", "naturebench")
#: Attempts kept in a record's history (each a few numbers; raw scores are not kept).
MAX_ATTEMPTS_KEPT = 500

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_READ_CHARS = 20_000
MAX_ACTIONS_LOGGED = 300

PROMPT = """You are working on a research task. Its full description follows (problem/README.md).

{readme}

Your data is in the read-only directory DATA_DIR (the task's problem/ folder). Write your
outputs under OUTPUT_DIR, as the output format above says, with the `write_file` tool
(paths relative to OUTPUT_DIR); in the python tool the variables DATA_DIR and OUTPUT_DIR
hold the two folders' paths. `read_file` and `list_files` read
DATA_DIR (prefix "data:") or OUTPUT_DIR (prefix "output:"). `evaluate` scores your current
outputs and reports, per dataset, how you compare with the best published result
(g = 0 matches it, g > 0 beats it). Your best evaluation is your result; if you never
evaluate, your final outputs are evaluated when you call `submit`. You have {runtime}
of solve time (paused while evaluating)."""

SPLIT_NOTE = """

Feedback and score are separate. `evaluate` scores only the development datasets
({development}). Your result is computed once, when you call `submit` (or when the
time is up), on the evaluation datasets ({evaluation}), whose scores you never see
before: write outputs for every dataset."""

NATUREBENCH_NOTE = """

Each dataset's folder is both DATA_DIR/data/<dataset> and DATA_DIR/<dataset>, so a
run.py written to NatureBench's template works unchanged. Scoring follows NatureBench's rules: only the evaluations you ask for count. If you
never call `evaluate`, you have no score (g = -1), whatever your outputs hold."""


def _link_or_copy_tree(src: Path, dst: Path, *, instances_at_top: bool = False) -> None:
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link)
    # NatureBench's run.py template reads DATA_DIR/<instance> (their DATA_DIR is
    # problem/data); ours is problem/. Under their protocol each instance folder of
    # data/ also appears one level up (the same files, hard-linked), so both layouts
    # work. Only then: an export that copies DATA_DIR (Harbor) would carry it twice. A
    # name that is already taken (README.md, data) is left as it is.
    data = dst / "data"
    if instances_at_top and data.is_dir() and not data.is_symlink():
        for instance in sorted(data.iterdir()):
            if instance.is_dir() and not instance.is_symlink() \
                    and not (dst / instance.name).exists():
                shutil.copytree(instance, dst / instance.name, copy_function=link)
    # Directories read-only (no files added or removed). Files are not chmod-ed: a hard
    # link shares its mode with the package's own file; the sandbox mounts DATA_DIR
    # read-only for agent code.
    for path in [dst, *dst.rglob("*")]:
        if path.is_dir():
            path.chmod(0o555)


def _why(exc: Exception, path: str) -> str:
    """A short reason for the agent (UnsafePath names the path itself)."""
    if isinstance(exc, OSError):
        return f"{quote(path)}: {exc.strerror or type(exc).__name__}"
    return str(exc)


def _remove_tree(root: Path) -> None:
    for top, dirs, _files in os.walk(root):
        for name in dirs:  # DATA_DIR's folders are read-only
            path = Path(top) / name
            if not path.is_symlink():
                path.chmod(0o755)
    shutil.rmtree(root, ignore_errors=True)


def _spec(name: str, description: str, properties: dict[str, Any],
          required: list[str]) -> ToolSpec:
    return ToolSpec(name, description, {"type": "object", "properties": properties,
                                        "required": required, "additionalProperties": False})


def _evaluator_python(package: Package, options: dict[str, Any]) -> str | None:
    """The evaluator's interpreter: discoverygym's (the default, "host"), or the
    package's own environment ("package", or "naturebench-base" for theirs with their
    base image's packages), built once and cached (environment.py)."""
    choice = options.get("environment") or "host"
    if choice == "host":
        return None
    from .environment import NAMED_ENVIRONMENTS, ensure_environment

    if choice != "package" and choice not in NAMED_ENVIRONMENTS:
        raise ValueError(f"Unknown environment {choice!r}; one of host, package, "
                         f"{', '.join(NAMED_ENVIRONMENTS)}.")
    env = ensure_environment(package, base=None if choice == "package" else choice)
    return str(env.python)


class PackageEpisode(Episode):
    def __init__(self, package: Package, *, seed: int = 0, options: dict[str, Any]) -> None:
        protocol = options.get("protocol") or "discoverygym"
        if protocol not in SCORING_PROTOCOLS:
            raise ValueError(f"Unknown scoring protocol {protocol!r}; one of "
                             f"{', '.join(SCORING_PROTOCOLS)}.")
        # The record names the protocol only when it is not the default (older records
        # and the default's stay as they were).
        super().__init__(suite="packages", task_id=package.case_id, seed=seed, options=options,
                         protocol=None if protocol == "discoverygym" else protocol)
        self._protocol = protocol
        self._package = package
        self._tmp = Path(tempfile.mkdtemp(prefix="dg-package-"))
        self._output_dir = self._tmp / "output"
        self._output_dir.mkdir()
        # The agent works on a private copy of problem/ (hard links where possible), so
        # no path it sees leads back to the package and its evaluation/ folder.
        self._data_dir = self._tmp / "problem"
        _link_or_copy_tree(package.problem_dir, self._data_dir,
                           instances_at_top=protocol == "naturebench")
        self._service = EvaluationService(package, self._output_dir, self._tmp / "attempts.sqlite",
                                          total_s=options.get("time_limit_s"),
                                          python=_evaluator_python(package, options))
        # What the episode spends: the solve time (the timer's budget, run down by the
        # clock) and the evaluations asked for (counted, not limited: the time is).
        self._add_budget(self._service.timer.budget)
        self._evaluations = self._add_budget(Budget("submissions"))
        self._last_evaluation: dict[str, Any] | None = None
        # What the agent asked the file tools for (validity checks and the grader).
        self._actions: list[dict[str, Any]] = []
        self._refusals: list[str] = []  # evaluations refused for links, FIFOs, ...
        self._final_eval: Evaluation | None = None  # packages with a split: the held-out run
        self._final_error: str | None = None
        # An episode dropped without record() must not leave its folder behind.
        self._cleanup = weakref.finalize(self, _remove_tree, self._tmp)
        self._add_tool(_spec("write_file", "Write a file under OUTPUT_DIR: text, or binary "
                             "content (e.g. a .npy array) given as base64 with "
                             "encoding='base64'.",
                             {"path": {"type": "string"}, "content": {"type": "string"},
                              "encoding": {"type": "string", "enum": ["utf-8", "base64"]}},
                             ["path", "content"]), self._write_file)
        self._add_tool(_spec("read_file", "Read a text file: 'data:<path>' in DATA_DIR or "
                             "'output:<path>' in OUTPUT_DIR.", {"path": {"type": "string"}},
                             ["path"]), self._read_file)
        self._add_tool(_spec("list_files", "List files: 'data:' or 'output:' (optionally with a "
                             "subdirectory).", {"path": {"type": "string"}}, ["path"]),
                       self._list_files)
        self._add_tool(_spec("evaluate", "Score the current outputs against the published "
                             "state of the art.", {}, []), self._evaluate)
        self._add_tool(_spec("submit", "End the task: your current outputs are evaluated "
                             "once more, and your best evaluation is your result.", {}, []),
                       self._submit)

    # ---- what the agent sees -------------------------------------------------------
    @property
    def prompt(self) -> str:
        minutes = self._service.timer.total_s / 60
        # No folder path in the prompt: they are random temporary names, and the prompt
        # (a Gym observation) must be the same for the same seed.
        text = PROMPT.format(readme=(self._package.problem_dir / "README.md").read_text(),
                             runtime=f"{minutes:g} minutes")
        if self._package.has_split:
            text += SPLIT_NOTE.format(
                development=", ".join(self._package.split_names("development")),
                evaluation=", ".join(self._package.split_names("evaluation")))
        elif self._protocol == "naturebench":
            text += NATUREBENCH_NOTE
        return text

    def workspace(self) -> dict[str, Any]:
        return {"DATA_DIR": str(self._data_dir), "OUTPUT_DIR": str(self._output_dir),
                "task_name": self._package.task_name,
                "instances": [i.name for i in self._package.instances],
                "development_instances": self._package.split_names("development"),
                "time_remaining_s": self._service.timer.remaining()}

    def budget_left(self) -> float | None:
        # Whole seconds: the solve time's unit, and the same figure for two plays of
        # the same actions (Gymnasium's check_env compares them).
        return float(math.ceil(self._service.timer.remaining()))

    def calibration_outputs(self) -> dict[str, bytes]:
        """The package's reference submission as {path under OUTPUT_DIR: bytes}: its
        `evaluation/reference_submission/`, else its ground truth (which uses the output
        file names). For the privileged oracle agent only: no tool or view reaches it."""
        ref = self._package.evaluation_dir / "reference_submission"
        source = ref if ref.is_dir() else self._package.evaluation_dir / "ground_truth"
        return {str(p.relative_to(source)): p.read_bytes()
                for p in sorted(source.rglob("*")) if p.is_file() and not p.is_symlink()}

    def sandbox_python(self) -> str | None:
        """With `environment` package or naturebench-base, the agent's code runs in the
        package's environment too, as in NatureBench's task image."""
        return self._service.python

    def sandbox_dirs(self) -> dict[str, list[str]]:
        """DATA_DIR read-only and OUTPUT_DIR writable in the agent's interpreter."""
        return {"ro": [str(self._data_dir)], "rw": [str(self._output_dir)]}

    # ---- tools -----------------------------------------------------------------------
    def _note(self, tool: str, path: str, **extra: Any) -> None:
        if len(self._actions) < MAX_ACTIONS_LOGGED:
            self._actions.append({"tool": tool, "path": path[:300], **extra})

    def _split_spec(self, spec: str, *, for_write: bool = False) -> tuple[Path, str]:
        """(base directory, path beneath it) for a tool's 'data:'/'output:' path."""
        if for_write:
            return self._output_dir, spec.removeprefix("output:")
        if spec.startswith("data:"):
            return self._data_dir, spec[5:]
        if spec.startswith("output:"):
            return self._output_dir, spec[7:]
        raise ToolInputError("Paths start with 'data:' (DATA_DIR) or 'output:' (OUTPUT_DIR). "
                             "Nothing was charged.")

    def _write_file(self, args: dict[str, Any]) -> ToolResult:
        self._note("write_file", args["path"], bytes=len(args["content"]))
        if args.get("encoding") == "base64":
            try:
                content = base64.b64decode(args["content"], validate=True)
            except binascii.Error as exc:
                raise ToolInputError(f"content is not valid base64 ({exc}). Nothing was "
                                     "written.") from exc
        else:
            content = args["content"].encode()
        if len(content) > MAX_FILE_BYTES:
            raise ToolInputError("Files are limited to 8 MiB. Nothing was written.")
        if not args["path"].strip() or args["path"].endswith("/"):
            raise ToolInputError("Give a file path relative to OUTPUT_DIR, e.g. "
                                 "'system_1/answer.json'.")
        base, rel = self._split_spec(args["path"], for_write=True)
        # Beneath OUTPUT_DIR's descriptor, no link followed: agent code may have made any
        # component a link, or swap one in while this call runs.
        try:
            write_beneath(base, rel, content)
        except (UnsafePath, OSError) as exc:
            raise ToolInputError("Cannot write: "
                                 f"{_why(exc, args['path'])}. "
                                 "Nothing was written.") from None
        return ToolResult(f"wrote {len(content)} bytes to {'/'.join(split_relative(rel))}")

    def _read_file(self, args: dict[str, Any]) -> ToolResult:
        self._note("read_file", args["path"])
        base, rel = self._split_spec(args["path"])
        try:
            data = read_beneath(base, rel, MAX_READ_CHARS * 4 + 4, head=True)
        except FileNotFoundError:
            raise ToolInputError(f"No file {quote(args['path'])}.") from None
        except (UnsafePath, OSError) as exc:
            raise ToolInputError("Cannot read: "
                                 f"{_why(exc, args['path'])}.") from None
        text = data.decode(errors="replace")
        if len(text) > MAX_READ_CHARS:
            text = text[:MAX_READ_CHARS] + "\n[truncated]"
        return ToolResult(text)

    def _list_files(self, args: dict[str, Any]) -> ToolResult:
        self._note("list_files", args["path"])
        base, rel = self._split_spec(args["path"])
        try:
            entries = list(walk_beneath(base, Caps(max_files=5000), sub=rel))
        except FileNotFoundError:
            raise ToolInputError(f"No directory {quote(args['path'])}.") from None
        except (UnsafePath, OSError) as exc:
            raise ToolInputError("Cannot list: "
                                 f"{_why(exc, args['path'])}.") from None
        files = [e.path if e.kind == "file" else f"{e.path} ({e.kind}: evaluate refuses it)"
                 for e in entries if e.kind != "directory"][:500]
        return ToolResult("\n".join(files) or "(empty)", data={"files": files})

    def _evaluate_outputs(self) -> dict[str, Any]:
        """One evaluation of a snapshot of OUTPUT_DIR (regular files only, taken without
        following links); the service keeps the best attempt's snapshot."""
        try:
            result = self._service.evaluate()
        except OutputsRefused as exc:
            self._refusals.append(str(exc)[:500])
            self._note("evaluate", "", refused=str(exc)[:300])
            raise
        self._note("evaluate", "", attempt=result["attempt"], score=result["score"])
        return result

    def _evaluate(self, args: dict[str, Any]) -> ToolResult:
        try:
            result = self._evaluate_outputs()
        except BudgetExpired as exc:
            raise ToolInputError(f"No evaluation: {exc}.") from exc
        except OutputsRefused as exc:
            raise ToolInputError(str(exc)) from None
        self._evaluations.charge(1)
        lines = [f"attempt {result['attempt']}: " + (
            f"task score g = {result['score']:+.4f}" if result["ok"]
            else f"evaluation error: {result['error']}")]
        for name, g in result["g"].items():
            raw = result["raw_scores"].get(name, {})
            lines.append(f"  {name}: g = {g:+.4f}  {raw}")
        best = result["best_so_far"]
        if best:
            lines.append(f"best so far: attempt {best['attempt']}, g = {best['score']:+.4f}")
        return ToolResult("\n".join(lines), data=result)

    def _submit(self, args: dict[str, Any]) -> ToolResult:
        self._conclude()
        return ToolResult("Finished. Your result is being computed.")

    def _conclude(self) -> None:
        """The end of the solve: with a split, the one evaluation on held-out instances;
        without, the final outputs are evaluated once more (time permitting)."""
        if self._package.has_split:
            try:
                self._final_eval = self._service.final_evaluation()
            except OutputsRefused as exc:
                self._refusals.append(str(exc)[:500])
                self._final_error = str(exc)[:500]
        elif self._protocol == "naturebench":
            pass  # their rule: no evaluation asked for, no score
        elif self._service.timer.remaining() > 0:
            try:
                self._last_evaluation = self._evaluate_outputs()
            except (OutputsRefused, BudgetExpired):
                self._last_evaluation = None
        best = self._service.log.best()
        self._finish({"best_attempt": best.number if best else None})

    # ---- scoring -----------------------------------------------------------------------
    def _metric_name(self) -> str:
        return "g"

    def _before_record(self) -> None:
        if not self.answered:  # without `submit` the outputs still count
            self._conclude()
        self._service.timer.pause()  # the solve is over: the record states its time

    def _release(self) -> None:
        self._service.close()
        self._cleanup()

    def _score(self, answer: Any) -> Score:
        best = self._service.log.best()
        attempts = self._service.log.attempts()
        split = self._package.has_split
        scored = self._package.scored_instances("evaluation" if split else None)
        details: dict[str, Any] = {
            "attempts": len(attempts), "domain": self._package.domain,
            # a public package's truths can be rebuilt from its seed: no evaluation
            "public": self._package.public,
            "split": ({"development": self._package.split_names("development"),
                       "evaluation": self._package.split_names("evaluation")} if split
                      else "none: feedback and score on the same instances (published layout)"),
            "skipped_instances": [i.name for i in self._package.instances
                                  if i.sota in (None, 0.0)],
            "sota": {i.name: i.sota for i in self._package.instances}}
        outputs = self._service.final_outputs if split else self._service.best_outputs
        findings = validity.episode_findings(
            self._package, outputs, [(f"{a['tool']} call", a["path"]) for a in self._actions])
        findings += [validity.ValidityFinding("unsafe_outputs", "OUTPUT_DIR", why)
                     for why in self._refusals[:5]]
        details["validity"] = {"findings": [f.to_dict() for f in findings],
                               "outputs": validity.summarize_outputs(outputs)}
        details["actions"] = self._actions
        details["attempt_history"] = [
            {"attempt": a.number, "ok": a.ok, "aggregate_g": a.score if a.ok else None,
             "instance_g": a.g if a.ok else None,
             "error": a.error[:300] if a.error else None, "duration_s": a.duration_s}
            for a in attempts[:MAX_ATTEMPTS_KEPT]]
        if split:
            if best is not None:
                details.update(best_development_attempt=best.number,
                               development_g=best.g, development_score=best.score)
            ev = self._final_eval
            if ev is None or not ev.ok:
                error = (ev.error if ev is not None else self._final_error) or "no final evaluation"
                return Score(passed=False, score=-1.0, metric="g", value=-1.0, threshold=0.0,
                             truth=None, error=error, details={**details, "completed": False,
                                                               "g_clipped": FAILED_G})
            g, raw, score = ev.g, ev.raw, ev.score
        else:
            if best is None:
                errors = [a.error for a in attempts if a.error]
                error = errors[-1] if errors else (self._refusals[-1] if self._refusals
                                                   else "no successful evaluation")
                return Score(passed=False, score=-1.0, metric="g", value=-1.0, threshold=0.0,
                             truth=None, error=error, details={**details, "completed": False,
                                                               "g_clipped": FAILED_G})
            g, raw, score = best.g, best.raw, best.score
            details["best_attempt"] = best.number
        # Completed: the evaluator measured at least one scored instance (an evaluation
        # in which every output was missing or malformed is no submission).
        measured = [i.name for i in scored
                    if isinstance(raw.get(i.name), dict)
                    and find_metric(raw[i.name], i.metric) is not None]
        # `value` keeps the published g; `score` (what run summaries, the leaderboard and
        # the reports average) is g_clipped, so one wild instance cannot swamp a mean.
        g_clipped = clipped_task_score(g.values()) if g else clip_g(score)
        # NatureBench: an evaluation that ran is a score, even if nothing was measured.
        completed = bool(measured) or self._protocol == "naturebench"
        details.update(completed=completed, instance_g=g, raw_scores=raw,
                       instance_g_clipped={k: clip_g(v) for k, v in g.items()},
                       g_clipped=g_clipped, surpass=score > 0.1)
        error = None
        if not completed:
            reasons = sorted({str(v.get("error")) for v in raw.values()
                              if isinstance(v, dict) and v.get("error")})
            error = "no instance was measured" + (f": {'; '.join(reasons)[:300]}"
                                                  if reasons else "")
        return Score(passed=score >= 0.0, score=g_clipped, metric="g", value=score,
                     threshold=0.0, truth=None, error=error, details=details)

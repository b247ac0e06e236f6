"""A package as an episode: the agent reads `problem/`, writes outputs, asks for
evaluations, and is scored by its best attempt against the published SOTA."""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import tempfile
from pathlib import Path
from typing import Any

from ...core import Episode, Score, ToolInputError, ToolResult, ToolSpec
from . import validity
from .package import Package
from .service import BudgetExpired, EvaluationService

MAX_FILE_BYTES = 8 * 1024 * 1024
MAX_READ_CHARS = 20_000
MAX_ACTIONS_LOGGED = 300

PROMPT = """You are working on a research task. Its full description follows (problem/README.md).

{readme}

Your data is in the read-only directory DATA_DIR = {data_dir} (the task's problem/ folder).
Write your outputs under OUTPUT_DIR = {output_dir}, as the output format above says, with
the `write_file` tool (paths relative to OUTPUT_DIR). `read_file` and `list_files` read
DATA_DIR (prefix "data:") or OUTPUT_DIR (prefix "output:"). `evaluate` scores your current
outputs and reports, per dataset, how you compare with the best published result
(g = 0 matches it, g > 0 beats it). Your best evaluation is your result; if you never
evaluate, your final outputs are evaluated when you call `submit`. You have {runtime}
of solve time (paused while evaluating)."""


def _link_or_copy_tree(src: Path, dst: Path) -> None:
    def link(a: str, b: str) -> None:
        try:
            os.link(a, b)
        except OSError:
            shutil.copy2(a, b)

    shutil.copytree(src, dst, copy_function=link)
    # Directories read-only (no files added or removed). Files are not chmod-ed: a hard
    # link shares its mode with the package's own file; the sandbox mounts DATA_DIR
    # read-only for agent code.
    for path in [dst, *dst.rglob("*")]:
        if path.is_dir():
            path.chmod(0o555)


def _spec(name: str, description: str, properties: dict[str, Any],
          required: list[str]) -> ToolSpec:
    return ToolSpec(name, description, {"type": "object", "properties": properties,
                                        "required": required, "additionalProperties": False})


class PackageEpisode(Episode):
    def __init__(self, package: Package, *, seed: int = 0, options: dict[str, Any]) -> None:
        super().__init__(suite="packages", task_id=package.case_id, seed=seed, options=options)
        self._package = package
        self._tmp = Path(tempfile.mkdtemp(prefix="dg-package-"))
        self._output_dir = self._tmp / "output"
        self._output_dir.mkdir()
        # The agent works on a private copy of problem/ (hard links where possible), so
        # no path it sees leads back to the package and its evaluation/ folder.
        self._data_dir = self._tmp / "problem"
        _link_or_copy_tree(package.problem_dir, self._data_dir)
        self._service = EvaluationService(package, self._output_dir, self._tmp / "attempts.sqlite",
                                          total_s=options.get("time_limit_s"))
        self._last_evaluation: dict[str, Any] | None = None
        # What the agent asked the file tools for (validity checks and the grader).
        self._actions: list[dict[str, Any]] = []
        self._best_outputs = self._tmp / "best_outputs"
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
        return PROMPT.format(readme=(self._package.problem_dir / "README.md").read_text(),
                             data_dir=self._data_dir, output_dir=self._output_dir,
                             runtime=f"{minutes:g} minutes")

    def workspace(self) -> dict[str, Any]:
        return {"DATA_DIR": str(self._data_dir), "OUTPUT_DIR": str(self._output_dir),
                "task_name": self._package.task_name,
                "instances": [i.name for i in self._package.instances],
                "time_remaining_s": self._service.timer.remaining()}

    def budget_left(self) -> float | None:
        return self._service.timer.remaining()

    def sandbox_dirs(self) -> dict[str, list[str]]:
        """DATA_DIR read-only and OUTPUT_DIR writable in the agent's interpreter."""
        return {"ro": [str(self._data_dir)], "rw": [str(self._output_dir)]}

    # ---- tools -----------------------------------------------------------------------
    def _note(self, tool: str, path: str, **extra: Any) -> None:
        if len(self._actions) < MAX_ACTIONS_LOGGED:
            self._actions.append({"tool": tool, "path": path[:300], **extra})

    def _resolve(self, spec: str, *, for_write: bool = False) -> Path:
        if for_write:
            base, rel = self._output_dir, spec.removeprefix("output:")
        elif spec.startswith("data:"):
            base, rel = self._data_dir, spec[5:]
        elif spec.startswith("output:"):
            base, rel = self._output_dir, spec[7:]
        else:
            raise ToolInputError("Paths start with 'data:' (DATA_DIR) or 'output:' (OUTPUT_DIR). "
                                 "Nothing was charged.")
        target = (base / rel.lstrip("/")).resolve()
        if target != base.resolve() and base.resolve() not in target.parents:
            raise ToolInputError(f"{spec!r} points outside its directory. Nothing was charged.")
        return target

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
        target = self._resolve(args["path"], for_write=True)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(content)
        return ToolResult(f"wrote {len(content)} bytes to {target.relative_to(self._output_dir)}")

    def _read_file(self, args: dict[str, Any]) -> ToolResult:
        self._note("read_file", args["path"])
        target = self._resolve(args["path"])
        if not target.is_file():
            raise ToolInputError(f"No file {args['path']!r}.")
        text = target.read_text(errors="replace")
        if len(text) > MAX_READ_CHARS:
            text = text[:MAX_READ_CHARS] + f"\n[truncated: {len(text)} characters in all]"
        return ToolResult(text)

    def _list_files(self, args: dict[str, Any]) -> ToolResult:
        self._note("list_files", args["path"])
        target = self._resolve(args["path"])
        if not target.is_dir():
            raise ToolInputError(f"No directory {args['path']!r}.")
        files = sorted(str(p.relative_to(target)) for p in target.rglob("*") if p.is_file())
        return ToolResult("\n".join(files[:500]) or "(empty)", data={"files": files[:500]})

    def _evaluate_outputs(self) -> dict[str, Any]:
        """One evaluation of OUTPUT_DIR; a new best attempt's outputs are kept, so the
        validity checks look at the outputs that earned the score."""
        result = self._service.evaluate()
        self._note("evaluate", "", attempt=result["attempt"], score=result["score"])
        best = result["best_so_far"]
        if result["ok"] and best and best["attempt"] == result["attempt"]:
            shutil.rmtree(self._best_outputs, ignore_errors=True)
            shutil.copytree(self._output_dir, self._best_outputs)
        return result

    def _evaluate(self, args: dict[str, Any]) -> ToolResult:
        try:
            result = self._evaluate_outputs()
        except BudgetExpired as exc:
            raise ToolInputError(f"No evaluation: {exc}.") from exc
        self.usage.submissions += 1
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
        self._last_evaluation = self._evaluate_outputs() if self._service.timer.remaining() > 0 else None
        best = self._service.log.best()
        self._finish({"best_attempt": best.number if best else None})
        return ToolResult("Finished. Your best evaluation is your result.")

    # ---- scoring -----------------------------------------------------------------------
    def _metric_name(self) -> str:
        return "g"

    def _before_record(self) -> None:
        if not self.answered:
            # Without `submit` the outputs still count: evaluate them once, then score.
            try:
                self._last_evaluation = self._evaluate_outputs()
            except BudgetExpired:
                self._last_evaluation = None
            best = self._service.log.best()
            self._finish({"best_attempt": best.number if best else None})

    def _release(self) -> None:
        self._service.close()
        for path in [self._data_dir, *self._data_dir.rglob("*")]:
            if path.is_dir():
                path.chmod(0o755)
        shutil.rmtree(self._tmp, ignore_errors=True)

    def _score(self, answer: Any) -> Score:
        best = self._service.log.best()
        attempts = self._service.log.attempts()
        details = {"attempts": len(attempts), "domain": self._package.domain,
                   "skipped_instances": [i.name for i in self._package.instances
                                         if i.sota in (None, 0.0)],
                   "sota": {i.name: i.sota for i in self._package.instances}}
        outputs = self._best_outputs if best is not None else self._output_dir
        findings = validity.episode_findings(
            self._package, outputs, [(f"{a['tool']} call", a["path"]) for a in self._actions])
        details["validity"] = {"findings": [f.to_dict() for f in findings],
                               "outputs": validity.summarize_outputs(outputs)}
        details["actions"] = self._actions
        if best is None:
            errors = [a.error for a in attempts if a.error]
            return Score(passed=False, score=-1.0, metric="g", value=-1.0, threshold=0.0,
                         truth=None, error=errors[-1] if errors else "no successful evaluation",
                         details={**details, "completed": False})
        # Completed: the evaluator measured at least one scored instance (an evaluation
        # in which every output was missing or malformed is no submission).
        measured = [i.name for i in self._package.scored_instances()
                    if isinstance(best.raw.get(i.name), dict)
                    and isinstance(best.raw[i.name].get(i.metric), int | float)]
        details.update(completed=bool(measured), best_attempt=best.number, instance_g=best.g,
                       raw_scores=best.raw, surpass=best.score > 0.1)
        error = None
        if not measured:
            reasons = sorted({str(v.get("error")) for v in best.raw.values()
                              if isinstance(v, dict) and v.get("error")})
            error = "no instance was measured" + (f": {'; '.join(reasons)[:300]}"
                                                  if reasons else "")
        return Score(passed=best.score >= 0.0, score=best.score, metric="g", value=best.score,
                     threshold=0.0, truth=None, error=error, details=details)

"""Write episodes as Harbor tasks (task.toml, instruction.md, environment/, tests/,
solution/solve.sh).

A single-submit episode (`Suite.single_submit`) becomes a file task: its workspace and
read-only folders are files in the agent's image, the instruction says where to write
the `submit` arguments, and a separate verifier image (no network, the same pinned
discoverygym) rebuilds the episode from its spec and scores the files the agent left.
Only the verifier image holds the spec; the truth is never written anywhere.
Other episodes need their tools live and are written by `sidecar.py`."""

from __future__ import annotations

import copy
import json
import re
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any

from ... import __version__
from ...core import EpisodeRecord, EpisodeSpec, calibration_table, get_suite, make_agent, play_agent
from ...core.safe_paths import snapshot_tree
from . import layout
from .keyed import spec_conf

#: What the agent's image offers for computing, pinned to the versions installed here
#: (the interpreter tool's libraries).
AGENT_LIBRARIES = ("numpy", "scipy", "pandas", "sympy", "astropy")


@dataclass
class ExportedTask:
    """One written task: where, which episode, how it is played, and whether the oracle
    solution (solution/) passes through the task's own verifier."""

    path: Path
    spec: EpisodeSpec
    kind: str  # "file" or "sidecar"
    oracle: str | None = None
    oracle_passed: bool | None = None
    oracle_score: float | None = None
    notes: list[str] = field(default_factory=list)


def python_image() -> str:
    """The Docker image of this interpreter's exact version (Python's own pin)."""
    v = sys.version_info
    return f"python:{v.major}.{v.minor}.{v.micro}-slim"


def pins(names: list[str]) -> list[str]:
    """`name==version` for each distribution installed here (missing ones left out)."""
    pins = []
    for name in names:
        try:
            pins.append(f"{name}=={metadata.version(name)}")
        except metadata.PackageNotFoundError:
            continue
    return pins


def verifier_requirements(suite: str) -> list[str]:
    """discoverygym's own requirements (and those of the extra named after `suite`, where
    the package declares one), pinned to the versions installed here, so the verifier
    rebuilds the episode bit for bit."""
    extras = set(metadata.metadata("discoverygym").get_all("Provides-Extra") or ())
    wanted: list[str] = []
    for req in metadata.requires("discoverygym") or ():
        name = re.split(r"[<>=!~;\[ ]", req, maxsplit=1)[0]
        marker = req.partition(";")[2]
        if not marker or (suite in extras and f'extra == "{suite}"' in marker):
            wanted.append(name)
    return pins(sorted(set(wanted)))


# ---- the workspace as files ----------------------------------------------------------

def _jsonable(value: Any, rename: dict[str, str]) -> Any:
    """`value` as plain JSON data; host folder paths become their container paths."""
    import numpy as np

    if isinstance(value, str):
        return rename.get(value, value)
    if isinstance(value, dict):
        return {str(k): _jsonable(v, rename) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_jsonable(v, rename) for v in value]
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist(), rename)
    if isinstance(value, np.generic):
        return value.item()
    return value


def write_workspace(workspace: dict[str, Any], folder: Path, rename: dict[str, str]) -> list[str]:
    """Write the workspace variables into `folder`: DataFrames as CSV, numeric arrays as
    .npy, the rest in workspace.json, and `load_workspace.py`, which defines the same
    variables in Python. Returns the variable names."""
    import numpy as np
    import pandas as pd

    folder.mkdir(parents=True)
    plain: dict[str, Any] = {}
    loads = []
    for name, value in workspace.items():
        if not name.isidentifier():
            continue
        if isinstance(value, pd.DataFrame):
            keep_index = not isinstance(value.index, pd.RangeIndex)
            value.to_csv(folder / f"{name}.csv", index=keep_index)
            loads.append(f"{name} = pandas.read_csv(_HERE / '{name}.csv'"
                         + (", index_col=0)" if keep_index else ")"))
        elif isinstance(value, np.ndarray) and value.dtype != object:
            np.save(folder / f"{name}.npy", value, allow_pickle=False)
            loads.append(f"{name} = numpy.load(_HERE / '{name}.npy')")
        else:
            plain[name] = _jsonable(value, rename)
    (folder / "workspace.json").write_text(json.dumps(plain, indent=1, allow_nan=True) + "\n")
    (folder / "load_workspace.py").write_text(
        '"""The episode\'s workspace variables. In Python:\n'
        f'    import sys; sys.path.insert(0, "{layout.WORKSPACE}")\n'
        '    from load_workspace import *\n"""\n'
        "import json\nimport pathlib\n\nimport numpy\nimport pandas\n\n"
        "_HERE = pathlib.Path(__file__).parent\n"
        "globals().update(json.loads((_HERE / 'workspace.json').read_text()))\n"
        + "".join(line + "\n" for line in loads))
    return list(workspace)


# ---- instruction, config, images ----------------------------------------------------

def submit_schema(tools: list[dict[str, Any]]) -> dict[str, Any]:
    for tool in tools:
        if tool["function"]["name"] == "submit":
            return tool["function"].get("parameters") or {}
    raise ValueError("the episode has no submit tool")


def takes_answer(schema: dict[str, Any]) -> bool:
    """Whether `submit` carries an answer (else the outputs left behind are the answer)."""
    return bool(schema.get("properties"))


def instruction(prompt: str, variables: list[str], data: list[str], outputs: list[str],
                schema: dict[str, Any]) -> str:
    """The episode's prompt followed by how to play it with files instead of tools."""
    lines = [prompt.rstrip(), "", "---", "", "## Playing this task with files", "",
             "The tools named above are not available here: this version of the task is "
             "played with files. You get one submission, and it is final.", ""]
    if variables:
        lines += [f"- The workspace variables ({', '.join(f'`{v}`' for v in variables)}) are "
                  f"files in `{layout.WORKSPACE}/` (tables as CSV, arrays as .npy, the rest "
                  "in workspace.json). In Python, "
                  f"`import sys; sys.path.insert(0, '{layout.WORKSPACE}'); "
                  "from load_workspace import *` defines them."]
    for i, folder in enumerate(data):
        name = "DATA_DIR" if i == 0 else f"data folder {i + 1}"
        lines.append(f"- {name} is `{folder}` (read-only inputs).")
    for i, folder in enumerate(outputs):
        name = "OUTPUT_DIR" if i == 0 else f"output folder {i + 1}"
        lines.append(f"- {name} is `{folder}`: write your outputs there with ordinary file "
                     "operations (where the text above says `write_file`).")
    if takes_answer(schema):
        lines += [f"- To submit, write the arguments of the `submit` call as one JSON object "
                  f"to `{layout.ANSWER}`; it is read when you finish. It must match this "
                  "JSON schema:", "", "```json", json.dumps(schema, indent=1), "```", "",
                  "A missing or invalid answer file scores as a failure."]
    else:
        lines += ["- Your submission is what you leave in the output folder when you "
                  "finish; no answer file is needed."]
    return "\n".join(lines) + "\n"


def _toml_value(value: Any) -> str:
    """A TOML value: a JSON string, number or bool is one; arrays and tables are built."""
    if isinstance(value, list):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml_value(v)}" for k, v in value.items()) + "}"
    return json.dumps(value)


def task_toml(name: str, spec: EpisodeSpec, description: str, *, artifacts: list[Any],
              agent_timeout_s: float, extra: str = "") -> str:
    """task.toml of an exported task. The agent runs as the unprivileged user `agent`;
    the verifier in its own image with no network."""
    # the suite only: task, options and seed stay in the verifier's spec (opaque names)
    meta = {"suite": spec.suite, "discoverygym_version": __version__}
    lines = ['schema_version = "1.4"', f"artifacts = {_toml_value(artifacts)}", "",
             "[task]", f'name = "discoverygym/{name}"',
             f"description = {_toml_value(description)}",
             f"keywords = {_toml_value(['discoverygym', spec.suite])}", "", "[metadata]"]
    lines += [f"{k} = {_toml_value(v)}" for k, v in meta.items()]
    lines += ["", "[verifier]", "timeout_sec = 900.0", 'environment_mode = "separate"',
              'network_mode = "no-network"', "", "[verifier.environment]",
              'network_mode = "no-network"', "memory_mb = 4096", "",
              "[agent]", f"timeout_sec = {float(agent_timeout_s)}", 'user = "agent"', "",
              "[environment]", f'workdir = "{layout.APP}"', "cpus = 1", "memory_mb = 4096"]
    return "\n".join(lines) + "\n" + extra


def agent_dockerfile(copies: list[tuple[str, str]], writable: list[str]) -> str:
    """The agent's image: Python with the interpreter tool's libraries (pinned), an
    unprivileged user, the workspace and data folders; no discoverygym."""
    lines = [f"FROM {python_image()}",
             f"RUN pip install --no-cache-dir {' '.join(pins(list(AGENT_LIBRARIES)))}",
             "RUN useradd --create-home agent", f"WORKDIR {layout.APP}"]
    lines += [f"COPY {src} {dst}" for src, dst in copies]
    if writable:
        lines.append(f"RUN mkdir -p {' '.join(writable)} && chown agent {' '.join(writable)}")
    lines.append(f"RUN chown agent {layout.APP}")
    return "\n".join(lines) + "\n"


def verifier_dockerfile(wheel: str | None, files: list[str]) -> str:
    """The verifier's image: discoverygym at this exact version (from `wheel` where given,
    else the package index) with its requirements pinned as installed here."""
    source = f"/tmp/{wheel}" if wheel else f"discoverygym=={__version__}"
    lines = [f"FROM {python_image()}", "COPY requirements.txt /tmp/requirements.txt"]
    if wheel:
        lines.append(f"COPY {wheel} /tmp/{wheel}")
    lines += ["RUN pip install --no-cache-dir -r /tmp/requirements.txt "
              f"&& pip install --no-cache-dir --no-deps {source}",
              "WORKDIR /tests"]
    lines += [f"COPY {f} /tests/{f}" for f in files]
    return "\n".join(lines) + "\n"


TEST_SH = f"""#!/bin/sh
# Rebuild the episode from its spec, score what the agent left, write {layout.VERIFIER_LOGS}/reward.json.
exec python -m discoverygym.doors.harbor.verify {layout.SPEC}
"""


def write_tests(task_dir: Path, suite: str, conf: dict[str, Any], wheel: Path | None) -> None:
    tests = task_dir / "tests"
    tests.mkdir()
    (tests / "spec.json").write_text(json.dumps(conf, indent=1) + "\n")
    (tests / "test.sh").write_text(TEST_SH)
    (tests / "test.sh").chmod(0o755)
    (tests / "requirements.txt").write_text("\n".join(verifier_requirements(suite)) + "\n")
    if wheel is not None:
        shutil.copy2(wheel, tests / wheel.name)
    (tests / "Dockerfile").write_text(verifier_dockerfile(
        wheel.name if wheel else None, ["test.sh", "spec.json"]))


# ---- the oracle's solution ------------------------------------------------------------

def default_oracle(suite: str) -> str | None:
    """The suite's calibration oracle (its CALIBRATION table), if it names one."""
    table = calibration_table(suite) or {}
    return (table.get("oracle") or [None])[0]


@dataclass
class OracleRun:
    answer: Any  # the last accepted `submit` arguments, or None
    outputs: list[Path]  # snapshots of the episode's writable folders
    passed: bool


def play_oracle(spec: EpisodeSpec, agent_name: str, scratch: Path) -> OracleRun:
    """Play `agent_name` on a fresh episode, keeping what a file task needs to replay
    it: the arguments of its last accepted `submit` and the files it left behind."""
    episode = spec.build()
    submitted: list[Any] = []
    live_call = episode.call

    def recording_call(name: str, args: Any = None) -> Any:
        result = live_call(name, args)
        if name == "submit" and not result.is_error:
            submitted.append(copy.deepcopy(args))
        return result

    episode.call = recording_call  # type: ignore[method-assign]  # the view calls through it
    play_agent(make_agent(spec.suite, agent_name), episode)
    outputs = []
    for i, folder in enumerate(episode.sandbox_dirs().get("rw", [])):
        outputs.append(snapshot_tree(folder, scratch / f"output{i}").root)
    record = episode.record(agent=agent_name)
    return OracleRun(submitted[-1] if submitted else None, outputs, record.passed)


SOLVE_HEADER = "#!/bin/sh\n# The oracle's answer, replayed as files.\nset -e\n"


def write_solution(task_dir: Path, run: OracleRun, outputs: list[str]) -> None:
    solution = task_dir / "solution"
    solution.mkdir()
    script = [SOLVE_HEADER]
    if run.answer is not None:
        (solution / "answer.json").write_text(json.dumps(run.answer) + "\n")
        script.append(f"cp /solution/answer.json {layout.ANSWER}\n")
    for i, snapshot in enumerate(run.outputs):
        shutil.copytree(snapshot, solution / f"output{i}")
        script.append(f"mkdir -p {outputs[i]} && cp -R /solution/output{i}/. {outputs[i]}/\n")
    (solution / "solve.sh").write_text("".join(script))
    (solution / "solve.sh").chmod(0o755)


def replay_solution(task_dir: Path, conf: dict[str, Any]) -> EpisodeRecord:
    """Score solution/ with the task's own verifier, in this process: what solve.sh
    leaves in the agent's container, placed under a private root."""
    from .verify import verify

    with tempfile.TemporaryDirectory(prefix="dg-harbor-replay-") as tmp:
        root = Path(tmp)
        app = root / layout.APP.lstrip("/")
        app.mkdir(parents=True)
        solution = task_dir / "solution"
        if (solution / "answer.json").exists():
            shutil.copy2(solution / "answer.json", root / layout.ANSWER.lstrip("/"))
        for i, folder in enumerate(conf["outputs"]):
            target = root / folder.lstrip("/")
            target.mkdir(parents=True)
            if (solution / f"output{i}").exists():
                shutil.copytree(solution / f"output{i}", target, dirs_exist_ok=True)
        return verify(conf, root=root)


# ---- one task -------------------------------------------------------------------------

def export_file_task(spec: EpisodeSpec, task_dir: Path, *, oracle: str | None,
                     wheel: Path | None) -> ExportedTask:
    episode = spec.build()
    try:
        dirs = episode.sandbox_dirs()
        ro, rw = list(dirs.get("ro", [])), list(dirs.get("rw", []))
        data = [layout.data_dir(i) for i in range(len(ro))]
        outputs = [layout.output_dir(i) for i in range(len(rw))]
        rename = {str(h): c for h, c in zip(ro + rw, data + outputs, strict=True)}
        prompt = episode.prompt
        for host, container in rename.items():
            prompt = prompt.replace(host, container)
        schema = submit_schema(episode.tools())
        env = task_dir / "environment"
        env.mkdir(parents=True)
        variables = write_workspace(episode.workspace(), env / "workspace", rename)
        copies = [("workspace", layout.WORKSPACE)]
        for i, folder in enumerate(ro):
            shutil.copytree(folder, env / f"data{i}", symlinks=False)
            copies.append((f"data{i}", data[i]))
        (env / "Dockerfile").write_text(agent_dockerfile(copies, outputs))
    finally:
        episode.end()
        episode.record()  # releases the episode's temporary folders
    name = task_dir.name
    text = instruction(prompt, variables, data, outputs, schema)
    (task_dir / "instruction.md").write_text(text)
    description = f"discoverygym {spec.suite} task (file task)"
    (task_dir / "task.toml").write_text(task_toml(
        name, spec, description, artifacts=[layout.ANSWER, *outputs],
        agent_timeout_s=get_suite(spec.suite).agent_limits.time_s))
    conf = {"spec": spec_conf(spec), "discoverygym_version": __version__,
            "answer": layout.ANSWER if takes_answer(schema) else None, "outputs": outputs,
            "logs": layout.VERIFIER_LOGS}
    write_tests(task_dir, spec.suite, conf, wheel)
    task = ExportedTask(task_dir, spec, "file", oracle)
    if oracle is None:
        task.notes.append("no oracle named: solution/solve.sh does nothing")
        write_solution(task_dir, OracleRun(None, [], False), outputs)
        return task
    with tempfile.TemporaryDirectory(prefix="dg-harbor-oracle-") as scratch:
        run = play_oracle(spec, oracle, Path(scratch))
        write_solution(task_dir, run, outputs)
    replayed = replay_solution(task_dir, conf)
    task.oracle_passed, task.oracle_score = replayed.passed, replayed.score
    if not run.passed:
        task.notes.append(f"the oracle {oracle!r} fails this episode in discoverygym too")
    return task

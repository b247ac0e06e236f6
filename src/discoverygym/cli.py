"""The `discoverygym` command."""

from __future__ import annotations

import difflib
import importlib
import json
import os
import tempfile
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.markup import escape
from rich.table import Table
from rich.text import Text

from .cli_args import SEEDS_HELP, SeedsOption, console, err_console, one_line_failure
from .cli_args import key_or_exit as _key_or_exit
from .cli_args import parse_extra as _parse_extra
from .core import (
    SUITES,
    UnknownName,
    agent_table,
    available_suites,
    get_suite,
    load_plugins,
    plan_episodes,
)
from .core.escape import for_terminal
from .core.extras import extra_for, missing_module_message
from .core.grid import seed_text
from .core.seeds import parse_seeds
from .core.suite import (
    check_declared_option_names,
    check_requirements,
    rollup_labels,
)
from .doors import DOORS

app = typer.Typer(help="discoverygym: measure AI agents at real scientific work.",
                  no_args_is_help=True, add_completion=False)


def _print_version(value: bool) -> None:
    if value:
        from .core.about import version_text

        typer.echo(version_text())
        raise typer.Exit()


@app.callback()
def _root(version: Annotated[bool, typer.Option(
        "--version", is_eager=True, callback=_print_version,
        help="Print the version, the commit it was built from when known, and which "
             "extras are installed.")] = False) -> None:
    """discoverygym: measure AI agents at real scientific work."""
    # The sandbox's isolation line once per command, not once per worker process.
    from .sandbox.isolation import notices_once_per_command

    notices_once_per_command()


@app.command("list")
def list_suites(as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False):
    """List the suites with their task and episode counts."""
    rows = []
    for name, suite in available_suites().items():
        try:
            if isinstance(suite, Exception):
                raise suite
            rows.append({
                "suite": name, "available": True, "description": suite.description,
                "tasks": len(suite.tasks()), "episodes": len(suite.default_episodes()),
                "agents": list(agent_table(name)),
            })
        except ImportError as exc:  # the suite (or its agents) needs a missing extra
            rows.append({"suite": name, "available": False, "extra": extra_for(exc.name),
                         "reason": missing_module_message(exc)})
    if as_json:
        typer.echo(json.dumps(rows, indent=2))
        return
    table = Table(title="discoverygym suites")
    for col in ("suite", "tasks", "episodes", "agents", "description"):
        table.add_column(col)
    for r in rows:
        if r["available"]:
            table.add_row(for_terminal(r["suite"]), str(r["tasks"]), str(r["episodes"]),
                          for_terminal(", ".join(r["agents"]), 1000),
                          for_terminal(r["description"], 1000))
        else:
            why = (f"needs the [{r['extra']}] extra: make install-all" if r["extra"]
                   else r["reason"])
            table.add_row(for_terminal(r["suite"]), "-", "-", "-", Text(f"unavailable: {why}", style="dim"))
    console.print(table)


@app.command("tasks")
def list_tasks(suite: str,
               as_json: Annotated[bool, typer.Option("--json", help="Print JSON.")] = False):
    """List a suite's tasks."""
    try:
        s = get_suite(suite)
    except UnknownName as exc:
        raise typer.BadParameter(str(exc)) from exc
    tasks = s.tasks()
    if as_json:
        typer.echo(json.dumps([{"id": t.id, "description": t.description, "tags": t.tags}
                               for t in tasks], indent=2, default=str))
        return
    table = Table(title=f"{suite}: {len(tasks)} tasks")
    table.add_column("task")
    table.add_column("description")
    table.add_column("tags")
    for t in tasks:
        tags = ", ".join(f"{k}={v if not isinstance(v, list) else ','.join(map(str, v))}"
                         for k, v in t.tags.items())
        table.add_row(for_terminal(t.id), for_terminal(t.description, 1000),
                      for_terminal(tags, 1000))
    console.print(table)


def _command_options(ctx: typer.Context) -> list[str]:
    """The command's own option names, for "did you mean" on a misspelt one."""
    return [p.name for p in ctx.command.params if p.name and getattr(p, "opts", None)
            and any(o.startswith("--") for o in p.opts)]


def print_summary_table(summary: dict[str, Any], title: str,
                        groups: dict[str, str] | None = None) -> None:
    """Pass counts per task, or per group of tasks where `groups` maps each task to one
    (a suite's `rollup_tags`: 120 stargazer tasks read as three tiers)."""
    per_task = summary.get("per_task", {})
    rows: dict[str, dict[str, int]] = {}
    for task, entry in per_task.items():
        row = rows.setdefault(groups.get(task, "other") if groups else task,
                              {"passed": 0, "n": 0, "tasks": 0})
        row["passed"] += entry["passed"]
        row["n"] += entry["n"]
        row["tasks"] += 1
    caption = (f"{len(per_task)} tasks rolled up; summary.json has each task"
               if groups else None)
    table = Table(title=title, caption=caption)
    table.add_column("group" if groups else "task")
    if groups:
        table.add_column("tasks", justify="right")
    table.add_column("passed", justify="right")
    table.add_column("n", justify="right")
    table.add_column("rate", justify="right")
    for name, entry in rows.items():
        rate = entry["passed"] / entry["n"] if entry["n"] else 0.0
        table.add_row(for_terminal(name), *([str(entry["tasks"])] if groups else []),
                      str(entry["passed"]), str(entry["n"]), f"{rate:.0%}")
    table.add_section()
    table.add_row("[bold]all[/bold]", *([str(len(per_task))] if groups else []),
                  str(summary["n_passed"]), str(summary["n_episodes"]),
                  f"[bold]{summary['pass_rate']:.1%}[/bold]")
    console.print(table)


@app.command("run", context_settings={"allow_extra_args": True,
                                      "ignore_unknown_options": True})
def run(
    ctx: typer.Context,
    suite: Annotated[str, typer.Argument(help="Suite name (see `discoverygym list`).")],
    agent: Annotated[str | None, typer.Option(help="Scripted agent name.")] = None,
    model: Annotated[str | None, typer.Option(help="LLM via Inspect AI, e.g. openai/gpt-4o.")] = None,
    out: Annotated[Path | None, typer.Option(help="Run directory.")] = None,
    workers: Annotated[int, typer.Option(help="Parallel episodes.", min=1)] = max(1, min(4, os.cpu_count() or 1)),
    executor: Annotated[str, typer.Option(help="serial | process | ray")] = "process",
    address: Annotated[str | None, typer.Option(
        help="Ray cluster address (default: RAY_ADDRESS, else a local cluster).")] = None,
    resume: Annotated[bool, typer.Option(help="Skip episodes already in --out.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bar.")] = False,
    dry_run: Annotated[bool, typer.Option(
        help="Check the command and print how many episodes it would play; play none.")]
        = False,
    model_arg: Annotated[list[str] | None, typer.Option(
        "--model-arg", help="Model argument key=value (repeatable; with --model).")] = None,
    limit: Annotated[int | None, typer.Option(help="Run only the first N episodes (--model).")] = None,
    epochs: Annotated[int | None, typer.Option(help="Play each episode K times (--model).")] = None,
    max_connections: Annotated[int | None, typer.Option(
        help="Concurrent model requests (--model).")] = None,
    grader_model: Annotated[str | None, typer.Option(
        help="A grader model (Inspect's 'grader' role) for suites with holistic grading, "
             "e.g. tpbench (--model).")] = None,
    key_file: Annotated[Path | None, typer.Option(
        help="Key every draw with this key (`discoverygym key new`); default: "
             "DISCOVERYGYM_KEY or DISCOVERYGYM_KEY_FILE, else public draws.")] = None,
    seeds: SeedsOption = None,
):
    """Run a suite's episodes with a scripted agent (or an LLM via --model).

    Suite options follow the suite name, e.g. `--protocol budget-obs-100 --tasks period`;
    `discoverygym options SUITE` lists them. Every case the options select is played
    once per seed of `--seeds`."""
    from .run import default_out_dir
    from .run.stop import sigterm_as_interrupt

    key = _key_or_exit(key_file)

    # What can be checked without the suite's own modules (its simulators, JAX,
    # REBOUND: seconds to import) is checked first, so a mistyped command is refused
    # at once (issue 37).
    if (agent is None) == (model is None):
        console.print(f"[red]error:[/red] give exactly one of --agent NAME or --model MODEL."
                      f"{_misspelt_hint(ctx)}", soft_wrap=True)
        raise typer.Exit(1)
    if grader_model is not None and model is None:
        console.print("[red]error:[/red] --grader-model grades LLM runs; use it with --model.")
        raise typer.Exit(1)
    pool = None
    try:
        if suite not in SUITES:
            get_suite(suite)  # raises UnknownName with "did you mean"
        if agent is not None and agent not in agent_table(suite):
            close = difflib.get_close_matches(agent, list(agent_table(suite)), n=1)
            raise UnknownName(f"unknown agent {agent!r} for {suite}."
                              f"{f' Did you mean {close[0]}?' if close else ''} Agents: "
                              f"{', '.join(agent_table(suite)) or 'none'}")
        seed_list = parse_seeds(seeds) if seeds is not None else None
        raw_options = _parse_extra(list(ctx.args))
        check_declared_option_names(suite, raw_options, _command_options(ctx))
        check_requirements(suite)
        if agent is not None and executor == "process" and not dry_run:
            # the workers import the suite beside the driver's own import and plan
            from .run.executors import start_process_pool

            pool = start_process_pool(workers, suite, agent)
        s = get_suite(suite)
        options = s.parse_options(raw_options, _command_options(ctx))
        seed_list = seed_list if seed_list is not None else list(s.default_seeds)
        specs = plan_episodes(s, options, seed_list, key=key)
    except (UnknownName, ValueError) as exc:
        _stop_pool(pool)
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from exc
    except BaseException:
        _stop_pool(pool)
        raise
    who = agent or model
    if dry_run:
        tasks_planned = len({spec.task_id for spec in specs})
        console.print(f"dry run: {len(specs)} episodes of {tasks_planned} tasks of {suite} "
                      f"(seeds {seed_text(seed_list)}) for {escape(who)}; nothing played",
                      soft_wrap=True)
        return
    out_dir = out or default_out_dir(suite, who)
    config = {"suite": suite, "agent": agent, "model": model, "options": options,
              "seeds": seed_list}
    if key is not None:  # run.json names the key (id and commitment), never holds it
        config |= {"key_id": key.id, "key_commitment": key.commitment}
    if grader_model is not None:
        config["grader_model"] = grader_model
    # SIGTERM stops the run as Ctrl-C does: records kept, summary marked interrupted.
    with sigterm_as_interrupt() as stop:
        try:
            result = _play(s, specs, agent=agent, model=model, out_dir=out_dir,
                           config=config, grader_model=grader_model, model_arg=model_arg,
                           limit=limit, epochs=epochs, max_connections=max_connections,
                           resume=resume, quiet=quiet, executor=executor, workers=workers,
                           address=address, pool=pool)
        except KeyboardInterrupt:  # stopped while starting, before the runner took over
            console.print("[yellow]interrupted:[/yellow] stopped before any episode was "
                          "played")
            raise typer.Exit(stop.exit_code) from None
        finally:  # a run that never reached the pool (nothing left to play, a bad --out)
            _stop_pool(pool)
    if getattr(result, "stopped", None):  # the executor was lost (a Ray cluster's head)
        console.print(f"[red]error:[/red] run stopped: {result.stopped}; "
                      f"{len(result.records)} of {len(specs)} records kept in "
                      f"{result.out_dir / 'records.jsonl'}; when the executor is back, "
                      "finish the run with --resume", soft_wrap=True)
        raise typer.Exit(1)
    if getattr(result, "interrupted", False):
        console.print(f"[yellow]{'terminated' if stop.terminated else 'interrupted'}:"
                      f"[/yellow] {len(result.records)} records kept in "
                      f"{for_terminal(result.out_dir / 'records.jsonl', 2000)}; "
                      "summary.json is marked "
                      "interrupted; continue with --resume")
        raise typer.Exit(stop.exit_code)
    title = for_terminal(f"{suite} · {who} · {options_text(options)}", 1000)
    print_summary_table(result.summary, title,
                        rollup_labels(s, result.summary.get("per_task", {})))
    extra = s.summary_renderable(result.summary.get("suite_summary") or {})
    if extra is not None:
        console.print(extra)
    for line in result.failures:
        console.print(f"[red]infrastructure failure:[/red] {for_terminal(line, 2000)}")
    console.print(f"records: {for_terminal(result.out_dir / 'records.jsonl', 2000)}")
    console.print(f"summary: {for_terminal(result.out_dir / 'summary.json', 2000)}")


def _stop_pool(pool: Any) -> None:
    if pool is not None:
        from .run.executors import stop_pool

        stop_pool(pool)


def _misspelt_hint(ctx: typer.Context) -> str:
    """" (--agnet: did you mean --agent?)" for a misspelt option of the command's own among
    the arguments left to the suite, else ""."""
    own = ["--" + n.replace("_", "-") for n in _command_options(ctx)]
    for token in ctx.args:
        flag = token.split("=", 1)[0]
        if flag.startswith("--") and flag not in own:
            close = difflib.get_close_matches(flag, own, n=1, cutoff=0.75)
            if close:
                return f" ({escape(flag)}: did you mean {close[0]}?)"
    return ""


def options_text(options: dict[str, Any]) -> str:
    """Run options for a header: `protocol=budget-obs-100 tasks=period`, not a dict."""
    if not options:
        return "defaults"
    return " ".join(f"{k}={','.join(map(str, v)) if isinstance(v, list | tuple) else v}"
                    for k, v in options.items())


def _play(s: Any, specs: list[Any], *, agent: str | None, model: str | None, out_dir: Path,
          config: dict[str, Any], grader_model: str | None, model_arg: list[str] | None,
          limit: int | None, epochs: int | None, max_connections: int | None, resume: bool,
          quiet: bool, executor: str, workers: int, address: str | None,
          pool: Any = None) -> Any:
    """Play the run (an LLM through Inspect, or a scripted agent through an executor);
    every failure of the environment is one `error:` line and exit 1."""
    from .run import run_episodes

    if model is not None:
        try:
            from .doors.inspect.model_run import parse_model_args, run_model  # [inspect]

            return run_model(s, specs, model=model, out_dir=out_dir, config=config,
                             extra={"model_roles": {"grader": grader_model}} if grader_model
                             else None, model_args=parse_model_args(model_arg or []),
                             limit=limit, epochs=epochs, max_connections=max_connections,
                             resume=resume, display="none" if quiet else "rich")
        except (FileExistsError, ValueError) as exc:  # e.g. the model's server not there
            console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}", soft_wrap=True)
            raise typer.Exit(1) from None
    else:
        try:
            return run_episodes(specs, out_dir=out_dir, agent=agent, executor=executor,
                                workers=workers, resume=resume, config=config,
                                show_progress=not quiet,
                                executor_options=({"address": address} if address else
                                                  {"pool": pool} if pool is not None else
                                                  None))
        except ValueError as exc:  # e.g. a ray:// address without the Ray client
            message = " ".join(str(exc).split())
            if "ray[client]" in message:
                message = ("a ray:// address needs the Ray client: pip install -e "
                           "'.[ray-client]'")
            console.print(f"[red]error:[/red] {escape(message)}", soft_wrap=True)
            raise typer.Exit(1) from None
        except ConnectionError as exc:  # a Ray cluster that cannot be reached
            console.print(f"[red]error:[/red] cannot reach the cluster at "
                          f"{escape(str(address))}: {escape(' '.join(str(exc).split()))}",
                          soft_wrap=True)
            raise typer.Exit(1) from None
        except FileExistsError as exc:
            if exc.errno is None:  # the run directory's own refusal (records, no --resume)
                console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
                raise typer.Exit(1) from None
            console.print(f"[red]error:[/red] cannot write the run to "
                          f"{for_terminal(exc.filename or out_dir, 2000)}: a file is in the way "
                          "(--out names a folder)")
            raise typer.Exit(1) from None
        except OSError as exc:  # a read-only --out, a full disk: one line, records kept
            where = exc.filename or out_dir
            console.print(f"[red]error:[/red] cannot write the run to {for_terminal(where, 2000)}: "
                          f"{for_terminal(exc.strerror or exc, 2000)}")
            raise typer.Exit(1) from None


@app.command("audit")
def audit_cmd(
    suite: Annotated[str, typer.Argument(help="Suite to attack (see `discoverygym list`).")],
    package: Annotated[Path | None, typer.Option(
        help="packages: a task package, or a folder of packages (default: the shipped ones).")]
        = None,
    problems: Annotated[str | None, typer.Option(
        help="tpbench: a problem file or folder (default: the shipped problems).")] = None,
    interpreter: Annotated[bool, typer.Option(
        help="Also attack from inside the sandboxed interpreter.")] = True,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
        = False,
    seeds: SeedsOption = None,
):
    """Play a library of cheating agents against a suite, a package or a problem set and
    print attack, expected and observed outcome; exits 1 on any finding. The attacks
    play the suite's audit case on each seed of `--seeds` (default: its first default
    seed)."""
    import json as _json

    from rich.table import Table

    from .audit import audit

    try:
        outcomes = audit(suite, package=package, problems=problems, interpreter=interpreter,
                         seeds=parse_seeds(seeds) if seeds is not None else None)
    except (UnknownName, ValueError, FileNotFoundError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from exc
    findings = [o for o in outcomes if not o.ok]
    if as_json:
        print(_json.dumps([o.to_dict() for o in outcomes], indent=1))
    else:
        table = Table(title=f"audit of {for_terminal(suite)}: {len(outcomes)} attacks, "
                            f"{len(findings)} findings")
        for column in ("family", "attack", "expected", "observed", "ok"):
            table.add_column(column, overflow="fold")
        for o in outcomes:
            table.add_row(for_terminal(o.family), for_terminal(o.attack, 1000),
                          for_terminal(o.expected, 1000), for_terminal(o.observed, 1000),
                          "[green]ok[/green]" if o.ok else "[red]FINDING[/red]")
        console.print(table)
    raise typer.Exit(1 if findings else 0)


@app.command("calibrate", context_settings={"allow_extra_args": True,
                                            "ignore_unknown_options": True})
def calibrate_cmd(
    ctx: typer.Context,
    suite: Annotated[str, typer.Argument(help="Suite name (see `discoverygym list`).")],
    seeds: Annotated[str, typer.Option(help=SEEDS_HELP.split(" Default")[0] + " Default "
                                            "0-2: a verdict rests on several episodes.")]
        = "0-2",
    tasks: Annotated[str | None, typer.Option(
        help="Task ids or shell patterns, comma separated (default: the whole plan).")] = None,
    out: Annotated[Path | None, typer.Option(
        help="Write the table here: JSON for a .json path, else markdown.")] = None,
    readme: Annotated[Path | None, typer.Option(
        help="Also write the markdown table into this file, between its "
             "<!-- calibrate:MARKER:begin --> and <!-- calibrate:MARKER:end --> lines.")]
        = None,
    marker: Annotated[str | None, typer.Option(
        help="The MARKER of --readme (default: the suite's name).")] = None,
    runs: Annotated[Path | None, typer.Option(
        help="Where each agent's run directory goes (default runs/calibrate-SUITE-TIME).")]
        = None,
    values: Annotated[bool, typer.Option(
        help="Add each agent's median metric to the markdown cells.")] = False,
    workers: Annotated[int, typer.Option(help="Parallel episodes.", min=1)] = max(1, min(4, os.cpu_count() or 1)),
    executor: Annotated[str, typer.Option(help="serial | process | ray")] = "process",
    address: Annotated[str | None, typer.Option(help="Ray cluster address.")] = None,
    resume: Annotated[bool, typer.Option(help="Reuse the records already in --runs.")] = False,
    quiet: Annotated[bool, typer.Option(help="No progress bars.")] = False,
    as_json: Annotated[bool, typer.Option("--json", help="Print JSON instead of a table.")]
        = False,
    dry_run: Annotated[bool, typer.Option(
        help="Check the command and print how many episodes each agent would play.")]
        = False,
):
    """Run the suite's oracle, baselines and trivial agents (its CALIBRATION) over the
    same episodes and give each task a verdict: valid, too hard, leaks or weak.

    Suite options follow as in `discoverygym run`, e.g. `--protocol budget-obs-100`.
    Exits 1 when a task leaks (a trivial agent passes it)."""
    from .calibrate import (
        LEAKS,
        calibrate,
        calibration_specs,
        few_episodes_warning,
        roles_of,
        write_table,
    )
    from .report.markers import MarkerError, read_block, write_block
    from .run.stop import StopState, sigterm_as_interrupt

    stop = StopState()  # replaced by the one of the run, once it starts
    readme_marker = f"calibrate:{marker or suite}"
    try:
        seed_list = parse_seeds(seeds)
        if out is not None:
            _check_writable(out)
        if readme is not None:
            _check_marked(readme, readme_marker, read_block)
        s = get_suite(suite)
        options = s.parse_options(_parse_extra(list(ctx.args)), _command_options(ctx))
        specs = calibration_specs(suite, seed_list, tasks=tasks, options=options)
        warning = few_episodes_warning(suite, specs)
        if warning:
            err_console.print(f"warning: {for_terminal(warning, 2000)}", markup=False,
                              highlight=False, soft_wrap=True)
        if dry_run:
            agents = sorted({a for names in roles_of(suite).values() for a in names})
            console.print(f"dry run: {len(specs)} episodes of "
                          f"{len({spec.task_id for spec in specs})} tasks for each of "
                          f"{len(agents)} agents ({', '.join(agents)}); nothing played",
                          soft_wrap=True)
            return
        with sigterm_as_interrupt() as stop:  # SIGTERM stops it as Ctrl-C does
            result = calibrate(suite, seeds=seed_list, tasks=tasks,
                               raw_options=_parse_extra(list(ctx.args)), runs_dir=runs,
                               executor=executor, workers=workers, resume=resume,
                               show_progress=not quiet and not as_json,
                               executor_options={"address": address} if address else None)
    except (UnknownName, ValueError, FileExistsError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from exc
    except KeyboardInterrupt:
        console.print("[yellow]interrupted:[/yellow] records kept; continue with --resume "
                      "and the same --runs")
        raise typer.Exit(stop.exit_code) from None
    if out is not None:
        try:
            write_table(result, out, values=values)
        except OSError as exc:
            console.print(f"[red]error:[/red] cannot write the table to "
                          f"{escape(str(exc.filename or out))}: {exc.strerror or exc}; "
                          f"the runs are kept in {escape(str(_runs_folder(result)))}",
                          soft_wrap=True)
            raise typer.Exit(1) from None
    if readme is not None:
        try:
            write_block(readme, readme_marker, result.to_markdown(values=values))
        except (OSError, MarkerError) as exc:
            console.print(f"[red]error:[/red] cannot write the table into "
                          f"{for_terminal(readme, 2000)}: {for_terminal(exc, 2000)}; the runs "
                          f"are kept in {escape(str(_runs_folder(result)))}", soft_wrap=True)
            raise typer.Exit(1) from None
    if as_json:
        typer.echo(json.dumps(result.to_dict(), indent=1))
    else:
        from .core.fit_table import fit_table

        colour = {"valid": "green", "too hard": "yellow", "weak": "yellow", "leaks": "red"}
        rows = [[for_terminal(task.task_id),
                 f"[{colour[task.verdict]}]{task.verdict}[/{colour[task.verdict]}]",
                 *(f"{task.rates[a].passed}/{task.rates[a].n}" if a in task.rates else "-"
                   for a in result.agents)] for task in result.tasks]
        # Task ids fold whole (two ids cut to one "area_swe…" read alike); the verdict
        # comes second so that agents that do not fit are the ones left out.
        console.print(fit_table(
            f"calibration of {for_terminal(suite)} · seeds {for_terminal(seeds)}",
            ["task", "verdict", *(for_terminal(a) for a in result.agents)],
            rows, numeric=set(range(2, 2 + len(result.agents))), width=console.width,
            keep=2))
        console.print(", ".join(f"{k}: {v}" for k, v in result.counts().items()))
        for task in result.tasks:
            if task.reason:
                console.print(f"  {for_terminal(task.task_id)}: {task.verdict} "
                              f"({for_terminal(task.reason, 2000)})")
        if result.public_note():
            console.print(escape(result.public_note()))
        for line in result.infrastructure_failures:
            console.print(f"[red]infrastructure failure:[/red] {for_terminal(line, 2000)}")
        console.print(f"command: {for_terminal(result.command, 2000)}")
        if out is not None:
            console.print(f"table: {for_terminal(out, 2000)}")
    raise typer.Exit(1 if result.counts()[LEAKS] else 0)


def _runs_folder(result: Any) -> Path | str:
    """The folder holding a calibration's run directories (one per agent)."""
    dirs = list(result.run_dirs.values())
    return Path(dirs[0]).parent if dirs else "(none)"


def _check_marked(path: Path, name: str, read_block: Any) -> None:
    """Refuse a --readme without the block's markers before any work is done."""
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read --readme {path}: {getattr(exc, 'strerror', None) or exc}"
                         ) from None
    if read_block(text, name) is None:
        raise ValueError(f"--readme {path} needs one <!-- {name}:begin --> line and one "
                         f"<!-- {name}:end --> line after it")


def _check_writable(path: Path) -> None:
    """Refuse an output file that cannot be written before any work is done."""
    if path.is_dir():
        raise ValueError(f"--out {path} is a folder; name a file")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        with tempfile.NamedTemporaryFile(dir=path.parent, prefix=".dg-write-check-"):
            pass
    except OSError as exc:
        raise ValueError(f"cannot write {path}: {exc.strerror or exc}") from None


@app.command("leaderboard")
def leaderboard_cmd(
    runs: Annotated[list[str] | None, typer.Argument(
        help="Run directories, records.jsonl files or glob patterns (default runs/*).")] = None,
    by: Annotated[str, typer.Option(help="Group keys, comma separated: agent, model, suite, "
                                         "protocol, world, task_id, run, or any option such as tier.")]
        = "suite,agent,model",
    fmt: Annotated[str, typer.Option("--format", help="table | csv | json | markdown")] = "table",
    columns: Annotated[str | None, typer.Option(
        help="Figures to show, comma separated, or 'all': n, n_passed, pass_rate, "
             "pass_rate_se, mean_score, mean_observations, mean_tool_calls, mean_tokens, "
             "total_usd, mean_wall_s, n_public (default: n to mean_score in the table, "
             "all otherwise; the table adds public when any record played a public "
             "package).")]
        = None,
):
    """Aggregate any set of runs with DuckDB, straight from their records.jsonl files."""
    from .run.leaderboard import (
        FORMATS,
        METRICS,
        TABLE_METRICS,
        broken_lines,
        check_keys,
        choose_columns,
        format_rows,
        leaderboard,
        terminal_table,
    )

    if fmt not in FORMATS:
        console.print(f"[red]error:[/red] unknown --format {for_terminal(repr(fmt))}; choose "
                      f"{', '.join(FORMATS)}.")
        raise typer.Exit(1)
    keys = [k.strip() for k in by.split(",") if k.strip()]
    try:
        check_keys(list(runs or []), keys)
        rows = leaderboard(list(runs or []), keys)
        # public packages (generated with --seed) are no held-out evaluation: the table
        # says how many records played one whenever any did
        public = any((r.get("n_public") or 0) > 0 for r in rows)
        table_default = (*TABLE_METRICS, "n_public") if public else TABLE_METRICS
        rows = choose_columns(rows, keys, columns,
                              default=table_default if fmt == "table" else METRICS)
        n_broken = broken_lines(list(runs or []))
    except (FileNotFoundError, ValueError) as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from exc
    # Lines that are no record are skipped, and said: on stderr beside csv/json/markdown,
    # so their output stays one document.
    skipped = (f"skipped {n_broken} unreadable line{'s' if n_broken != 1 else ''} "
               "(not a JSON record)") if n_broken else None
    if fmt != "table":
        typer.echo(format_rows(rows, fmt))
        if skipped:
            err_console.print(f"note: {skipped}", markup=False, highlight=False)
        return
    console.print(terminal_table(rows, keys, console.width))
    if skipped:
        console.print(f"note: {skipped}", markup=False, highlight=False)
    if public:
        console.print("[yellow]public: records of packages generated with --seed; anyone "
                      "can regenerate their truths, so they are no held-out evaluation[/]")


@app.command("report")
def report_cmd(
    run_dir: Annotated[Path, typer.Argument(help="A run directory.")],
    output: Annotated[Path | None, typer.Option("-o", "--output", help="HTML file to write "
                                                "(default RUN_DIR/report.html).")] = None,
):
    """Write a self-contained HTML report (no network needed to view it)."""
    from .report import write_report

    if not (run_dir / "records.jsonl").is_file():
        console.print(f"[red]error:[/red] {for_terminal(run_dir, 2000)} has no records.jsonl")
        raise typer.Exit(1)
    try:
        written = write_report(run_dir, output)
    except OSError as exc:  # a read-only or missing folder for -o
        where = exc.filename or output or run_dir
        console.print(f"[red]error:[/red] cannot write the report to {for_terminal(where, 2000)}: "
                      f"{exc.strerror or exc}")
        raise typer.Exit(1) from None
    console.print(f"report: {for_terminal(written, 2000)}")


@app.command("options")
def show_options(suite: str):
    """List a suite's run options, and the seeds its cases are played with by default."""
    try:
        s = get_suite(suite)
    except UnknownName as exc:
        console.print(f"[red]error:[/red] {for_terminal(exc, 2000)}")
        raise typer.Exit(1) from None
    table = Table(title=f"discoverygym run {for_terminal(suite)} options")
    table.add_column("option")
    table.add_column("help")
    table.add_row("--seeds", f"the runner's seeds, every case once per seed (default "
                             f"{seed_text(s.default_seeds)})")
    for opt in s.run_options:
        table.add_row(for_terminal("--" + opt.name.replace("_", "-")), for_terminal(opt.help, 1000))
    console.print(table)


def _mount_doors() -> None:
    """Every door's commands, through the one door table (doors/__init__.py: DOORS);
    a door's framework loads only when its command runs."""
    for door in DOORS:
        if door.mount is not None:
            module, _, function = door.mount.partition(":")
            getattr(importlib.import_module(module), function)(app)


_mount_doors()


def _calibrate(*args: Any, **kwargs: Any) -> Any:
    from .calibrate import calibrate

    return calibrate(*args, **kwargs)


# What a suite's own commands may use of the runner, handed down as the click context's
# `obj` rather than imported: no suite imports the runner or the command line.
SUITE_COMMAND_SERVICES: dict[str, Any] = {"calibrate": _calibrate}


def _mount_subcommands() -> None:
    """The command groups suites declare in the registry (`SuiteEntry.cli`), plugins
    included; each is optional: a missing extra hides it. Each gets
    SUITE_COMMAND_SERVICES as its context's `obj`."""
    load_plugins()
    for name, entry in SUITES.items():
        if entry.cli is None:
            continue
        module, _, attr = entry.cli.partition(":")
        try:
            sub_app = getattr(importlib.import_module(module), attr)
        except ImportError:  # pragma: no cover - the suite's extra is missing
            continue
        app.add_typer(sub_app, name=entry.cli_name or name,
                      context_settings={"obj": SUITE_COMMAND_SERVICES})


_mount_subcommands()

# `discoverygym key new` and `discoverygym verify RUN`: commit, then reveal.
from .keys_cli import key_app, verify  # noqa: E402

app.add_typer(key_app, name="key")
app.command("verify")(verify)


def flowed(text: str) -> str:
    """A docstring as `--help` should show it: each paragraph one flowing line (the
    terminal wraps it at its width), paragraphs kept apart. Typer kept the source's line
    breaks, so at 80 columns sentences broke in the middle."""
    import inspect

    paragraphs = inspect.cleandoc(text).split("\n\n")
    return "\n\n".join(" ".join(p.split()) for p in paragraphs if p.strip())


def _flow_help(typer_app: typer.Typer) -> None:
    """Flow the help of every command of `typer_app` and of its command groups."""
    for command in typer_app.registered_commands:
        doc = command.help or (command.callback.__doc__ if command.callback else None)
        if doc:
            command.help = flowed(doc)
    for group in typer_app.registered_groups:
        if group.typer_instance is not None:
            _flow_help(group.typer_instance)


_flow_help(app)


def main() -> None:
    """The `discoverygym` entry point: the app, with environment failures that no command
    caught (a missing extra, a path that cannot be written) said in one line, exit 1.
    DISCOVERYGYM_DEBUG=1 shows the traceback instead. A key file named on the command
    line is read first and handed to a re-executed image on a pipe, so the running
    process's command line never names it (core/key_handoff.py)."""
    from .core.key_handoff import hand_off

    hand_off()
    try:
        app()
    except (ImportError, OSError) as exc:
        if os.environ.get("DISCOVERYGYM_DEBUG"):
            raise
        err_console.print(f"error: {one_line_failure(exc)}", markup=False, highlight=False,
                          soft_wrap=True)
        raise SystemExit(1) from None


if __name__ == "__main__":  # pragma: no cover
    main()

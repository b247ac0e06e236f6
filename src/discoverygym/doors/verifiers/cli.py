"""`discoverygym rl ...`: the verifiers door from the command line (the [rl] extra,
imported only when a command runs)."""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Annotated

import typer

rl_app = typer.Typer(help="verifiers (RL) environments: setup and local evaluation.",
                     no_args_is_help=True)


@rl_app.command("setup")
def setup_cmd() -> None:
    """Install the chat harness's helper (needs the package index once; rollouts after
    it run offline)."""
    from .launch import prepare_chat_helper

    typer.echo(f"chat helper ready: {prepare_chat_helper()}")


@rl_app.command("eval", context_settings={"allow_extra_args": True,
                                          "ignore_unknown_options": True})
def eval_cmd(
    ctx: typer.Context,
    suite: Annotated[str, typer.Argument(help="Suite name (see `discoverygym list`).")],
    model: Annotated[str, typer.Option(help="Model name sent to the endpoint.")],
    base_url: Annotated[str, typer.Option(help="OpenAI-compatible endpoint, e.g. "
                                               "http://localhost:8000/v1.")],
    api_key_var: Annotated[str, typer.Option(help="Environment variable holding the "
                                                  "endpoint's key.")] = "OPENAI_API_KEY",
    split: Annotated[str, typer.Option(help="eval (held-out seeds) or train.")] = "eval",
    seeds: Annotated[str | None, typer.Option(
        help="eval: the runner's seeds, each case once per seed (0-4: five), played in the "
             "held-out range (1000000 + seed). Default 0.")] = None,
    limit: Annotated[int | None, typer.Option("-n", help="Play the first N tasks.")] = None,
    rollouts: Annotated[int, typer.Option("-r", help="Rollouts per task.")] = 1,
    out: Annotated[Path | None, typer.Option(help="Output directory of vf-eval "
                                                  "(default: runs/rl).")] = None,
    traces: Annotated[bool, typer.Option("--traces", help="Print every rollout's trace "
                                         "(JSON) as vf-eval does; they are in the run's "
                                         "traces.jsonl either way.")] = False,
):
    """Evaluate a model on a suite with `vf-eval`, locally: subprocess runtime, nothing
    uploaded. Suite options follow as in `discoverygym run`. Ends with a summary
    (rollouts, mean reward, passed, errored); exits 1 if a rollout errored."""
    import os

    from ...cli_args import parse_extra as _parse_extra
    from ...core import UnknownName
    from . import summary as rollouts_summary
    from .launch import eval_command, local_env, run_dir_name
    from .selection import split_specs

    options = _parse_extra(list(ctx.args))
    try:
        if split == "train" and limit is None:
            raise ValueError("The train split is endless; say how many tasks with -n.")
        next(iter(split_specs(suite, split, options, seeds)), None)
        _needs_verifiers()
        rollouts_summary.check_streaming(base_url, model, os.environ.get(api_key_var))
    except (UnknownName, ValueError) as exc:
        typer.echo(f"error: {exc}", err=True)
        raise typer.Exit(1) from exc
    out = out or Path("runs") / "rl"  # beside `discoverygym run`'s runs/, not a new folder
    run_dir = run_dir_name(suite)
    argv = eval_command(suite, model=model, base_url=base_url, api_key_var=api_key_var,
                        options=options, split=split, seeds=seeds, limit=limit,
                        rollouts=rollouts, out=out, run_dir=run_dir)
    done = subprocess.run(argv, env=local_env(),
                          stdout=None if traces else subprocess.DEVNULL)
    path = out / run_dir / "traces.jsonl"
    if not path.exists():
        typer.echo(f"error: vf-eval left no traces at {path} (exit status "
                   f"{done.returncode})", err=True)
        raise typer.Exit(done.returncode or 1)
    summary = rollouts_summary.summarize(rollouts_summary.read_traces(path))
    for line in rollouts_summary.summary_lines(summary, path):
        typer.echo(line)
    raise typer.Exit(done.returncode or (1 if summary.errored or not summary.rollouts
                                         else 0))


def _needs_verifiers() -> None:
    """Say that `rl eval` needs the [rl] extra when verifiers is missing. Without this
    check a bare install first missed httpx (the stream check's client) and asked for
    [server], an extra that would not have helped."""
    import importlib.util

    if importlib.util.find_spec("verifiers") is None:
        raise ModuleNotFoundError("No module named 'verifiers'", name="verifiers")


def mount(app: typer.Typer) -> None:
    """Add the `rl` group to the `discoverygym` app."""
    app.add_typer(rl_app, name="rl")

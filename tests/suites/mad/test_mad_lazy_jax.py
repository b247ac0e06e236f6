"""JAX is imported only by a process that computes with it (issue #37: its import is
about a second of CPU in every process). mad's planning parent reads the worlds' laws
and options, the quantum world's workers solve with NumPy, and the sandbox steps an
agent's law with NumPy: none of them loads JAX. Each check runs in a fresh interpreter,
where `sys.modules` starts without it."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from discoverygym.physics.lazy_import import is_module, lazy_module


def _jax_loaded_after(code: str, tmp_path) -> bool:
    script = textwrap.dedent(code) + "\nimport sys\nprint('jax' in sys.modules)\n"
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                         timeout=300, env={"DISCOVERYGYM_CACHE": str(tmp_path),
                                           "PATH": "/usr/bin:/bin"}, check=True)
    return out.stdout.strip().splitlines()[-1] == "True"


def test_planning_every_mad_world_does_not_import_jax(tmp_path):
    assert not _jax_loaded_after("""
        from discoverygym.core.suite import get_suite
        suite = get_suite("mad")
        for world in ("classical", "fluid", "quantum"):
            assert suite.plan(world=world)
    """, tmp_path)


def test_a_quantum_episode_is_played_without_jax(tmp_path):
    assert not _jax_loaded_after("""
        from discoverygym.run.episode_worker import play_scripted
        record = play_scripted({"suite": "mad", "task_id": "quantum-normal", "seed": 0,
                                "options": {"t_max": 2, "query_horizon": 1}}, "schrodinger")
        assert record["error"] is None, record["error"]
    """, tmp_path)


def test_the_fluid_step_with_numpy_does_not_import_jax_and_with_jax_does(tmp_path):
    step = """
        import numpy as np
        from discoverygym.physics import fluid_solver as fs
        w = fs.initial_hat(fs.taylor_green(16))
        fs.fixed_step_advance(w, 0.01, 2, nu=0.01, xp={xp})
    """
    assert not _jax_loaded_after(step.format(xp="np"), tmp_path)
    assert _jax_loaded_after(step.format(xp="fs.jnp"), tmp_path)


def test_the_lazy_stand_in_is_the_module_once_read():
    stand_in = lazy_module("json")
    assert is_module(stand_in, "json") and not is_module(np, "json")
    assert stand_in.dumps([1]) == "[1]"
    import json

    assert stand_in.loads is json.loads

"""Shared fixtures. Every test runs with its own cache directory so nothing leaks
between tests or into the user's cache."""

from __future__ import annotations

import os

import pytest

# pytest-xdist starts its workers with COLUMNS and LINES set (80 x 24 without a terminal);
# Rich fixes a console's width from COLUMNS when the console is made, at import, so the
# tests that choose a width through CliRunner's env would depend on the lane they run in.
if os.environ.get("PYTEST_XDIST_WORKER"):
    for _name in ("COLUMNS", "LINES"):
        os.environ.pop(_name, None)


# Test modules register the toy suite as a plugin for worker processes
# (toy_suite.install() sets DISCOVERYGYM_PLUGINS when the module is collected), so every
# subprocess a test starts inherits that variable; with the tests' folder on its
# PYTHONPATH the plugin imports there too, whichever modules a worker collected.
_TESTS = os.path.dirname(os.path.abspath(__file__))
if _TESTS not in os.environ.get("PYTHONPATH", "").split(os.pathsep):
    os.environ["PYTHONPATH"] = os.pathsep.join(
        p for p in (os.environ.get("PYTHONPATH"), _TESTS) if p)


@pytest.fixture(autouse=True, scope="session")
def _isolated_cache(tmp_path_factory):
    cache = os.environ.get("DISCOVERYGYM_TEST_CACHE") or str(tmp_path_factory.mktemp("dgcache"))
    os.environ["DISCOVERYGYM_CACHE"] = cache
    yield


@pytest.fixture(autouse=True)
def _public_draws():
    """Tests draw publicly unless they give a key: a DISCOVERYGYM_KEY(_FILE) of the
    developer's, or one a test's code set (the verifiers eval split sets a fresh key
    file), must not key the records of the tests after it."""
    names = ("DISCOVERYGYM_KEY", "DISCOVERYGYM_KEY_FILE")
    saved = {name: os.environ.pop(name, None) for name in names}
    yield
    for name in names:
        os.environ.pop(name, None)
        if saved[name] is not None:
            os.environ[name] = saved[name]
    # nor may the key files a test read: a process holding a key runs no sandbox at
    # rlimits-only, which would refuse the tests after it in the same worker
    from discoverygym.core import keys

    keys._KEY_FILES.clear()
    keys._HANDED.clear()


# The fast lane (`make test-fast`, `pytest -m "not slow"`) leaves out the tests marked
# slow, every test of SLOW_MODULES and the tests named in SLOW_TESTS: the whole-pipeline
# checks a developer runs before a commit rather than between edits (calibrations,
# golden records, Harbor trials, the sandbox's attack battery, the audit, the README's
# commands, whole CLI runs, JAX-heavy solvers, Ray). The selection is by time: with
# these out, the lane took 3.5 minutes of CPU (README, "Tests"). `make test` runs
# them all. One list here rather than a marker in each file: the files change on many
# branches. tests/project/test_lanes.py keeps the lists to files and tests that exist.
SLOW_MODULES = frozenset({
    "test_audit.py",
    "test_audit_registry.py",
    "test_calibrate.py",
    "test_calibrate_suites.py",
    "test_door_parity.py",
    "test_doors_doc.py",
    "test_executors.py",
    "test_golden_records.py",
    "test_gravity_calibration.py",
    "test_gravity_resume.py",
    "test_harbor_trials.py",
    "test_inspect_openai.py",
    "test_mad_baselines.py",
    "test_mad_calibration.py",
    "test_mad_cli.py",
    "test_mad_law_rollout.py",
    "test_mad_quantum_calibration.py",
    "test_mad_quantum_solver.py",
    "test_mad_quantum_world.py",
    "test_plugin_doors.py",
    "test_readme_commands.py",
    "test_sandbox_attacks.py",
    "test_audit_families.py",  # the audit's families, played against real sandboxes
    "test_sandbox_sealed_verifier.py",  # the verifier's isolation, at every level
    "test_tpbench_calibration.py",
    "test_audit_key_families.py",  # #38's families, against real sandboxes and a verifier
    "test_harbor_verifier_secrets.py",  # the verifier's secrets, at every scoring level
})

# module -> test functions (every parametrization) that each took over ~3.5 s.
SLOW_TESTS = {
    "test_cli_errors.py": ("test_list_shows_a_suite_with_a_missing_extra_as_unavailable",
                           "test_report_needs_matplotlib_and_a_writable_output",
                           "test_a_misspelt_option_suggests_the_closest_of_all_options"),
    "test_gravity_episode.py": (
        "test_the_published_window_leaked_the_period_and_the_default_does_not",
        "test_is_bound_is_asked_of_the_twin_with_even_odds_by_default"),
    "test_door_python_calls.py": ("test_inspect_records_the_python_call",
                                  "test_mcp_records_the_python_call",
                                  "test_mcp_hostile_python_calls_are_bounded_in_the_record",
                                  "test_mcp_without_the_interpreter_still_logs_the_calls"),
    "test_harbor_export.py": ("test_verifier_needs_only_its_pinned_requirements",
                              "test_sidecar_serves_the_live_episode_over_http"),
    "test_inspect_scripted.py": ("test_hostile_arguments_through_inspect_are_short_free_errors",
                                 "test_tpbench_holistic_grade_through_the_grader_role",
                                 "test_cheater_attempts_all_fail",
                                 "test_expert_passes_gravity_through_inspect"),
    "test_mad_discovery.py": ("test_law_oracle_fits_the_law_from_its_measurements_and_passes",),
    "test_mad_fluid_discovery.py": ("test_wavenumber_oracle_fits_strength_and_wave_number",
                                    "test_truth_and_reference_equal_an_independent_integration"),
    "test_mad_fluid_world.py": ("test_altered_law_defeats_the_standard_model",),
    "test_mad_protocol.py": ("test_describe_law_scores_the_function_against_the_true_law",),
    "test_mcp_server.py": ("test_mcp_client_plays_a_gravity_episode_to_a_passing_record",),
    "test_key_hygiene.py": ("test_every_key_file_read_is_sealed_from_the_sandbox",
                            "test_the_python_tool_finds_neither_key_nor_path",
                            "test_without_the_hand_off_the_path_shows_on_the_command_line",
                            "test_an_unreadable_key_is_left_to_the_command_to_report"),
    "test_docs_door_prompts.py": ("test_mcp_instructions_name_only_its_tools",),
    "test_packages_check.py": ("test_the_frozen_gravity_sota_reruns_and_beats_the_baseline",),
    "test_packages_episode.py": ("test_cli_baseline_run_scores_every_shipped_package",),
    "test_packages_naturegym.py": ("test_a_prepare_that_never_ends_is_stopped",),
    "test_sandbox_limits.py": ("test_memory_is_limited_for_all_processes_together",),
    "test_stargazer_agents.py": ("test_nested_passes_an_easy_bank_task",
                                 "test_nested_evidence_prefers_the_true_planet_count",
                                 "test_classical_agent_adds_planets_when_every_count_is_wrong"),
    "test_tpbench_check.py": ("test_a_sample_of_shipped_problems_passes_the_whole_check",
                              "test_the_check_code_runs_isolated_like_an_answer"),
    "test_tpbench_hostile_answers.py": (
        "test_a_symbolic_bomb_is_compared_outside_the_host_under_a_limit",),
    "test_tpbench_suite.py": ("test_sampled_references_pass_and_their_wrong_answers_fail",
                              "test_scripted_agents_through_the_runner"),
    "test_tpbench_verifier.py": ("test_sympy_answers_end_to_end",
                                 "test_error_no_code_and_timeout_verdicts",
                                 "test_fork_bombs_and_memory_hogs_are_stopped"),
}


# Re-measured after the tests moved into folders (a quiet machine, `pytest -m "not slow"
# --durations=45`): the single tests of about 2.3 s or more, so the lane stays near
# 4 minutes as tests are added.
_OVER_2S = {
    "test_naturegym_generate.py": (
        "test_public_seed_mode_is_marked_public_and_reproducible",
        "test_tampered_added_or_linked_file_fails_in_one_line",
        "test_keyed_release_verifies_and_publishes_commitment_and_digests",
        "test_the_gate_stops_a_family_that_leaks_a_hidden_value",
        "test_generation_goes_through_the_record_firewall_of_package_build"),
    "test_naturegym_generate_gates.py": (
        "test_a_draw_that_fails_a_gate_is_redrawn_with_the_reason",
        "test_a_planted_leak_is_caught_by_the_gate_and_never_emitted"),
    "test_keyed_draws.py": ("test_keyed_model_run_through_inspect",),
    "test_sandbox_interpreter.py": ("test_timeout_restarts_with_workspace_restored",),
    "test_mad_fluid_discovery.py": (
        "test_law_family_reproduces_the_world_law_and_its_derivative",
        "test_law_oracle_fits_the_strengths_and_passes_where_normal_physics_fails"),
    "test_tpbench_suite.py": ("test_report_shows_pass_rates_by_level_and_domain",
                              "test_check_cli_reports_broken_files"),
    "test_packages_naturegym.py": ("test_a_build_killed_mid_stage_leaves_no_partial_output",),
    "test_harbor_export.py": ("test_sidecar_writes_the_record_when_stopped_without_an_answer",),
    "test_packages_sandbox.py": ("test_sandboxed_agent_reads_data_and_writes_outputs",),
    "test_mad_protocol.py": ("test_law_function_runs_out_of_process_with_a_time_limit",),
}
for _module, _names in _OVER_2S.items():
    SLOW_TESTS[_module] = (*SLOW_TESTS.get(_module, ()), *_names)

def pytest_collection_modifyitems(config, items):
    for item in items:
        module = item.path.name
        if module in SLOW_MODULES or item.originalname in SLOW_TESTS.get(module, ()):
            item.add_marker(pytest.mark.slow)

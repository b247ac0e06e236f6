#!/usr/bin/env bash
# The wheel lane (`make test-wheel`): the package as users get it. Builds the sdist and
# the wheel from this checkout, checks both with twine, installs the wheel with [all]
# into a fresh virtualenv outside the checkout, and from an empty folder runs the smoke
# lane: each suite's headline command on a small plan, `audit` on every suite, a keyed
# run and its `verify`, `package generate` of one package, `report` and `leaderboard`.
# Prints each command before it runs; exits non-zero at the first that fails; removes
# everything it made.
#
#   tools/wheel_smoke.sh [PYTHON]     PYTHON builds (needs `build` and `twine`, the [dev]
#                                     extra) and makes the fresh venv; default .venv's
#   KEEP=1 tools/wheel_smoke.sh       keep the temporary folder (printed) to look at
set -euo pipefail

ROOT="$(cd "$(dirname "$0")/.." && pwd)"
PY="${1:-$ROOT/.venv/bin/python}"
TMP="$(mktemp -d "${TMPDIR:-/tmp}/dg-wheel-XXXXXX")"
cleanup() { if [ "${KEEP:-0}" = 1 ]; then echo "kept $TMP"; else rm -rf "$TMP"; fi; }
trap cleanup EXIT
case "$TMP/" in "$ROOT"/*) echo "the temporary folder $TMP lies in the checkout" >&2; exit 1;; esac
START=$SECONDS
exec 3>&1  # what `step` prints goes to the lane's output even when a step's is redirected
step() { echo "+ $*  [$((SECONDS - START)) s]" >&3; "$@"; }

# ---- build and check ------------------------------------------------------------------
# The build copies the checkout (tracked and untracked files alike) to build from; the
# sdist is what the wheel is built from, so the wheel holds only what the sdist carries.
step "$PY" -m build --outdir "$TMP/dist" "$ROOT" >"$TMP/build.log" 2>&1 \
  || { tail -30 "$TMP/build.log"; exit 1; }
step "$PY" -m twine check --strict "$TMP"/dist/*
WHEEL="$(ls "$TMP"/dist/discoverygym-*.whl)"

# ---- a fresh environment outside the checkout -----------------------------------------
step "$PY" -m venv "$TMP/venv"
# pip's cache makes the second install of the same pins quick; --no-input never waits.
step "$TMP/venv/bin/python" -m pip install -q --no-input --upgrade pip 2>&1 \
  | { grep -v "^WARNING: Location '.*' is ignored" || true; }
# (this machine's pip configuration may name index folders that are absent: said once
# per package, so those lines are dropped)
step "$TMP/venv/bin/python" -m pip install -q --no-input "$WHEEL[all]" 2>&1 \
  | { grep -v "^WARNING: Location '.*' is ignored" || true; }
DG="$TMP/venv/bin/discoverygym"

# ---- the smoke lane, from an empty folder ---------------------------------------------
mkdir "$TMP/work" && cd "$TMP/work"
# Nothing of the checkout may leak in: no PYTHONPATH, no settings of a caller's run.
unset PYTHONPATH DISCOVERYGYM_KEY DISCOVERYGYM_KEY_FILE DISCOVERYGYM_CACHE || true
export DISCOVERYGYM_CACHE="$TMP/cache"

step "$DG" --version | tee version.txt
grep -q "^extras installed: .*\ball\b" version.txt || { echo "--version does not list [all]"; exit 1; }
"$TMP/venv/bin/python" - "$ROOT" <<'EOF'
import sys
from pathlib import Path

import discoverygym
where = Path(discoverygym.__file__).resolve()
assert Path(sys.argv[1]).resolve() not in where.parents, f"imported from the checkout: {where}"
print("discoverygym imported from", where.parent)
EOF
step "$DG" list

# each suite's headline command (README "Running"), on a small plan
step "$DG" run gravity --agent expert-uniform --protocol budget-obs-100 --tasks period --worlds A --out runs/gravity --quiet
step "$DG" run stargazer --agent classical --tier medium --mode v1 --tasks medium-000 --out runs/stargazer --quiet
step "$DG" run mad --world classical --law kappa10 --agent newtonian --seeds 0 --out runs/mad --quiet
step "$DG" run tpbench --agent reference --level 1 --out runs/tpbench --quiet
step "$DG" run packages --agent baseline --task binary-drag-timescale --out runs/packages --quiet

# the audit on every suite: the package's files must be out of the agent's reach in an
# installed wheel as in a checkout (issue #38 item 6)
for suite in gravity stargazer mad tpbench packages; do
  step "$DG" audit "$suite"
done

# commit, run keyed, reveal, verify
step "$DG" key new --out eval.key | tee key.txt
COMMITMENT="$(sed -n "s/^commitment: *\([0-9a-f]\{64\}\)$/\1/p" key.txt)"
[ -n "$COMMITMENT" ] || { echo "key new printed no commitment"; exit 1; }
step "$DG" run gravity --agent expert-adaptive --tasks period --worlds A,PM1 --key-file eval.key --out runs/keyed --quiet
step "$DG" verify runs/keyed --key-file eval.key --commitment "$COMMITMENT"

# a generated release of one package, and its check
step "$DG" package generate gravity-drag --count 1 --out release --key-file eval.key
step "$DG" package verify-release release --key-file eval.key --commitment "$COMMITMENT"

# the readers
step "$DG" report runs/gravity -o report.html
test -s report.html
step "$DG" leaderboard 'runs/*' --by suite,agent

echo "wheel lane passed in $((SECONDS - START)) s"

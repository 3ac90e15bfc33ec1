#!/usr/bin/env bash
# Install SCALE-Sim v3 (PyPI `scalesim`) into its own virtual environment, .venv-scalesim at the
# repository root, for the `scalesim` profiler plugin (plugins/scalesim, docs/scalesim.md).
#
# A separate environment because scalesim 3.0.0 crashes with numpy >= 2.4 ("only 0-dimensional
# arrays can be converted to Python scalars") while the main environment uses numpy 2.4.
#
#   scripts/install_scalesim.sh            # install (skips when already installed and importable)
#   scripts/install_scalesim.sh --force    # delete .venv-scalesim and reinstall
#
# Environment: PYTHON (the interpreter that creates the venv; default python3),
# SCALESIM_VENV (where to put it; default <repo>/.venv-scalesim).
# The adapter finds the interpreter at .venv-scalesim/bin/python, or wherever
# LLMULATOR_SCALESIM_PYTHON points.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${SCALESIM_VENV:-$ROOT/.venv-scalesim}"
PYTHON="${PYTHON:-python3}"
SCALESIM_VERSION="3.0.0"
NUMPY_SPEC="numpy==2.3.5"   # the newest numpy that scalesim 3.0.0 runs with (2.4.x crashes)

check() {
  "$VENV/bin/python" - "$SCALESIM_VERSION" <<'EOF' >/dev/null 2>&1
import sys
from importlib.metadata import version
import numpy
import scalesim.scale_sim  # noqa: F401  (the module the adapter runs)
assert version("scalesim") == sys.argv[1], version("scalesim")
assert tuple(int(p) for p in numpy.__version__.split(".")[:2]) < (2, 4), numpy.__version__
EOF
}

if [[ "${1:-}" == "--force" ]]; then
  rm -rf "$VENV"
elif [[ -n "${1:-}" ]]; then
  echo "usage: $0 [--force]" >&2
  exit 2
fi

if [[ -x "$VENV/bin/python" ]] && check; then
  echo "scalesim $SCALESIM_VERSION already installed in $VENV"
  exit 0
fi

start=$SECONDS
echo "installing scalesim $SCALESIM_VERSION with $NUMPY_SPEC into $VENV ..."
"$PYTHON" -m venv "$VENV"
# keep the environment out of git without touching the repository's .gitignore
printf '*\n' > "$VENV/.gitignore"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "scalesim==$SCALESIM_VERSION" "$NUMPY_SPEC"
if ! check; then
  echo "error: scalesim was installed into $VENV but 'import scalesim.scale_sim' fails:" >&2
  "$VENV/bin/python" -c "import scalesim.scale_sim" >&2 || true
  exit 1
fi
echo "installed scalesim $SCALESIM_VERSION in $VENV in $((SECONDS - start)) s"

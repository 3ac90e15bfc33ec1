#!/usr/bin/env bash
# Install ZigZag (PyPI `zigzag-dse`) into its own virtual environment, .venv-zigzag at the repository
# root, for the peer comparison in benchmarks/peers/ (docs/peers.md). Never into the main .venv.
#
# zigzag-dse 3.9.1 imports `six` without declaring it (ModuleNotFoundError on `import zigzag.api`),
# so `six` is installed next to it.
#
#   scripts/install_zigzag.sh            # install (skips when already installed and importable)
#   scripts/install_zigzag.sh --force    # delete .venv-zigzag and reinstall
#
# Environment: PYTHON (the interpreter that creates the venv; default python3),
# ZIGZAG_VENV (where to put it; default <repo>/.venv-zigzag).
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${ZIGZAG_VENV:-$ROOT/.venv-zigzag}"
PYTHON="${PYTHON:-python3}"
ZIGZAG_VERSION="3.9.1"

check() {
  "$VENV/bin/python" - "$ZIGZAG_VERSION" <<'PY' >/dev/null 2>&1
import sys
from importlib.metadata import version
import zigzag.api  # noqa: F401  (the module benchmarks/peers/zigzag_runner.py calls)
assert version("zigzag-dse") == sys.argv[1], version("zigzag-dse")
PY
}

if [[ "${1:-}" == "--force" ]]; then
  rm -rf "$VENV"
elif [[ -n "${1:-}" ]]; then
  echo "usage: $0 [--force]" >&2
  exit 2
fi

if [[ -x "$VENV/bin/python" ]] && check; then
  echo "zigzag-dse $ZIGZAG_VERSION already installed in $VENV"
  exit 0
fi

start=$SECONDS
echo "installing zigzag-dse $ZIGZAG_VERSION (+ six) into $VENV ..."
"$PYTHON" -m venv "$VENV"
# keep the environment out of git without touching the repository's .gitignore
printf '*\n' > "$VENV/.gitignore"
"$VENV/bin/python" -m pip install -q --disable-pip-version-check "zigzag-dse==$ZIGZAG_VERSION" six
if ! check; then
  echo "error: zigzag-dse was installed into $VENV but 'import zigzag.api' fails:" >&2
  "$VENV/bin/python" -c "import zigzag.api" >&2 || true
  exit 1
fi
echo "installed zigzag-dse $ZIGZAG_VERSION in $VENV in $((SECONDS - start)) s"

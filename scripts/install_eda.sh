#!/usr/bin/env bash
# Install the open-source EDA tools that `llmulator characterize` drives (plugins/characterize,
# docs/technology.md):
#   yosys     (Debian 0.23)             synthesis, area against the liberty (`stat -liberty`)
#   iverilog  (Debian 11.0, gives vvp)  gate-level simulation for switching activity
#   opensta   (Debian 2019 snapshot)    critical-path delay (report_checks) and report_power
#   verilator (Debian 5.006) + ccache   the `rtl` profiler's fast simulator (docs/rtl.md; Icarus is the
#                                       fallback); ccache keeps rebuilds of its runtime at ~2 s
# and extracts the OSU 0.18 um standard-cell library (Debian package qflow-tech-osu018: liberty
# osu018_stdcells.lib and cell models osu018_stdcells.v) into a project-local folder, .eda/osu018,
# with `apt-get download` + `dpkg-deb -x`, i.e. without qflow and its dependencies. The package is
# GPL, so it is fetched here rather than vendored into the repository; .eda/ keeps itself out of git.
#
#   scripts/install_eda.sh            # install what is missing (idempotent: a second run does nothing)
#   scripts/install_eda.sh --force    # re-extract the liberty even when it is already there
#
# Environment: EDA_DIR (where to put the liberty; default <repo>/.eda). The characterize flow
# looks in $LLMULATOR_OSU018_DIR, then <repo>/.eda/osu018, then /usr/share/qflow/tech/osu018.
# Needs root (or sudo) for apt-get install; Debian/Ubuntu only.
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
EDA_DIR="${EDA_DIR:-$ROOT/.eda}"
TECH_DIR="$EDA_DIR/osu018"
FORCE=0
if [[ "${1:-}" == "--force" ]]; then
  FORCE=1
elif [[ -n "${1:-}" ]]; then
  echo "usage: $0 [--force]" >&2
  exit 2
fi

start=$SECONDS
if ! command -v apt-get >/dev/null 2>&1; then
  echo "error: apt-get not found. Install yosys, iverilog (with vvp), OpenSTA (binary 'sta'), and optionally verilator and ccache, yourself and put" >&2
  echo "osu018_stdcells.lib and osu018_stdcells.v (Debian package qflow-tech-osu018) into $TECH_DIR" >&2
  echo "or point LLMULATOR_OSU018_DIR at them." >&2
  exit 1
fi
SUDO=""
if [[ "$(id -u)" != "0" ]]; then
  if command -v sudo >/dev/null 2>&1; then
    SUDO="sudo"
  else
    echo "error: installing packages needs root (or sudo)" >&2
    exit 1
  fi
fi
APT=($SUDO env DEBIAN_FRONTEND=noninteractive apt-get -o DPkg::Lock::Timeout=600)

# 1. the tools (apt). Debian package names: yosys, iverilog, opensta (binary /usr/bin/sta), verilator
#    (needs a C++ compiler and make: g++ and make are its dependencies in Debian), ccache.
missing=()
command -v yosys >/dev/null 2>&1 || missing+=(yosys)
{ command -v iverilog >/dev/null 2>&1 && command -v vvp >/dev/null 2>&1; } || missing+=(iverilog)
command -v sta >/dev/null 2>&1 || missing+=(opensta)
command -v verilator >/dev/null 2>&1 || missing+=(verilator)
command -v ccache >/dev/null 2>&1 || missing+=(ccache)
updated=0
if (( ${#missing[@]} )); then
  echo "installing ${missing[*]} (apt) ..."
  "${APT[@]}" update -qq
  updated=1
  "${APT[@]}" install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "yosys, iverilog, opensta, verilator and ccache already installed"
fi

# 2. the OSU018 liberty and cell models, extracted without installing the package
if (( FORCE )) || [[ ! -s "$TECH_DIR/osu018_stdcells.lib" || ! -s "$TECH_DIR/osu018_stdcells.v" ]]; then
  echo "extracting qflow-tech-osu018 into $TECH_DIR ..."
  tmp="$(mktemp -d)"
  chmod 755 "$tmp"   # apt's _apt user downloads into it (else: "Download is performed unsandboxed")
  trap 'rm -rf "$tmp"' EXIT
  (( updated )) || "${APT[@]}" update -qq
  # apt-get download runs as the invoking user and writes into the current directory
  (cd "$tmp" && apt-get download -qq qflow-tech-osu018 >/dev/null)
  deb="$(ls "$tmp"/qflow-tech-osu018_*.deb)"
  dpkg-deb -x "$deb" "$tmp/x"
  src="$tmp/x/usr/share/qflow/tech/osu018"
  [[ -s "$src/osu018_stdcells.lib" && -s "$src/osu018_stdcells.v" ]] || {
    echo "error: $deb has no usr/share/qflow/tech/osu018/osu018_stdcells.{lib,v}" >&2; exit 1; }
  mkdir -p "$TECH_DIR"
  printf '*\n' > "$EDA_DIR/.gitignore"   # keep .eda out of git without touching the repo's .gitignore
  cp "$src"/* "$TECH_DIR"/
  dpkg-deb -f "$deb" Package Version > "$TECH_DIR/PACKAGE"
else
  echo "OSU018 liberty already in $TECH_DIR"
fi

echo "yosys:    $(yosys -V 2>/dev/null | head -1)"
echo "iverilog: $(iverilog -V 2>/dev/null | head -1)"
echo "opensta:  $(sta -version 2>/dev/null | head -1)"
echo "verilator: $(verilator --version 2>/dev/null | head -1)"
echo "ccache:   $(ccache --version 2>/dev/null | head -1)"
echo "liberty:  $TECH_DIR/osu018_stdcells.lib ($(tr '\n' ' ' < "$TECH_DIR/PACKAGE"))"
echo "install_eda: done in $((SECONDS - start)) s"

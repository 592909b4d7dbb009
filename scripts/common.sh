# Sourced by scripts/setup.sh and scripts/test.sh (not run on its own): what both README commands share,
# written once. Each caller keeps its own package list with a reason per package; this file holds only
# the mechanism.

# sudo for apt-get unless already root; apt-get never asks (a README command runs unattended).
KPLAB_SUDO=""
if [ "$(id -u)" != 0 ]; then KPLAB_SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive

# install_missing PACKAGE...: installs the named packages that are not installed yet. Nothing to do
# means no apt-get call at all (no `apt-get update`, no sudo prompt), so a second run costs nothing.
install_missing() {
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  if [ "${#missing[@]}" -gt 0 ]; then
    $KPLAB_SUDO apt-get update -q
    $KPLAB_SUDO apt-get install -y -q "${missing[@]}"
  fi
}

# Options every configure of build/ passes. KPLAB_WERROR from the environment (.ci/run exports ON) reaches
# the first configure, so the whole tree is compiled once with -Werror; unset, the cached value stays (a
# later plain run neither turns it off nor recompiles everything for a changed flag).
KPLAB_CONFIGURE_OPTS=()
if [ -n "${KPLAB_WERROR:-}" ]; then KPLAB_CONFIGURE_OPTS+=(-DKPLAB_WERROR="$KPLAB_WERROR"); fi

# What a user runs, built by scripts/setup.sh (the Python module when the configure found Python's headers);
# scripts/test.sh builds them first too (nothing to do after setup.sh), before the tests that run on them.
kplab_user_targets() {
  echo --target kplab --target kplab_c --target kplab_lua_module
  if grep -qs '^KPLAB_BUILD_PYTHON:BOOL=ON' build/CMakeCache.txt; then echo --target kplab_python; fi
}

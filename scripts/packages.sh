# Sourced by scripts/setup.sh and scripts/test.sh (not run on its own): installs Debian packages the
# way both README commands do. Each caller keeps its own list with a reason per package; this file
# holds only the mechanism, once.

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

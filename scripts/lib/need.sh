# Sourced by scripts/quickstart.sh and scripts/test.sh: `need CMD APT DNF BREW`
# makes sure CMD is on PATH, installing the package through the system's
# package manager when it is missing (saying so first; with sudo when not
# root). It never installs what is there: it says in one line it skipped.
# RLBENCH_INSTALL=no: never install; say the fix and stop (exit 3).

need_failed=0

# The package manager of this machine: apt-get, dnf or brew (or nothing).
need_manager() {
  for m in apt-get dnf brew; do
    if command -v "$m" >/dev/null 2>&1; then echo "$m"; return; fi
  done
}

need_sudo() {
  if [ "$(id -u)" = 0 ] || [ "$1" = brew ]; then
    echo ""
  elif command -v sudo >/dev/null 2>&1; then
    echo "sudo"
  else
    echo "none"
  fi
}

need_apt_updated=""

# need CMD APT_PACKAGE DNF_PACKAGE BREW_PACKAGE (a package may be several
# names in one word, "varnish varnish-modules": they are installed together)
need() {
  local cmd=$1 apt=$2 dnf=$3 brew=$4
  if command -v "$cmd" >/dev/null 2>&1; then
    echo "skipped: $cmd is there ($(command -v "$cmd"))"
    return 0
  fi
  local manager sudo pkg fix
  manager=$(need_manager)
  case "$manager" in
    apt-get) pkg=$apt ;;
    dnf) pkg=$dnf ;;
    brew) pkg=$brew ;;
    *) pkg="" ;;
  esac
  fix="install $cmd (Debian/Ubuntu: sudo apt-get install $apt; Fedora: sudo dnf install $dnf; macOS: brew install $brew)"
  if [ -z "$manager" ] || [ -z "$pkg" ] || [ "${RLBENCH_INSTALL:-yes}" = no ]; then
    echo "rlbench: $cmd not found on PATH: $fix" >&2
    need_failed=1
    return 0
  fi
  sudo=$(need_sudo "$manager")
  if [ "$sudo" = none ]; then
    echo "rlbench: $cmd not found on PATH and not root without sudo: $fix" >&2
    need_failed=1
    return 0
  fi
  echo "installing $pkg with $manager (for $cmd)"
  case "$manager" in
    apt-get)
      if [ -z "$need_apt_updated" ]; then
        $sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
        need_apt_updated=1
      fi
      # Packages must not start their services (a system Redis, nginx on port 80).
      local no_services=""
      if [ ! -e /usr/sbin/policy-rc.d ] && [ -z "$sudo" ]; then
        printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d
        chmod +x /usr/sbin/policy-rc.d
        no_services=1
      fi
      # shellcheck disable=SC2086 # several packages in one word, split on purpose
      $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $pkg >/dev/null || need_failed=1
      if [ -n "$no_services" ]; then rm -f /usr/sbin/policy-rc.d; fi
      ;;
    # shellcheck disable=SC2086
    dnf) $sudo dnf install -y -q $pkg || need_failed=1 ;;
    # shellcheck disable=SC2086
    brew) brew install $pkg || need_failed=1 ;;
  esac
  if ! command -v "$cmd" >/dev/null 2>&1; then
    echo "rlbench: $cmd is still not on PATH after installing $pkg: $fix" >&2
    need_failed=1
  fi
}

# Stops (exit 3, as rlbench does for a missing binary) if anything was missing.
need_done() {
  if [ "$need_failed" != 0 ]; then
    exit 3
  fi
}

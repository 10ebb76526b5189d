# Shared set-up for scripts/run and scripts/test: installs missing Debian packages
# (scripts/packages.txt), then configures and builds one build folder. Source it; do not run it.
# Usage: attnbench_setup [BUILD_DIR [extra cmake args...]]
# Every failure of the set-up itself prints one line `attnbench setup: ...` and exits 2.

ATTNBENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
# Overridable for tests/test_setup.py: the package list and the file that names the system.
ATTNBENCH_PACKAGE_LIST="${ATTNBENCH_PACKAGE_LIST:-$ATTNBENCH_ROOT/scripts/packages.txt}"
ATTNBENCH_OS_RELEASE="${ATTNBENCH_OS_RELEASE:-/etc/os-release}"

attnbench_die() {
  echo "attnbench setup: $*" >&2
  exit 2
}

# Prints the package names of scripts/packages.txt, one a line ('#' starts a comment).
attnbench_packages() {
  sed -e 's/#.*//' "$ATTNBENCH_PACKAGE_LIST" | tr -s ' \t' '\n' | sed '/^$/d'
}

attnbench_missing_packages() {
  local pkg
  for pkg in $(attnbench_packages); do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

# Checks that this is a Debian 12 system with dpkg and apt-get.
attnbench_check_system() {
  local id="" version=""
  if [ -r "$ATTNBENCH_OS_RELEASE" ]; then
    id=$(. "$ATTNBENCH_OS_RELEASE" && echo "${ID:-}")
    version=$(. "$ATTNBENCH_OS_RELEASE" && echo "${VERSION_ID:-}")
  fi
  if [ "$id" != "debian" ] || ! command -v dpkg-query >/dev/null || ! command -v apt-get >/dev/null; then
    attnbench_die "this is not Debian (/etc/os-release says '${id:-nothing}'): the set-up installs Debian 12 packages with apt-get; on another system install the equivalents of scripts/packages.txt by hand, then run cmake -S . -B build && cmake --build build"
  fi
  [ "$version" = "12" ] || echo "attnbench setup: warning: tested on Debian 12, this is Debian ${version:-unknown}" >&2
}

# Installs only what is missing (apt-get update first); needs root or sudo.
attnbench_install_packages() {
  attnbench_check_system
  [ -r "$ATTNBENCH_PACKAGE_LIST" ] || attnbench_die "cannot read the package list $ATTNBENCH_PACKAGE_LIST"
  local missing
  missing=$(attnbench_missing_packages)
  [ -z "$missing" ] && return 0
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo="sudo -n"
    else
      attnbench_die "packages are missing ($(echo $missing)) and installing them needs root: run as root, or as a user with sudo rights, or have an administrator run: apt-get install --no-install-recommends $(echo $missing)"
    fi
  fi
  echo "attnbench: installing missing packages:" $missing >&2
  local log
  log=$(mktemp)
  if ! $sudo apt-get update -qq >"$log" 2>&1; then
    attnbench_die "apt-get update failed (no network or no Debian mirror?): $(grep -m1 -E '^(E|W):' "$log" || tail -n 1 "$log")"
  fi
  # shellcheck disable=SC2086
  if ! DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >"$log" 2>&1; then
    attnbench_die "apt-get install failed: $(grep -m1 '^E:' "$log" || tail -n 1 "$log") (packages from scripts/packages.txt)"
  fi
  rm -f "$log"
}

# Configures (once) and builds BUILD_DIR (default build/, Release) on every core. A configure
# that fails removes its CMakeCache.txt, so that the next run configures afresh.
attnbench_build() {
  local build_dir="${1:-$ATTNBENCH_ROOT/build}"
  shift || true
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    local log
    log=$(mktemp)
    if ! cmake -S "$ATTNBENCH_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >"$log" 2>&1; then
      rm -f "$build_dir/CMakeCache.txt"
      cat "$log" >&2
      attnbench_die "cmake configure of $build_dir failed (the log is above); is a package missing from scripts/packages.txt?"
    fi
    rm -f "$log"
  fi
  cmake --build "$build_dir" -j "$(nproc)"
}

attnbench_setup() {
  attnbench_install_packages
  attnbench_build "$@"
}

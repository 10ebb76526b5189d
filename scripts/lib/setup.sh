# Shared set-up for scripts/run and scripts/test: installs missing Debian packages,
# then configures and builds one build folder. Source it; do not run it.
# Usage: attnbench_setup [BUILD_DIR [extra cmake args...]]

ATTNBENCH_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"

# Debian packages the project builds, tests and plots with. libopenblas0-openmp gives
# python3-torch (built against the generic libblas.so.3) an optimized BLAS, so that the
# PyTorch peer is measured at its best rather than on netlib's reference loops.
ATTNBENCH_PACKAGES=(
  g++ cmake make pkg-config
  libdnnl-dev libcli11-dev libbenchmark-dev libgtest-dev libcsv-dev nlohmann-json3-dev libssl-dev
  python3-torch python3-numpy python3-matplotlib libopenblas0-openmp chromium
)

attnbench_missing_packages() {
  local pkg
  for pkg in "${ATTNBENCH_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || echo "$pkg"
  done
}

# Installs only what is missing (apt-get update first); needs root or sudo.
attnbench_install_packages() {
  local missing
  missing=$(attnbench_missing_packages)
  [ -z "$missing" ] && return 0
  echo "attnbench: installing missing packages:" $missing >&2
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  # shellcheck disable=SC2086
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >/dev/null
}

# Configures (once) and builds BUILD_DIR (default build/, Release) on every core.
attnbench_build() {
  local build_dir="${1:-$ATTNBENCH_ROOT/build}"
  shift || true
  if [ ! -f "$build_dir/CMakeCache.txt" ]; then
    cmake -S "$ATTNBENCH_ROOT" -B "$build_dir" -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
  fi
  cmake --build "$build_dir" -j "$(nproc)"
}

attnbench_setup() {
  attnbench_install_packages
  attnbench_build "$@"
}

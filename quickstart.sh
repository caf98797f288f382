#!/bin/sh
# gpuphase quick start: installs what the build needs (Debian), builds into
# ./build, profiles the bundled demo workload on the simulated GPU and prints
# the report. Safe to run again.
set -eu
cd "$(dirname "$0")"

missing=""
for pkg in meson ninja-build libzstd-dev pkg-config python3 gcc; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing="$missing $pkg"
done
if [ -n "$missing" ]; then
  echo "quickstart: installing$missing"
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq $missing
fi

[ -d build ] || meson setup build
meson compile -C build

out=$(mktemp -d "${TMPDIR:-/tmp}/gpuphase-demo.XXXXXX")
echo "quickstart: profiling the bundled demo on the simulated GPU (tests/simcuda)"
LD_LIBRARY_PATH="$PWD/build/tests/simcuda" \
  build/tools/gpuphase run -o "$out/demo-%p.gph" -- build/tests/simcuda/gpuphase-demo
echo
build/tools/gpuphase-report "$out"/demo-*.gph
echo
echo "quickstart: trace kept in $out; on a machine with an NVIDIA GPU run"
echo "  build/tools/gpuphase run -- YOUR_PROGRAM   then   build/tools/gpuphase-report gpuphase-*.gph"

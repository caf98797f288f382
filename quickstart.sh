#!/bin/sh
# gpuphase quick start: installs what the build needs (Debian), builds into
# ./build, profiles a workload and prints the report: on a machine with an
# NVIDIA GPU, a small CUDA program of known work (tests/gpu/truth.cu); without
# one, the bundled demo on the simulated GPU. Safe to run again.
set -eu
cd "$(dirname "$0")"

missing=""
for pkg in meson ninja-build libzstd-dev zlib1g-dev libdw-dev libunwind-dev pkg-config python3 gcc; do
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
if command -v nvidia-smi >/dev/null 2>&1 && nvidia-smi -L 2>/dev/null | grep -q GPU &&
   command -v nvcc >/dev/null 2>&1; then
  # A real GPU: profile a small CUDA program of known work (spin kernels,
  # pinned and pageable copies, host sleeps; tests/gpu/truth.cu). Its 50
  # spins are NVTX ranges "step", named here: they cover too little of the
  # run (the sleeps and copies) to be found as steps alone.
  echo "quickstart: a GPU is present; profiling tests/gpu/truth.cu on it"
  nvcc -O2 -o build/gpuphase-truth tests/gpu/truth.cu
  build/tools/gpuphase run -o "$out/truth-%p.gph" -- build/gpuphase-truth >/dev/null
  echo
  build/tools/gpuphase-report --step step "$out"/truth-*.gph
elif [ ! -x build/tests/simcuda/gpuphase-demo ]; then
  echo "quickstart: no GPU here, and the simulated GPU needs CUDA 13 headers"
  echo "  (this toolkit is older): built the library and tools only"
  exit 0
else
  echo "quickstart: no GPU here; profiling the bundled demo on the simulated GPU (tests/simcuda)"
  LD_LIBRARY_PATH="$PWD/build/tests/simcuda" \
    build/tools/gpuphase run -o "$out/demo-%p.gph" -- build/tests/simcuda/gpuphase-demo
  echo
  build/tools/gpuphase-report "$out"/demo-*.gph
fi
echo
echo "quickstart: trace kept in $out; to profile your own program:"
echo "  build/tools/gpuphase run -- YOUR_PROGRAM   then   build/tools/gpuphase-report gpuphase-*.gph"

"""gp_py_capture warm: ns per call and per frame at Python depths 10 and 50
(docs/callsites.md, "Python frames").
  python3 bench/pyframes_bench.py [LIB] [ITERS]
LIB: the bench library (default build/bench/libgpuphase-bench-pyframes.so);
run it under each interpreter to compare versions."""
import ctypes
import os
import sys
import time

here = os.path.dirname(os.path.abspath(__file__))
lib = ctypes.CDLL(sys.argv[1] if len(sys.argv) > 1 else
                  os.path.join(here, "..", "build", "bench", "libgpuphase-bench-pyframes.so"))
iters = int(sys.argv[2]) if len(sys.argv) > 2 else 2000000
lib.gp_bench_capture.restype = ctypes.c_double

if not lib.gp_bench_start():
    sys.exit("no Python frames in this interpreter (see stderr)")
deadline = time.monotonic() + 5
while lib.gp_bench_frames() == 0 and time.monotonic() < deadline:
    time.sleep(0.001)


def at_depth(k, fn):
    if k > 0:
        return at_depth(k - 1, fn)
    return fn()


base = at_depth(0, lib.gp_bench_frames)  # frames below at_depth(0)
print("Python %d.%d" % sys.version_info[:2])
for depth in (10, 50):
    n = at_depth(depth - base, lib.gp_bench_frames)
    ns = min(at_depth(depth - base, lambda: lib.gp_bench_capture(iters)) for _ in range(3))
    print("depth %d (%d frames): %.1f ns per call, %.2f ns per frame" % (depth, n, ns, ns / n))

#!/usr/bin/env python3
"""Shim overhead and trace size, reproducible with one command:

    python3 bench/overhead.py [BUILD_DIR] [--runs N] [--calls N]

Runs the overhead benchmark (bench/overhead.c) on the simulated GPU several
times, alternating runs without the shim, with it, and with it but CUPTI
off (GPUPHASE_CUPTI=0), and reports medians:
  - added ns per cudaLaunchKernel inside one process (wrapper vs the
    runtime's own symbol, alternating rounds) with CUPTI off: the hot
    path's own cost (two timestamps, a store into the thread's buffer);
  - ns per call with the shim against a run without it, with CUPTI off
    and on: everything, including the (simulated) CUPTI producing activity
    records and the writer thread that compresses them;
  - bytes per event on disk of the trace of the last run."""
import argparse
import glob
import os
import re
import statistics
import subprocess
import sys
import tempfile


def parse(out):
    return {k: float(v) for k, v in re.findall(r"^(\w+) (-?[\d.]+)$", out, re.M)}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100000, help="calls per round (11 rounds per path)")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    exe = os.path.join(b, "bench", "gpuphase-bench-overhead")
    lib = os.path.join(b, "preload", "libgpuphase.so")
    report = os.path.join(b, "tools", "gpuphase-report")
    sim = os.path.join(b, "tests", "simcuda")
    for p in (exe, lib, report):
        if not os.path.exists(p):
            sys.exit(f"overhead.py: {p} not found; build first (meson compile -C {a.build})")
    base = dict(os.environ, LD_LIBRARY_PATH=sim)
    base.pop("LD_PRELOAD", None)
    work = tempfile.mkdtemp(prefix="gp-bench-")
    without, with_, added, hot, hot_call = [], [], [], [], []
    trace = None
    for i in range(a.runs):
        r = subprocess.run([exe, str(a.calls)], env=base, capture_output=True, text=True, check=True)
        without.append(parse(r.stdout)["interposed_ns"])
        out = os.path.join(work, f"run{i}.gph")
        env = dict(base, LD_PRELOAD=lib, GPUPHASE_OUTPUT=out)
        r = subprocess.run([exe, str(a.calls)], env=env, capture_output=True, text=True, check=True)
        v = parse(r.stdout)
        if v.get("preloaded") != 1:
            sys.exit("overhead.py: the shim was not preloaded")
        with_.append(v["interposed_ns"])
        added.append(v["added_ns"])
        trace = out
        env = dict(base, LD_PRELOAD=lib, GPUPHASE_CUPTI="0", GPUPHASE_QUIET="1",
                   GPUPHASE_OUTPUT=os.path.join(work, f"hot{i}.gph"))
        r = subprocess.run([exe, str(a.calls)], env=env, capture_output=True, text=True, check=True)
        v2 = parse(r.stdout)
        hot.append(v2["added_ns"])
        hot_call.append(v2["interposed_ns"])
    d = subprocess.run([report, "dump", trace], capture_output=True, text=True, check=True).stdout
    kinds = {}
    for line in d.splitlines():
        k = line.split(" ", 1)[0]
        kinds[k] = kinds.get(k, 0) + 1
    events = kinds.get("api", 0) + kinds.get("kernel", 0)
    lost = sum(int(x) for x in re.findall(r"^summary .*?\blost=(\d+)", d, re.M))
    size = os.path.getsize(trace)
    calls = int(v["calls"])
    print(f"runs: {a.runs} (each {calls} cudaLaunchKernel calls, 1-block kernels, simulated GPU)")
    print(f"added by the wrapper, same process, CUPTI off (median of per-run medians): "
          f"{statistics.median(hot):.1f} ns/call")
    m0 = statistics.median(without)
    print(f"per call without shim: {m0:.1f} ns; with shim, CUPTI off: "
          f"{statistics.median(hot_call):.1f} ns (+{statistics.median(hot_call) - m0:.1f}); "
          f"with shim and CUPTI: {statistics.median(with_):.1f} ns "
          f"(+{statistics.median(with_) - m0:.1f})")
    print(f"trace: {size} bytes for {events} events ({kinds.get('api', 0)} API + "
          f"{kinds.get('kernel', 0)} kernel records), lost {lost}: {size / max(events, 1):.2f} bytes/event")
    return 0


if __name__ == "__main__":
    sys.exit(main())

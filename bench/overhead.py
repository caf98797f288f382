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
  - bytes per event on disk of the trace of the last run.

With --stacks, instead: what the call-site capture costs (docs/callsites.md),
medians of --runs runs:
  - warm capture (gpuphase-bench-stacks: the capture alone, no GPU): ns
    per capture of a stack the thread has seen, 0, 32 and 96 frames below
    main, and the slope per frame;
  - cold capture: ns per new stack (120 stacks, the thread's first);
  - a sync-heavy loop on the simulated GPU (a 1-block launch and
    cudaStreamSynchronize per step), runs with GPUPHASE_STACKS=sync and
    off alternating (CUPTI off): median time per step, sync over off.

With --callgrind, instead: instruction counts under valgrind's callgrind
(--separate-threads=yes, CUPTI off), which machine noise does not move:
gpuphase's own instructions per launch in the launching thread (the
wrapped path alone: the runtime wrapper and the driver call nested under
it), and the writer thread's instructions per API record, inclusive
(clock conversion, encoding, zstd), each with the functions they go to;
with --cupti as well, CUPTI on (the writer per API or kernel record)."""
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


# ours: code of preload/, trace/ and cupti/ (inlined header lines included)
OURS = re.compile(r"/(preload|trace|cupti)/")


def annotate(path):
    """(function, instructions) of one callgrind output, self cost."""
    out = subprocess.run(["callgrind_annotate", "--auto=no", "--threshold=100", path],
                         capture_output=True, text=True, check=True).stdout
    rows = []
    for line in out.splitlines():
        m = re.match(r"^\s*([\d,]+) +\([^)]*\) +(\S.*)$", line)
        if m and "PROGRAM TOTALS" not in line:
            rows.append((m.group(2), int(m.group(1).replace(",", ""))))
    return rows


def short(name):
    name = re.sub(r" \[.*\]$", "", name)
    return re.sub(r"^.*/((preload|trace|cupti)/)", r"\1", name)


def callgrind(exe, lib, sim, report, paths, cupti=False):
    work = tempfile.mkdtemp(prefix="gp-callgrind-")
    env = dict(os.environ, LD_LIBRARY_PATH=sim, LD_PRELOAD=lib, GPUPHASE_CUPTI="1" if cupti else "0",
               GPUPHASE_QUIET="1", GPUPHASE_OUTPUT=os.path.join(work, "t.gph"))
    subprocess.run(["valgrind", "--tool=callgrind", "--separate-threads=yes",
                    exe, "20000", "1", paths], env=env, cwd=work, capture_output=True, check=True)
    info = subprocess.run([report, "info", os.path.join(work, "t.gph")],
                          capture_output=True, text=True, check=True).stdout
    api = int(re.search(r"\bapi (\d+)", info).group(1))
    if cupti:  # the writer's records: API and kernel
        m = re.search(r"\bkernel (\d+)", info)
        api += int(m.group(1)) if m else 0
    return api, {t: annotate(glob.glob(os.path.join(work, f"callgrind.out.*-0{t}"))[0]) for t in (1, 2)}


def count_instructions(exe, lib, sim, report, cupti=False):
    # launching thread: the interposed path alone (22,001 launches with the
    # warm-up); what runs once (start-up, dlsym's lookups) is left out
    _, cg = callgrind(exe, lib, sim, report, "interposed", cupti)
    launches = 22001
    ours = [(short(n), v) for n, v in cg[1] if OURS.search(n) and v >= launches
            and "gp_wrap_lookup" not in n]
    print(f"launching thread: {sum(v for _, v in ours) / launches:.1f} instructions of gpuphase's "
          f"per launch (cudaLaunchKernel, CUPTI {'on' if cupti else 'off'}, {launches} launches)")
    for n, v in sorted(ours, key=lambda x: -x[1]):
        print(f"  {v / launches:7.1f}  {n}")
    # writer thread: both paths (the direct path's driver calls are recorded too)
    api, cg = callgrind(exe, lib, sim, report, "both", cupti)
    rows = cg[2]
    total = sum(v for _, v in rows)
    zstd = sum(v for n, v in rows if "libzstd" in n)
    mine = [(short(n), v) for n, v in rows if OURS.search(n) and "libzstd" not in n]
    own = sum(v for _, v in mine)
    what = "API or kernel record" if cupti else "API record"
    print(f"writer thread: {total / api:.1f} instructions per {what} ({api} records): "
          f"gpuphase {own / api:.1f}, zstd {zstd / api:.1f}, other {(total - own - zstd) / api:.1f}")
    for n, v in sorted(mine, key=lambda x: -x[1]):
        if v / api >= 0.5:
            print(f"  {v / api:7.1f}  {n}")
    return 0


def stacks(exe, lib, base, work, a):
    bench = os.path.join(os.path.dirname(exe), "gpuphase-bench-stacks")
    cap = []
    for _ in range(a.runs):
        r = subprocess.run([bench, str(a.calls // 5), "11"], env=base,
                           capture_output=True, text=True, check=True)
        cap.append(parse(r.stdout))
    loop = {"off": [], "sync": []}
    for i in range(a.runs):
        for mode in ("off", "sync"):
            env = dict(base, LD_PRELOAD=lib, GPUPHASE_CUPTI="0", GPUPHASE_QUIET="1",
                       GPUPHASE_STACKS=mode,
                       GPUPHASE_OUTPUT=os.path.join(work, f"{mode}{i}.gph"))
            r = subprocess.run([exe, str(a.calls // 10), "11", "stacks"], env=env,
                               capture_output=True, text=True, check=True)
            loop[mode].append(parse(r.stdout)["loop_ns"])

    def med(key):
        return statistics.median(v[key] for v in cap)

    print(f"runs: {a.runs} (capture: {a.calls // 5} calls per depth and round, "
          f"11 rounds; loop: {a.calls // 100} steps a round, 11 rounds)")
    print(f"warm capture: {med('warm_d0_ns'):.0f} ns at main+0 frames (5 native "
          f"frames kept), {med('warm_d32_ns'):.0f} at +32, {med('warm_d96_ns'):.0f} at +96; "
          f"{med('per_frame_ns'):.1f} ns per frame")
    print(f"cold capture (a new stack of 5-124 frames, the thread's first): "
          f"{med('cold_ns'):.0f} ns; the same stacks warm: {med('warm_sweep_ns'):.0f} ns")
    lo, ls = statistics.median(loop["off"]), statistics.median(loop["sync"])
    print(f"sync-heavy loop (launch + cudaStreamSynchronize, simulated GPU): "
          f"off {lo:.0f} ns/step, sync {ls:.0f} ns/step, ratio {ls / lo:.3f}")
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("--calls", type=int, default=100000, help="calls per round (11 rounds per path)")
    ap.add_argument("--stacks", action="store_true",
                    help="the call-site capture's cost (sync against off)")
    ap.add_argument("--callgrind", action="store_true",
                    help="count instructions under callgrind instead of timing")
    ap.add_argument("--cupti", action="store_true",
                    help="with --callgrind: CUPTI on (the writer per API or kernel record)")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    exe = os.path.join(b, "bench", "gpuphase-bench-overhead")
    lib = os.path.join(b, "preload", "libgpuphase.so")
    report = os.path.join(b, "tools", "gpuphase-report")
    sim = os.path.join(b, "tests", "simcuda")
    for p in (exe, lib, report):
        if not os.path.exists(p):
            sys.exit(f"overhead.py: {p} not found; build first (meson compile -C {a.build})")
    if a.callgrind:
        return count_instructions(exe, lib, os.path.join(b, "tests", "simcuda"), report,
                                  a.cupti)
    base = dict(os.environ, LD_LIBRARY_PATH=sim)
    base.pop("LD_PRELOAD", None)
    work = tempfile.mkdtemp(prefix="gp-bench-")
    if a.stacks:
        return stacks(exe, lib, base, work, a)
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

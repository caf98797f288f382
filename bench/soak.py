#!/usr/bin/env python3
"""Soak test of the shim on the simulated GPU (not in CI).

    python3 bench/soak.py BUILD [--minutes 10] [--threads 16] [--keep DIR]

Runs `tests/e2e/prog_harden.c`'s soak workload under libgpuphase for the
given time: THREADS worker threads making mixed calls (launches, memsets,
copies, synchronisations, allocations and frees), each replaced by a new
thread after a random number of calls; every 2 s a child forked and exec'd
that launches until the parent ends it with SIGTERM; SIGUSR1 sent every
100 ms and counted by the program's own handler. Then checks:

- every event is recorded or counted lost: the parent's API records plus
  its lost events equal the calls the program made, its device records
  plus lost the device work those calls caused (both counted by the
  program itself); each child's trace is complete (ended by its SIGTERM)
  and none of its kernel records lacks its launch beyond its lost count;
- memory stays flat: the parent's resident memory, sampled every second
  after the first minute (or first quarter), has a median over the last
  quarter of those samples no more than 4 MB + 5% above the median over
  the first quarter (single samples swing with the live threads' rings);
- the program's own SIGUSR1 handler ran.

Prints the figures docs/performance.md quotes; exits 0 when every check
holds, 1 otherwise.
"""
import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time


def rss_kb(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return None


def info(report, path):
    """Records by kind, lost events and status from `gpuphase-report info`."""
    out = subprocess.run([report, "info", path], capture_output=True, text=True).stdout
    kinds = {}
    m = re.search(r"^records:\s+\d+ \((.*)\)$", out, re.M)
    if m:
        for part in m.group(1).split(", "):
            k, v = part.rsplit(" ", 1)
            kinds[k] = int(v)
    lost = re.search(r"^lost events:\s+(\d+)", out, re.M)
    status = re.search(r"^status:\s+(\S+)", out, re.M)
    return kinds, int(lost.group(1)) if lost else 0, status.group(1) if status else "?"


def sampler(pid, samples, stop):
    while not stop.is_set():
        r = rss_kb(pid)
        if r is not None:
            samples.append((time.monotonic(), r))
        stop.wait(1.0)


def signaller(pid, stop, sent):
    while not stop.wait(0.1):
        try:
            os.kill(pid, signal.SIGUSR1)
            sent[0] += 1
        except ProcessLookupError:
            return


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("build", help="meson build directory")
    ap.add_argument("--minutes", type=float, default=10)
    ap.add_argument("--threads", type=int, default=16)
    ap.add_argument("--keep", help="write the traces here and keep them")
    a = ap.parse_args()
    b = os.path.abspath(a.build)
    prog = os.path.join(b, "tests/e2e/e2e-prog-harden")
    report = os.path.join(b, "tools/gpuphase-report")
    lib = os.path.join(b, "preload/libgpuphase.so")
    for f in (prog, report, lib):
        if not os.path.exists(f):
            sys.exit(f"soak: {f} missing (build {b} first)")
    out = a.keep or tempfile.mkdtemp(prefix="gp-soak-")
    os.makedirs(out, exist_ok=True)
    secs = int(a.minutes * 60)
    env = dict(os.environ, LD_PRELOAD=lib, GPUPHASE_OUTPUT=os.path.join(out, "soak-%p.gph"),
               LD_LIBRARY_PATH=os.path.join(b, "tests/simcuda"))
    env.pop("GPUPHASE_DISABLE", None)

    def defaults():
        for s in (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGUSR1):
            signal.signal(s, signal.SIG_DFL)

    t0 = time.monotonic()
    p = subprocess.Popen([prog, "soak", str(secs), str(a.threads)], env=env,
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                         preexec_fn=defaults)
    if p.stdout.readline().strip() != "ready":
        sys.exit("soak: the workload did not start: " + p.stderr.read())
    samples, sent, stop = [], [0], threading.Event()
    ts = [threading.Thread(target=sampler, args=(p.pid, samples, stop)),
          threading.Thread(target=signaller, args=(p.pid, stop, sent))]
    for t in ts:
        t.start()
    stdout, stderr = p.communicate()
    stop.set()
    for t in ts:
        t.join()
    wall = time.monotonic() - t0
    fails = []

    def check(cond, msg):
        print(("ok    " if cond else "FAIL  ") + msg)
        if not cond:
            fails.append(msg)

    m = re.search(r"calls=(\d+) device=(\d+) children=(\d+) usr1=(\d+)", stdout)
    check(p.returncode == 0 and m and "FAILED" not in stdout,
          f"workload exit {p.returncode}: {stdout.strip()} {stderr.strip()[-300:]}")
    if not m:
        return 1
    calls, device, children, usr1 = map(int, m.groups())
    traces = sorted(f for f in os.listdir(out) if f.endswith(".gph"))
    parent = os.path.join(out, f"soak-{p.pid}.gph")
    check(os.path.exists(parent), f"parent trace {parent}")
    kinds, lost, status = info(report, parent)
    api = kinds.get("api", 0)
    dev = sum(kinds.get(k, 0) for k in ("kernel", "memcpy", "memset", "sync"))
    size = os.path.getsize(parent)
    print(f"      parent: {calls} calls, {device} device records made; trace "
          f"{size / 1e6:.1f} MB, {api} API + {dev} device records, {lost} lost")
    check(status == "complete", f"parent trace {status}")
    check(api + dev + lost == calls + device and api <= calls and dev <= device,
          f"recorded or lost: {api} + {dev} + {lost} lost vs {calls} + {device} made")
    kids = [os.path.join(out, f) for f in traces if os.path.join(out, f) != parent]
    bad = []
    for k in kids:
        kk, kl, ks = info(report, k)
        if ks != "complete" or kk.get("kernel", 0) > kk.get("api", 0) + kl:
            bad.append(f"{os.path.basename(k)}: {ks} {kk} lost {kl}")
    check(len(kids) == children and not bad,
          f"{children} children ended by SIGTERM, {len(kids)} traces, all complete "
          f"with their launches{': ' + '; '.join(bad[:3]) if bad else ''}")
    check(usr1 > 0, f"SIGUSR1: {sent[0]} sent, {usr1} seen by the program's handler "
          "(standard signals merge)")
    if len(samples) >= 4:
        warm = min(60.0, wall / 4)
        late = [r for t, r in samples if t - t0 >= warm] or [samples[-1][1]]
        # A ring's pages are touched as its thread makes calls, and the
        # workload's threads live a random number of calls: the sum of the
        # live rings swings by several MB from second to second. A leak is
        # a trend: the median of the last quarter of the samples after the
        # warm-up against that of the first.
        q = max(1, len(late) // 4)
        first_med = sorted(late[:q])[q // 2]
        last_med = sorted(late[-q:])[q // 2]
        grow = last_med - first_med
        print(f"      RSS after {warm:.0f} s: median {first_med / 1024:.1f} MB over the "
              f"first quarter, {last_med / 1024:.1f} MB over the last, from "
              f"{min(late) / 1024:.1f} to {max(late) / 1024:.1f} MB ({len(samples)} samples)")
        check(grow <= 4096 + first_med * 0.05, f"RSS flat: grew {grow / 1024:.1f} MB")
    rate = (calls + device) / wall
    print(f"      {wall:.0f} s, {rate / 1e3:.0f} k events/s, {children} children")
    if not a.keep:
        shutil.rmtree(out, ignore_errors=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

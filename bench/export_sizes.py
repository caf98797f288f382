#!/usr/bin/env python3
"""Sizes and costs of the timeline exports (docs/export.md), one command:

    python3 bench/export_sizes.py [BUILD_DIR] [--events N] [--runs R] [--input FILE]

Writes a synthetic trace of about N records with gpuphase-report-bench
(default 2,000,000; --input FILE exports a trace of yours instead), then
exports it R times (default 3) in each format: Perfetto, Perfetto gzipped,
Chrome JSON, Chrome JSON gzipped. Reports per format the file size, bytes
per record of the trace (every record but STRING, THREAD, API_DEF, DEVICE
and SUMMARY: calls, device records, ranges), the median wall time and the
largest peak resident set of the exporting process."""
import argparse
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

FORMATS = [("perfetto", "pftrace"), ("perfetto", "pftrace.gz"),
           ("chrome", "json"), ("chrome", "json.gz")]
UNTIMED = {"string", "thread", "api_def", "device", "summary"}


def timed_records(report, path):
    """The trace's records with a place on the timeline, from `info`."""
    p = subprocess.run([report, "info", path], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"export_sizes: {p.stderr.strip()}")
    out = p.stdout
    m = re.search(r"^records:\s+\d+ \((.*)\)$", out, re.M)
    if not m:
        sys.exit(f"export_sizes: no record counts in the info of {path}")
    return sum(int(n) for kind, n in (x.split() for x in m.group(1).split(", "))
               if kind not in UNTIMED)


def export(report, fmt, trace, out):
    """One export: wall seconds and the exporting process's peak RSS (KiB)."""
    with tempfile.TemporaryFile() as err:
        t0 = time.monotonic()
        p = subprocess.Popen([report, "-f", fmt, "-o", out, trace],
                             stdout=subprocess.DEVNULL, stderr=err)
        _, status, usage = os.wait4(p.pid, 0)
        wall = time.monotonic() - t0
        p.returncode = os.waitstatus_to_exitcode(status)
        if p.returncode != 0:
            err.seek(0)
            sys.exit(f"export_sizes: {fmt} export failed ({p.returncode}): "
                     f"{err.read().decode(errors='replace').strip()}")
    return wall, usage.ru_maxrss


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("build", nargs="?", default="build")
    ap.add_argument("--events", type=int, default=2000000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--input", help="export this trace instead of a synthetic one")
    a = ap.parse_args()
    report = os.path.join(a.build, "tools", "gpuphase-report")
    bench = os.path.join(a.build, "reports", "gpuphase-report-bench")
    if not os.access(report, os.X_OK):
        sys.exit(f"export_sizes: no {report}: build first (meson compile -C {a.build})")
    with tempfile.TemporaryDirectory(prefix="gp-export-") as d:
        trace = a.input
        if not trace:
            trace = os.path.join(d, "synthetic.gph")
            subprocess.run([bench, "--events", str(a.events), "--runs", "1", "--keep", trace],
                           check=True, capture_output=True)
        n = timed_records(report, trace)
        print(f"trace {trace}: {os.path.getsize(trace):,} bytes, {n:,} timed records")
        print(f"{'format':<20} {'size':>14} {'B/record':>9} {'median s':>9} {'peak RSS':>10}")
        for fmt, ext in FORMATS:
            out = os.path.join(d, "out." + ext)
            walls, rss = [], 0
            for _ in range(a.runs):
                w, r = export(report, fmt, trace, out)
                walls.append(w)
                rss = max(rss, r)
            size = os.path.getsize(out)
            print(f"{fmt + ' .' + ext:<20} {size:>14,} {size / n:>9.1f} "
                  f"{statistics.median(walls):>9.2f} {rss / 1024:>8.1f} MB")
            os.unlink(out)


if __name__ == "__main__":
    main()

"""Helpers for the end-to-end tests: run programs under the shim on the
simulated GPU and read traces back through `gpuphase-report dump`."""
import glob
import math
import os
import re
import subprocess
import sys
import tempfile

B = os.environ  # paths come from meson (tests/e2e/meson.build)
LIB = B["GP_LIB"]
REPORT = B["GP_REPORT"]
RUN = B["GP_RUN"]
SIMDIR = B["GP_SIMDIR"]
PROGDIR = B["GP_PROGDIR"]
PRELOAD_PREFIX = B.get("GP_PRELOAD_PREFIX", "")

# The simulated GPU's model (tests/simcuda/README.md), default settings.
SMS, WAVE_NS, PCIE_GBPS, HBM_GBPS, COPY_LAT_NS = 132, 10000, 25, 3000, 2000


def kernel_ns(blocks):
    return math.ceil(blocks / SMS) * WAVE_NS


def copy_ns(nbytes, gbps):
    return COPY_LAT_NS + math.ceil(nbytes / gbps)


class Fail(Exception):
    pass


def check(cond, msg):
    if not cond:
        raise Fail(msg)


def env(extra=None, preload=True):
    e = dict(os.environ)
    e["LD_LIBRARY_PATH"] = SIMDIR + (":" + e["LD_LIBRARY_PATH"] if e.get("LD_LIBRARY_PATH") else "")
    if preload:
        e["LD_PRELOAD"] = (PRELOAD_PREFIX + ":" if PRELOAD_PREFIX else "") + LIB
    elif PRELOAD_PREFIX:
        e["LD_PRELOAD"] = PRELOAD_PREFIX  # sanitizer runtime, never the shim
    else:
        e.pop("LD_PRELOAD", None)
    e.pop("GPUPHASE_OUTPUT", None)
    for k, v in (extra or {}).items():
        if v is None:
            e.pop(k, None)
        else:
            e[k] = v
    return e


def workdir():
    return tempfile.mkdtemp(prefix="gp-e2e-")


def prog(name):
    return os.path.join(PROGDIR, name)


def run(args, cwd, extra=None, preload=True, timeout=60, **kw):
    return subprocess.run(args, cwd=cwd, env=env(extra, preload), timeout=timeout,
                          capture_output=True, text=True, **kw)


def traces(d):
    return sorted(glob.glob(os.path.join(d, "*.gph")))


FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def parse_value(v):
    if v.startswith('"'):
        return v[1:-1]
    try:
        return int(v)
    except ValueError:
        return v


def dump(path, allow_fail=False):
    p = subprocess.run([REPORT, "dump", path], capture_output=True, text=True,
                       timeout=60, env=env(preload=False))
    if p.returncode != 0 and not allow_fail:
        raise Fail(f"dump {path} failed ({p.returncode}): {p.stderr.strip()}")
    recs = []
    for line in p.stdout.splitlines():
        parts = line.split(None, 1)
        if not parts:
            continue
        r = {"kind": parts[0]}
        if len(parts) > 1:
            for k, v in FIELD.findall(parts[1]):
                r[k] = parse_value(v)
        recs.append(r)
    return recs, p


def info(path):
    p = subprocess.run([REPORT, "info", path], capture_output=True, text=True,
                       timeout=60, env=env(preload=False))
    return p


def by_kind(recs, kind):
    return [r for r in recs if r["kind"] == kind]


def api_calls(recs):
    """API records with their function name resolved through API_DEF."""
    names = {r["api"]: r["name"] for r in by_kind(recs, "api_def")}
    out = []
    for r in by_kind(recs, "api"):
        r = dict(r)
        r["fn"] = names.get(r["api"], "?")
        out.append(r)
    return out


def main(tests):
    if len(sys.argv) != 2 or sys.argv[1] not in tests:
        print("usage: %s TEST (one of %s)" % (sys.argv[0], ", ".join(sorted(tests))))
        return 2
    try:
        tests[sys.argv[1]]()
    except Fail as e:
        print("FAIL:", e)
        return 1
    print("ok")
    return 0


# ---- Runs for the compare tests (test_compare.py)

def profile(cmd, d, extra=None, timeout=100):
    """Runs CMD once under `gpuphase run` (so its processes share one run
    id), traces written into folder D; returns the traces it added."""
    before = set(traces(d))
    extra = dict(extra or {}, MALLOC_PERTURB_=None)  # see test_report.py
    p = run([RUN, "run", "-o", os.path.join(d, "t-%p.gph"), "--"] + [str(a) for a in cmd],
            d, extra, preload=False, timeout=timeout)
    check(p.returncode == 0, f"{cmd}: failed ({p.returncode}): {p.stderr.strip()}")
    added = sorted(set(traces(d)) - before)
    check(added, f"{cmd}: no trace written")
    return added


def ab_runs(cmd_a, cmd_b, n, extra_a=None, extra_b=None):
    """N runs of A and of B, interleaved A B A B ... as a CI job should run
    them; returns the traces of A and of B."""
    da, db = workdir(), workdir()
    for _ in range(n):
        profile(cmd_a, da, extra_a)
        profile(cmd_b, db, extra_b)
    return traces(da), traces(db)


def report_cmd(args, extra=None, timeout=120):
    """gpuphase-report ARGS (e.g. compare ... or check ...), not profiled."""
    return subprocess.run([REPORT] + [str(a) for a in args], capture_output=True, text=True,
                          timeout=timeout, env=env(extra, preload=False))

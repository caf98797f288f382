"""Measured counters on the simulated stack: the shim's sampler reading the
simulated NVML and GPM (tests/simcuda/README.md, "Counters" and "NVML").

Expected values come from the model applied to the trace's own KERNEL
records: GPU-Util of an NVML sample = share of its period with a kernel
running (rounded to a whole percent by NVML); GPM sm_active = time-average
of min(1, blocks / 132); tensor_active = the profile's factor x SM share.
Tolerances:
  * NVML samples: 0.5 (NVML's rounding) + 0.25 points: the period's edges
    come from two pairs of clock readings (the simulator's at nvmlInit and
    the shim's per batch), each off by at most half its gap; 0.25 points
    of a 1/6 s period are 0.4 ms at each edge, far above a gap of
    microseconds, so a preempted reading would have to lose on all of its
    pairs.
  * GPM intervals: the sampler times an interval by the middle of its
    nvmlGpmSampleGet call, the simulator inside the call: each edge is off
    by at most one call (microseconds; a few ms if the thread is
    preempted), so 3 % of the value (6 ms of a 200 ms interval) + 0.002
    points; intervals shorter than 50 ms (the last one, cut by the exit)
    are not judged.
"""
import subprocess
import sys

from gptest import (Fail, by_kind, check, dump, env, main, prog, run, traces,
                    workdir)

PROG = "e2e-prog-counters"
NVML, GPM = 1, 2
MISSING, DENIED, BUSY, UNSUPPORTED, OFF = 1, 2, 3, 4, 7
SMS = 132
BASE = {"GPUPHASE_SAMPLE_MS": "50", "GPUSIM_API_NS": "20000",
        "GPUSIM_NVML": None, "GPUSIM_NVML_ORDER": None, "GPUSIM_DEVICES": None,
        "GPUSIM_KERNEL_PROFILE": None, "GPUPHASE_NVML": None}


def record(args, extra=None):
    d = workdir()
    e = dict(BASE, **(extra or {}))
    e["GPUPHASE_OUTPUT"] = "t.gph"
    p = run([prog(PROG)] + [str(a) for a in args], d, e, timeout=90)
    check(p.returncode == 3, f"{args}: exit {p.returncode}, expected 3: {p.stderr}")
    t = traces(d)
    check(len(t) == 1, f"{args}: traces {t}")
    recs, _ = dump(t[0])
    return recs, p


def metrics(recs):
    return {r["metric"]: r for r in by_kind(recs, "metric")}


def samples(recs, device, name, source=None):
    m = metrics(recs)
    ids = {i for i, r in m.items() if r["device"] == device and r["name"] == name
           and (source is None or r["source"] == source)}
    return [r for r in by_kind(recs, "sample") if r["metric"] in ids]


def value(s, recs):
    return s["value"] / metrics(recs)[s["metric"]]["scale"]


def kernels(recs, device):
    ks = sorted((k["start"], k["end"]) for k in by_kind(recs, "kernel")
                if k["device"] == device)
    merged = []
    for s, e in ks:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    return merged


def busy(merged, t0, t1):
    return sum(max(0, min(e, t1) - max(s, t0)) for s, e in merged) / (t1 - t0)


def well_formed(recs):
    """METRIC before its SAMPLEs; the sampler's records in start order."""
    seen, last = set(), 0
    for r in recs:
        if r["kind"] == "metric":
            seen.add(r["metric"])
        elif r["kind"] in ("sample", "sampler"):
            if r["kind"] == "sample":
                check(r["metric"] in seen, f"sample before its metric: {r}")
                check(r["end"] >= r["start"], f"sample ends before it starts: {r}")
            check(r["start"] >= last, f"sampler records out of order at {r}")
            last = r["start"]


def statuses(recs, device):
    return {(r["source"], r["status"]) for r in by_kind(recs, "sampler")
            if r["device"] == device}


def check_gpu_util(recs, device, merged, min_samples):
    ss = samples(recs, device, "gpu_util", NVML)
    check(len(ss) >= min_samples, f"device {device}: {len(ss)} gpu_util samples, "
          f"expected >= {min_samples}")
    tot_w = tot_v = tot_b = 0
    for s in ss:
        exp = 100 * busy(merged, s["start"], s["end"])
        got = value(s, recs)
        check(abs(got - exp) <= 0.75,
              f"device {device}: gpu_util {got} over [{s['start']},{s['end']}), "
              f"model {exp:.3f}")
        w = s["end"] - s["start"]
        tot_w += w
        tot_v += got * w
        tot_b += exp * w
    if tot_w:
        check(abs(tot_v - tot_b) / tot_w <= 0.75,
              f"time-weighted gpu_util {tot_v / tot_w:.2f} vs busy {tot_b / tot_w:.2f}")
    return ss, (tot_b / tot_w if tot_w else 0)


def check_gpm(recs, device, name, merged, factor, min_intervals):
    """GPM NAME over each interval = factor x busy share (percent)."""
    ss = [s for s in samples(recs, device, name, GPM) if s["end"] - s["start"] >= 50e6]
    check(len(ss) >= min_intervals, f"{name}: {len(ss)} GPM intervals, "
          f"expected >= {min_intervals}")
    for s in ss:
        exp = factor * 100 * busy(merged, s["start"], s["end"])
        got = value(s, recs)
        check(abs(got - exp) <= 0.03 * exp + 0.002,
              f"{name} {got} over [{s['start']},{s['end']}), model {exp:.4f}")
    return ss


def t_launch():
    recs, _ = record(["launch", 1500])
    well_formed(recs)
    check((NVML, 0) in statuses(recs, 0) and (GPM, 0) in statuses(recs, 0),
          f"SAMPLER OK records: {statuses(recs, 0)}")
    merged = kernels(recs, 0)
    check(merged, "no kernels")
    # 1.5 s of 1/6 s periods: 9, less the last (cut by the exit), less
    # what a loaded machine (sanitizers) delays
    _, avg = check_gpu_util(recs, 0, merged, 4)
    # launch-bound: the device is idle part of the time, busy part of it
    check(0.5 < avg < 95, f"busy {avg:.1f} %: the loop is not launch-bound")
    # one block on 132 SMs: sm_active = busy / 132
    check_gpm(recs, 0, "sm_active", merged, 1.0 / SMS, 3)
    # the instants: memory used = the 1 MiB allocation + the context (512 MiB)
    mem = [value(s, recs) for s in samples(recs, 0, "mem_used")]
    check(mem and max(mem) == (1 << 20) + (512 << 20), f"mem_used {set(mem)}")
    procs = [value(s, recs) for s in samples(recs, 0, "procs")]
    check(procs and max(procs) == 1, f"procs {set(procs)}")


def t_idle_start():
    """A run that starts idle keeps NVML's first period: the simulated NVML
    starts its periods with the first nvmlInit, the sampler's, once
    recording has started; the first of them (400 ms idle here, GPU-Util
    0) was the base of the next and left out, so the run's GPU-Util read
    about half again the device's busy time (58% against 39% busy for
    prog_pm's 300 ms idle and 200 ms busy). Every period from the first
    one is kept, each matching the model, and the first starts within a
    few ms of the recording's first call."""
    recs, _ = record(["idle", 700])
    well_formed(recs)
    merged = kernels(recs, 0)
    check(merged, "no kernels")
    ss, _ = check_gpu_util(recs, 0, merged, 5)
    first_call = min(r["start"] for r in by_kind(recs, "api"))
    first = min(s["start"] for s in ss)
    # NVML's periods start at the sampler's nvmlInit, after the trace's first
    # call and its set-up: well under one 1/6 s period (before, 167 ms)
    check(first - first_call < 60e6,
          f"first gpu_util period starts {(first - first_call) / 1e6:.1f} ms "
          f"after the first call")
    zero = [s for s in ss if s["end"] <= merged[0][0]]
    check(zero and all(value(s, recs) == 0 for s in zero),
          f"idle periods before the first kernel: {[value(s, recs) for s in zero]}")


def t_tensor():
    recs, _ = record(["tensor", 1500], {"GPUSIM_KERNEL_PROFILE": "gemm*:tensor=0.8"})
    well_formed(recs)
    merged = kernels(recs, 0)
    check_gpm(recs, 0, "tensor_active", merged, 0.8, 3)
    check_gpm(recs, 0, "sm_active", merged, 1.0, 3)  # 132 blocks fill the SMs


def t_reverse():
    recs, _ = record(["launch", 1200, 1],
                     {"GPUSIM_DEVICES": "2", "GPUSIM_NVML_ORDER": "reverse"})
    well_formed(recs)
    m1, m0 = kernels(recs, 1), kernels(recs, 0)
    check(m1 and not m0, "kernels should run on device 1 only")
    check_gpu_util(recs, 1, m1, 3)
    # device 0 was used (an allocation) but ran nothing: matched by index,
    # it would show device 1's work
    z = samples(recs, 0, "gpu_util", NVML)
    check(z and all(s["value"] == 0 for s in z), f"device 0 gpu_util {[s['value'] for s in z]}")
    check_gpm(recs, 1, "sm_active", m1, 1.0 / SMS, 2)
    mem0 = [value(s, recs) for s in samples(recs, 0, "mem_used")]
    mem1 = [value(s, recs) for s in samples(recs, 1, "mem_used")]
    check(mem0 and max(mem0) == (1 << 20) + (512 << 20), f"device 0 mem_used {set(mem0)}")
    check(mem1 and max(mem1) == 512 << 20, f"device 1 mem_used {set(mem1)}")


COUNTER_KINDS = {"metric", "sample", "sampler", "string", "summary"}


def kind_counts(recs):
    out = {}
    for r in recs:
        if r["kind"] not in COUNTER_KINDS:
            out[r["kind"]] = out.get(r["kind"], 0) + 1
    return out


def warnings(p):
    return [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]


def t_absent():
    ref, pref = record(["fixed", 3000], {"GPUPHASE_NVML": "0"})
    recs, p = record(["fixed", 3000], {"GPUSIM_NVML": "absent"})
    well_formed(recs)
    check(statuses(recs, 0) == {(NVML, MISSING), (GPM, MISSING)},
          f"SAMPLER records {statuses(recs, 0)}")
    check(not by_kind(recs, "sample"), "samples without NVML")
    why = {r["reason"] for r in by_kind(recs, "sampler")}
    check(why == {"nvmlInit_v2: Driver Not Loaded"}, f"reasons {why}")
    w = warnings(p)
    check(len(w) == len(warnings(pref)) + 1 and any("NVML" in l for l in w),
          f"stderr: {p.stderr!r}")
    check(kind_counts(recs) == kind_counts(ref),
          f"trace differs: {kind_counts(recs)} vs {kind_counts(ref)}")
    # NVML not on the library path at all (the simulated driver and
    # runtime are found through the program's RUNPATH and $ORIGIN, CUPTI
    # beside the runtime): MISSING as well, the program as before
    d = workdir()
    e = env(dict(BASE, GPUPHASE_OUTPUT="t.gph"))
    e["LD_LIBRARY_PATH"] = d
    p = subprocess.run([prog(PROG), "fixed", "3000"], cwd=d, env=e, capture_output=True,
                       text=True, timeout=90)
    check(p.returncode == 3, f"no NVML on the path: exit {p.returncode}: {p.stderr}")
    recs, _ = dump(traces(d)[0])
    check(statuses(recs, 0) == {(NVML, MISSING), (GPM, MISSING)},
          f"no NVML on the path: SAMPLER records {statuses(recs, 0)}")
    why = {r["reason"] for r in by_kind(recs, "sampler")}
    check(why == {"libnvidia-ml.so.1 not found"}, f"no NVML on the path: reasons {why}")
    check(kind_counts(recs) == kind_counts(ref),
          f"no NVML on the path: trace differs: {kind_counts(recs)} vs {kind_counts(ref)}")
    # and the same as with NVML working
    ok, _ = record(["fixed", 3000])
    check(kind_counts(ok) == kind_counts(ref),
          f"trace differs with NVML: {kind_counts(ok)} vs {kind_counts(ref)}")


def t_denied():
    recs, p = record(["launch", 1000], {"GPUSIM_NVML": "denied"})
    well_formed(recs)
    st = statuses(recs, 0)
    check((GPM, DENIED) in st and (NVML, 0) in st, f"SAMPLER records {st}")
    check(not samples(recs, 0, "sm_active", GPM), "GPM samples while denied")
    check_gpu_util(recs, 0, kernels(recs, 0), 2)
    check(sum("GPM" in l for l in warnings(p)) == 1, f"stderr: {p.stderr!r}")


def t_nogpm():
    recs, _ = record(["launch", 600], {"GPUSIM_NVML": "nogpm"})
    st = statuses(recs, 0)
    check((GPM, UNSUPPORTED) in st and (NVML, 0) in st, f"SAMPLER records {st}")


def t_busy():
    recs, _ = record(["launch", 600], {"GPUSIM_NVML": "busy"})
    st = statuses(recs, 0)
    check((GPM, BUSY) in st and (NVML, 0) in st, f"SAMPLER records {st}")


def t_off():
    for extra in ({"GPUPHASE_SAMPLE_MS": "0"}, {"GPUPHASE_NVML": "0"}):
        recs, p = record(["launch", 300], extra)
        check(not by_kind(recs, "sample") and not by_kind(recs, "metric"),
              f"{extra}: samples written")
        check(statuses(recs, 0) == {(NVML, OFF), (GPM, OFF)},
              f"{extra}: SAMPLER records {statuses(recs, 0)}")
        check(not warnings(p), f"{extra}: stderr {p.stderr!r}")


def t_fork():
    """A forked child that uses CUDA samples in its own trace (its own
    sampler, started by its own CUDA set-up); the parent's goes on."""
    d = workdir()
    e = dict(BASE, GPUPHASE_OUTPUT="t-%p.gph")
    p = run([prog(PROG), "fork", "700"], d, e, timeout=90)
    check(p.returncode == 3, f"fork: exit {p.returncode}: {p.stderr}")
    ts = traces(d)
    check(len(ts) == 2, f"fork: traces {ts}")
    for t in ts:
        recs, _ = dump(t)
        well_formed(recs)
        check((NVML, 0) in statuses(recs, 0), f"{t}: SAMPLER records {statuses(recs, 0)}")
        merged = kernels(recs, 0)
        check(merged, f"{t}: no kernels")
        check_gpu_util(recs, 0, merged, 2)


TESTS = {"fork": t_fork, "idle_start": t_idle_start, "launch": t_launch, "tensor": t_tensor, "reverse": t_reverse,
         "absent": t_absent, "denied": t_denied, "nogpm": t_nogpm,
         "busy": t_busy, "off": t_off}

if __name__ == "__main__":
    sys.exit(main(TESTS))

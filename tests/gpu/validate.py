#!/usr/bin/env python3
"""Real-GPU validation of gpuphase, in one command (under 8 minutes):

    python3 tests/gpu/validate.py [BUILD_DIR]

Builds the CUDA programs of this folder with nvcc, runs them and PyTorch
loops under `gpuphase run`, and compares gpuphase's figures with ground
truth from CUDA events and with torch.profiler. Prints a table (expected,
measured, error, verdict, note): every row is judged ok, FAIL or skip, a
skip with its reason; exits 1 if any row failed or the build did. Without
an NVIDIA GPU it prints "skipped: no GPU" and succeeds (exit 77 when
GP_GPU_SKIP_CODE=77, as meson expects for a skip). Uses only what is
installed: no network."""
import glob
import json
import math
import os
import re
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
rows = []
failures = []
skipped = []


def have_gpu():
    smi = shutil.which("nvidia-smi")
    if not smi:
        return False
    r = subprocess.run([smi, "-L"], capture_output=True, text=True)
    return r.returncode == 0 and "GPU" in r.stdout


def verdict(check, expected, measured, ok, note="", err=""):
    """A row whose verdict the caller decided: ok or FAIL."""
    rows.append((check, expected, measured, err, "ok" if ok else "FAIL", note))
    if not ok:
        failures.append(check)


def row(check, expected, measured, tolerance_pct, note=""):
    """A measured value against its expectation: within tolerance_pct of it
    when both are numbers, else equal (tolerance 0). Every row is judged: a
    tolerance is required."""
    if tolerance_pct is None:
        raise ValueError(f"{check}: a row needs a tolerance or a verdict")
    err = ""
    if isinstance(expected, (int, float)) and isinstance(measured, (int, float)) and expected:
        e = 100.0 * (measured - expected) / expected
        err = f"{e:+.2f}%"
        ok = abs(e) <= tolerance_pct
    else:
        ok = expected == measured
    verdict(check, expected, measured, ok, note, err)


def skip(check, reason):
    """A check that cannot be made here, and why."""
    rows.append((check, "-", "-", "", "skip", reason))
    skipped.append(check)


def sh(args, **kw):
    return subprocess.run(args, capture_output=True, text=True, **kw)


def nvcc(*args):
    """nvcc with GP_NVCC_FLAGS prepended: a dry run of this script on a machine
    without a GPU builds against the simulated runtime (tests/gpu/README.md)."""
    return sh(["nvcc"] + os.environ.get("GP_NVCC_FLAGS", "").split() + list(args))


def report(build, trace):
    r = sh([os.path.join(build, "tools", "gpuphase-report"), "--format", "json", trace])
    if r.returncode != 0:
        raise RuntimeError(f"report failed: {r.stderr.strip()}")
    return json.loads(r.stdout)


def profiled(build, out, name, argv, env=None):
    trace = os.path.join(out, name + ".gph")
    r = sh([os.path.join(build, "tools", "gpuphase"), "run", "-q", "-o", trace, "--"] + argv,
           env=env)
    if r.returncode != 0:
        raise RuntimeError(f"{name} failed ({r.returncode}): {r.stderr.strip()[-500:]}")
    last = [l for l in r.stdout.splitlines() if l.startswith("{")]
    return (json.loads(last[-1]) if last else {}), report(build, trace)


def kernel_sum(rep, needle):
    return sum(k["total_ns"] for k in rep["kernels"] if needle in k["name"]), \
        sum(k["count"] for k in rep["kernels"] if needle in k["name"])


def check_truth(build, out):
    exe = os.path.join(out, "truth")
    r = nvcc("-O2", "-o", exe, os.path.join(HERE, "truth.cu"))
    if r.returncode:
        raise RuntimeError("nvcc truth.cu: " + r.stderr[-500:])
    truth, rep = profiled(build, out, "truth", [exe])
    row("CUPTI device records", "yes", "no" if rep["degraded"] else "yes", 0)
    ns, count = kernel_sum(rep, "gp_spin")
    row("spin kernels: count", truth["spin_kernels"] + 2, count, 0, "50 timed + 2 short")
    row("spin kernels: total ns vs CUDA events", truth["spin_kernel_ns"], ns, 2.0,
        "events also time the launch gap")
    h2d = rep["devices"][0]["copies"]["h2d"]
    row("H2D copies: count", truth["pinned_copies"] + truth["pageable_copies"], h2d["count"], 0)
    row("H2D copies: bytes", truth["pinned_bytes"] + truth["pageable_bytes"], h2d["bytes"], 0)
    row("H2D copies: ns vs CUDA events", truth["pinned_ns"] + truth["pageable_ns"], h2d["ns"], 5.0)
    row("H2D copies: pageable count", truth["pageable_copies"], h2d["pageable"], 0)
    hw = rep["devices"][0]["breakdown"]["host_wait"]["ns"]
    row("host_wait covers the host sleeps", truth["sleep_ns"], hw, 10.0,
        "sleeps plus any other host time")


FIELD = re.compile(r'(\w+)=("(?:[^"\\]|\\.)*"|\S+)')


def dump(build, trace):
    """The trace's records, as `gpuphase-report dump` prints them."""
    r = sh([os.path.join(build, "tools", "gpuphase-report"), "dump", trace])
    if r.returncode != 0:
        raise RuntimeError(f"dump failed: {r.stderr.strip()}")
    recs = []
    for line in r.stdout.splitlines():
        parts = line.split(None, 1)
        if not parts:
            continue
        rec = {"kind": parts[0]}
        for k, v in FIELD.findall(parts[1] if len(parts) > 1 else ""):
            rec[k] = v[1:-1] if v.startswith('"') else (int(v) if v.lstrip("-").isdigit() else v)
        recs.append(rec)
    return recs


def busy_share(merged, t0, t1):
    return sum(max(0, min(e, t1) - max(s, t0)) for s, e in merged) / (t1 - t0)


def check_counters(build, out):
    """NVML GPU-Util against the device's busy time (from the trace's own
    kernel records) and GPM SM activity against busy / SMs, on a loop of
    one-block kernels (counters.cu), time-weighted over the samples.
    Tolerances: GPU-Util 5 points (NVML rounds to whole percents and its
    sample period's edges are its own); SM activity 30 % (one SM of all is
    busy while a kernel runs, but the SM counts cycles with a warp resident
    on its own clock)."""
    exe = os.path.join(out, "counters")
    r = nvcc("-O2", "-o", exe, os.path.join(HERE, "counters.cu"))
    if r.returncode:
        raise RuntimeError("nvcc counters.cu: " + r.stderr[-500:])
    trace = os.path.join(out, "counters.gph")
    r = sh([os.path.join(build, "tools", "gpuphase"), "run", "-q", "-o", trace, "--", exe])
    if r.returncode != 0:
        raise RuntimeError(f"counters failed ({r.returncode}): {r.stderr.strip()[-300:]}")
    truth = json.loads([l for l in r.stdout.splitlines() if l.startswith("{")][-1])
    recs = dump(build, trace)
    ks = sorted((k["start"], k["end"]) for k in recs if k["kind"] == "kernel" and k["device"] == 0)
    merged = []
    for s, e in ks:
        if merged and s <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    metrics = {m["metric"]: m for m in recs if m["kind"] == "metric" and m["device"] == 0}
    status = {(x["source"], x["status"]): x.get("reason", "") for x in recs
              if x["kind"] == "sampler" and x["device"] == 0}

    def weighted(name, source):
        ids = {i for i, m in metrics.items() if m["name"] == name and m["source"] == source}
        ss = [x for x in recs if x["kind"] == "sample" and x["metric"] in ids
              and x["end"] - x["start"] >= 50000000]
        w = sum(x["end"] - x["start"] for x in ss)
        if not w:
            return None, None, 0
        got = sum(x["value"] / metrics[x["metric"]]["scale"] * (x["end"] - x["start"])
                  for x in ss) / w
        exp = sum(100 * busy_share(merged, x["start"], x["end"]) * (x["end"] - x["start"])
                  for x in ss) / w
        return got, exp, len(ss)

    verdict("counters: NVML sampling", "OK", "OK" if (1, 0) in status else str(status),
            (1, 0) in status)
    got, exp, n = weighted("gpu_util", 1)
    if got is None:
        verdict("counters: NVML GPU-Util vs busy", "samples", "none", False)
    else:
        verdict("counters: NVML GPU-Util vs busy (pct)", f"{exp:.1f}", f"{got:.1f}",
                abs(got - exp) <= 5, f"{n} samples, time-weighted; tolerance 5 points",
                f"{got - exp:+.1f}")
    if (2, 0) not in status:
        gs = [f"{st}: {why}" for (src, st), why in status.items() if src == 2]
        skip("counters: GPM SM active vs busy / SMs", "GPM " + (gs[0] if gs else "absent"))
        return
    got, exp, n = weighted("sm_active", 2)
    if got is None:
        verdict("counters: GPM SM active vs busy / SMs", "samples", "none", False)
    else:
        row("counters: GPM SM active vs busy / SMs (pct)", round(exp / truth["sms"], 6),
            round(got, 6), 30.0, f"{n} intervals, one block on {truth['sms']} SMs")


def toolkit_has(header):
    """Whether the toolkit of the nvcc on PATH has HEADER (include/ or
    targets/*/include/)."""
    root = os.path.dirname(os.path.dirname(os.path.realpath(shutil.which("nvcc"))))
    return bool(glob.glob(os.path.join(root, "include", header)) +
                glob.glob(os.path.join(root, "targets", "*", "include", header)))


def check_blas(build, out):
    if not toolkit_has("cublas_v2.h"):
        skip("cuBLAS", "not installed: no cublas_v2.h in the toolkit of the nvcc on PATH")
        return
    exe = os.path.join(out, "blas")
    r = nvcc("-O2", "-o", exe, os.path.join(HERE, "blas.cu"), "-lcublas")
    # cuBLAS is installed: a build that fails is a failure, not a skip
    verdict("cuBLAS: blas.cu builds", "built", "nvcc failed" if r.returncode else "built",
            r.returncode == 0, r.stderr.strip()[-80:] if r.returncode else "")
    if r.returncode:
        return
    truth, rep = profiled(build, out, "blas", [exe])
    total = sum(k["count"] for k in rep["kernels"])
    row("cuBLAS: kernels seen >= GEMM calls", truth["gemms"], min(total, truth["gemms"]), 0,
        f"{total} kernels in all")
    ns = sum(k["total_ns"] for k in rep["kernels"])
    row("cuBLAS: kernel ns vs CUDA events (21/20 of loop)", truth["loop_ns"] * 21 / 20, ns, 10.0)
    launches = sum(a["count"] for a in rep["api"] if "Launch" in a["name"])
    verdict("cuBLAS: launches seen on the host", ">= %d" % truth["gemms"], launches,
            launches >= truth["gemms"], "through the driver API")


def check_overhead(build, out):
    """ns per launch and per cudaGetDevice, with and without gpuphase:
    medians of 3 runs each, alternating. No model gives a bound on the
    added cost, so the row judges only that both were measured (finite,
    positive); docs/performance.md quotes the figures."""
    exe = os.path.join(out, "overhead")
    r = nvcc("-O2", "-o", exe, os.path.join(HERE, "overhead.cu"))
    if r.returncode:
        raise RuntimeError("nvcc overhead.cu: " + r.stderr[-500:])
    base, shim = [], []
    for i in range(3):
        r = sh([exe])
        if r.returncode:
            raise RuntimeError(f"overhead failed: {r.stderr.strip()[-200:]}")
        base.append(json.loads(r.stdout.strip().splitlines()[-1]))
        got, _ = profiled(build, out, f"overhead{i}", [exe])
        shim.append(got)

    def med(runs, key):
        return sorted(x[key] for x in runs)[len(runs) // 2]
    for key, what in (("launch_ns", "cudaLaunchKernel"), ("get_device_ns", "cudaGetDevice")):
        b, s = med(base, key), med(shim, key)
        measured = all(isinstance(x, (int, float)) and math.isfinite(x) and x > 0
                       for x in (b, s))
        verdict(f"overhead: {what} ns/call without / with", f"{b:.0f}", f"{s:.0f}", measured,
                f"+{s - b:.0f} ns per call (measured; no bound)" if measured
                else "not measured")


PM_STATES = {1: "missing", 2: "denied", 3: "busy", 4: "unsupported", 5: "failed",
             6: "overflow", 7: "off"}


def check_pm(build, out):
    """PM sampling (GPUPHASE_PM=1) beside CUPTI activity: every kernel still
    recorded and linked to its call, and measured SM activity 1/SMs on
    one-block kernels against ~100% on full grids, the change where the
    kernel records put it (which also checks the sample clock)."""
    exe = os.path.join(out, "pm")
    r = nvcc("-O2", "-o", exe, os.path.join(HERE, "pm.cu"))
    if r.returncode:
        raise RuntimeError("nvcc pm.cu: " + r.stderr[-500:])
    env = dict(os.environ, GPUPHASE_PM="1")
    truth, rep = profiled(build, out, "pm", [exe], env)
    recs = dump(build, os.path.join(out, "pm.gph"))
    ks = [k for k in recs if k["kind"] == "kernel"]
    corrs = {a["corr"] for a in recs if a["kind"] == "api"}
    row("PM beside activity: kernels recorded", truth["one_kernels"] + truth["full_kernels"],
        len(ks), 0, "trace degraded" if rep["degraded"] else "")
    row("PM beside activity: kernels linked to calls", len(ks),
        sum(1 for k in ks if k["corr"] in corrs), 0)
    samplers = [s for s in recs if s["kind"] == "sampler" and s["source"] == 3]
    bad = [s for s in samplers if s["status"] not in (0, 6)]
    if not samplers or bad:
        s = (bad or [{"status": -1, "reason": "no SAMPLER record"}])[0]
        what = PM_STATES.get(s["status"], "no record")
        if s["status"] in (2, 3, 4):  # not permitted, busy, not supported here
            skip("PM sampling: SM active", f"{what}: {s['reason'][:70]}")
        else:
            verdict("PM sampling: starts", "ok", what, False, s["reason"][:70])
        return
    names = {m["metric"]: m for m in recs if m["kind"] == "metric" and m["source"] == 3}
    sm = [(x["start"], x["end"], x["value"] / names[x["metric"]]["scale"])
          for x in recs if x["kind"] == "sample" and names.get(x["metric"], {}).get("name") == "sm_active"]

    def phase(kname):
        mine = [k for k in ks if k["name"].find(kname) >= 0]
        if not mine:
            return None, 0
        lo, hi = min(k["start"] for k in mine), max(k["end"] for k in mine)
        inside = [(s, e, v) for s, e, v in sm if s >= lo and e <= hi]
        t = sum(e - s for s, e, _ in inside)
        return (sum((e - s) * v for s, e, v in inside) / t if t else None), len(inside)
    one, n1 = phase("gp_pm_one")
    full, n2 = phase("gp_pm_full")
    if one is None or full is None:
        verdict("PM sampling: samples within the phases", "> 0", f"{n1} / {n2}", False,
                "sample times outside the kernels' spans: clock?")
        return
    # sm__cycles_active.avg: one SM of SMs busy; up to 3x for the SM's
    # neighbours' housekeeping and launch gaps, judged, not derived
    expect_one = 100.0 / truth["sms"]
    verdict("PM sm_active, one-block kernels (%)", f"{expect_one:.2f} (<= {3 * expect_one:.2f})",
            f"{one:.2f}", one <= 3 * expect_one, f"{n1} samples; 1 of {truth['sms']} SMs")
    verdict("PM sm_active, full-grid kernels (%)", ">= 90", f"{full:.2f}", full >= 90.0,
            f"{n2} samples; 2 blocks per SM")
    worst = min((v for s, e, v in sm if s >= min(k["start"] for k in ks if "gp_pm_full" in k["name"]) + 2000000
                 and e <= max(k["end"] for k in ks if "gp_pm_full" in k["name"]) - 2000000), default=None)
    verdict("PM sample clock: every full-grid sample busy", ">= 80", worst,
            worst is not None and worst >= 80.0,
            "a clock offset would put one-block or idle readings inside the span")


SOURCES = {2: "gpm", 3: "pm"}
# Each measured-counter check runs its program twice: once as it is (NVML
# and GPM sample, by default) and once with GPUPHASE_PM=1 (PM sampling
# too), and judges each source on its own run, so that neither depends on
# the two sharing the device's counters.
COUNTER_RUNS = ((2, None), (3, {"GPUPHASE_PM": "1"}))


def sampler_state(recs, source):
    """How SOURCE fared on device 0, from its SAMPLER records: None when it
    sampled (OK; samples lost at times do not count against it), else
    (status, reason) of its first other record, or (-1, "no SAMPLER
    record")."""
    mine = [x for x in recs if x["kind"] == "sampler" and x["source"] == source
            and x["device"] == 0]
    bad = [x for x in mine if x["status"] not in (0, 6)]
    if bad:
        return bad[0]["status"], str(bad[0].get("reason", ""))
    if any(x["status"] == 0 for x in mine):
        return None
    return -1, "no SAMPLER record"


def judged_source(check, recs, source):
    """True when SOURCE sampled device 0; else adds the row for CHECK and
    returns False: a skip with the reason where the source is absent or the
    device refused it (missing: no NVML, no CUPTI; denied: a container,
    profiling restricted to administrators; busy: another profiler;
    unsupported: GPM before Hopper, MIG; off: GPUPHASE_SAMPLE_MS=0 or
    GPUPHASE_NVML=0 in the environment), a FAIL where it failed or wrote
    no SAMPLER record (counters.md: every source of every device used gets
    one)."""
    st = sampler_state(recs, source)
    if st is None:
        return True
    what = PM_STATES.get(st[0], "no record")
    if st[0] in (1, 2, 3, 4, 7):
        skip(check, f"{SOURCES[source]} {what}: {st[1][:70]}")
    else:
        verdict(check, "samples", f"{SOURCES[source]} {what}", False, st[1][:70])
    return False


def kernel_span(recs, keep):
    """(first start, last end) of device 0's kernels for which keep(kernel)
    holds, or None."""
    ks = [k for k in recs if k["kind"] == "kernel" and k["device"] == 0 and keep(k)]
    return (min(k["start"] for k in ks), max(k["end"] for k in ks)) if ks else None


def span_mean(recs, source, name, span):
    """Time-weighted mean of metric NAME from SOURCE on device 0 over its
    interval samples that lie wholly inside SPAN, and how many there were
    ((None, 0) without one)."""
    scale = {m["metric"]: m["scale"] for m in recs if m["kind"] == "metric"
             and m["source"] == source and m["device"] == 0 and m["name"] == name}
    lo, hi = span
    ss = [(x["end"] - x["start"], x["value"] / scale[x["metric"]]) for x in recs
          if x["kind"] == "sample" and x["metric"] in scale and lo <= x["start"] < x["end"] <= hi]
    t = sum(d for d, _ in ss)
    return (sum(d * v for d, v in ss) / t if t else None), len(ss)


def instant_mean(recs, source, name, span):
    """Plain mean of the instant readings (start == end) of metric NAME from
    SOURCE on device 0 inside SPAN, or None."""
    scale = {m["metric"]: m["scale"] for m in recs if m["kind"] == "metric"
             and m["source"] == source and m["device"] == 0 and m["name"] == name}
    vs = [x["value"] / scale[x["metric"]] for x in recs if x["kind"] == "sample"
          and x["metric"] in scale and x["start"] == x["end"] and span[0] <= x["start"] <= span[1]]
    return sum(vs) / len(vs) if vs else None


def counter_run(build, out, name, exe, source, env):
    """The program's JSON and the trace's records, for one of COUNTER_RUNS."""
    tag = f"{name}-{SOURCES[source]}"
    truth, _ = profiled(build, out, tag, [exe], dict(os.environ, **env) if env else None)
    return truth, dump(build, os.path.join(out, tag + ".gph"))


def spin_row(recs, source, check, name, kernel, kernels):
    """The contrast row: metric NAME of SOURCE over the span of the spin
    kernels KERNEL (full grids spinning on %globaltimer: no memory traffic,
    no tensor instruction) at most 1 %, the counter's rounding; SM activity
    over the same span in the note, to show the SMs were busy."""
    span = kernel_span(recs, lambda k: kernel in k["name"])
    got, n = span_mean(recs, source, name, span) if span else (None, 0)
    sm, _ = span_mean(recs, source, "sm_active", span) if span else (None, 0)
    verdict(check, "<= 1.0", "no samples" if got is None else f"{got:.1f}",
            got is not None and got <= 1.0,
            f"{n} samples; {kernels} full-grid spin kernels"
            + (f", SM active {sm:.1f}" if sm is not None else "")
            + ("" if span else "; none recorded"))


def check_dram(build, out):
    """Measured DRAM bandwidth (dram_bw, % of peak) over a copy loop
    (copy.cu) against the bandwidth the copy achieved, as a share of the
    device's peak: achieved = 2 x buffer bytes per copy (each byte read
    once and written once; the buffers are far beyond the L2) over the
    loop's time from CUDA events; peak = 2 (double data rate) x the memory
    clock attribute x the bus width. Samples wholly inside the copies' span
    (from the kernel records) only. Expected high (>= 50 %: a copy with
    every SM full runs HBM at well over 80 % of peak) and within 10 points
    of achieved / peak: the counter counts the same bytes over the same
    time (the launch gaps are in both), so what is left is the peak it
    divides by (GPM: "of the theoretical maximum", NVML's own figure; PM's
    dram__throughput: the busiest DRAM unit's share of its per-cycle peak
    at the clock it ran at), neither of which need be the attributes' to
    the last percent. And a contrast, so that another metric read
    as DRAM (SM active, say, also high in the copy) fails: over the same
    run's spin period before the copies (full-grid kernels that touch no
    memory) DRAM reads <= 1 % while SM activity is high."""
    exe = os.path.join(out, "copy")
    r = nvcc("-O2", "-o", exe, os.path.join(HERE, "copy.cu"))
    if r.returncode:
        raise RuntimeError("nvcc copy.cu: " + r.stderr[-500:])
    for source, env in COUNTER_RUNS:
        check = f"DRAM % ({SOURCES[source]}) on a copy vs achieved / peak"
        try:
            truth, recs = counter_run(build, out, "copy", exe, source, env)
        except Exception as e:
            verdict(check, "runs", "error", False, str(e)[:100])
            continue
        if not judged_source(check, recs, source):
            continue
        peak = 2 * truth["mem_clock_khz"] * 1e3 * truth["bus_bits"] / 8  # bytes/s
        if peak <= 0 or truth["loop_ns"] <= 0:
            verdict(check, "a peak and a time", "none", False,
                    f"memory clock {truth['mem_clock_khz']} kHz, bus {truth['bus_bits']} bits, "
                    f"loop {truth['loop_ns']} ns")
            continue
        achieved = truth["bytes_moved"] / truth["loop_ns"] * 1e9
        exp = 100 * achieved / peak
        span = kernel_span(recs, lambda k: "gp_copy_loop" in k["name"])
        got, n = span_mean(recs, source, "dram_bw", span) if span else (None, 0)
        if got is None:
            verdict(check, f"{exp:.1f}", "no samples", False,
                    "no copy kernel recorded" if span is None
                    else "none inside the copies' span: sample clock?")
            continue
        # NVML's memory clock over the copies, beside the attribute's, for
        # whoever reads a FAIL (not judged)
        clk = instant_mean(recs, 1, "mem_clock", span)
        verdict(check, f"{exp:.1f} (>= 50)", f"{got:.1f}",
                got >= 50.0 and abs(got - exp) <= 10.0,
                f"{n} samples; {achieved / 1e12:.2f} of {peak / 1e12:.2f} TB/s; 10 points"
                + (f"; memory clock {clk:.0f} MHz (nvml), {truth['mem_clock_khz'] / 1e3:.0f}"
                   " (attribute)" if clk is not None else ""),
                f"{got - exp:+.1f}")
        spin_row(recs, source, f"DRAM % ({SOURCES[source]}) while spinning, same run",
                 "dram_bw", "gp_copy_spin", truth["spin_kernels"])


# Dense fp16 tensor FLOPs per SM per clock (fp32 accumulation), by compute
# capability: A100 312 TFLOP/s = 108 SMs x 1.41 GHz x 2048; H100 989 TFLOP/s
# = 132 x 1.83 GHz x 4096. Parts of the same capability with slower tensor
# cores (H20, say) have a lower peak: the bound below is then lower than it
# could be, never higher. Others: no bound, only the floor.
TENSOR_FLOPS_PER_SM_CLOCK = {80: 2048, 90: 4096}


def check_tensor(build, out):
    """Measured tensor-pipe activity (tensor_active) on fp16 cuBLAS GEMMs
    against a spin period of the same run (tensor.cu): the two spans from
    the kernel records (the spin period's full-grid kernels; the kernels
    after them, the GEMMs), samples wholly inside each. A tensor
    pipe active in a cycle does at most its peak FLOPs in it, so the active
    share is at least achieved / peak FLOP/s (achieved: 2 n^3 per GEMM over
    the loop's CUDA-event time; peak: SMs x the table's FLOPs x the peak SM
    clock, which a GEMM under its power cap does not exceed). Expected
    during the GEMMs: >= 0.9 of that bound (room for the samples' span
    against the events') and >= 10 % in any case (well above zero); while
    spinning: <= 1 % (no tensor instruction runs; the counter's rounding),
    while every SM is busy, so that another metric read as tensor activity
    (SM active, say, also high in the GEMMs) fails."""
    if not toolkit_has("cublas_v2.h"):
        skip("tensor % on cuBLAS GEMMs",
             "not installed: no cublas_v2.h in the toolkit of the nvcc on PATH")
        return
    exe = os.path.join(out, "tensor")
    r = nvcc("-O2", "-o", exe, os.path.join(HERE, "tensor.cu"), "-lcublas")
    if r.returncode:
        raise RuntimeError("nvcc tensor.cu: " + r.stderr[-500:])
    for source, env in COUNTER_RUNS:
        label = SOURCES[source]
        check = f"tensor % ({label}) during fp16 GEMMs"
        try:
            truth, recs = counter_run(build, out, "tensor", exe, source, env)
        except Exception as e:
            verdict(check, "runs", "error", False, str(e)[:100])
            continue
        if not judged_source(check, recs, source):
            continue
        spin = kernel_span(recs, lambda k: "gp_tc_spin" in k["name"])
        gemm = kernel_span(recs, lambda k: spin is not None and k["start"] >= spin[1])
        if spin is None or gemm is None:
            verdict(check, "kernels", "none", False,
                    "no spin kernel recorded" if spin is None else "no kernel after the spin period")
            continue
        rate = TENSOR_FLOPS_PER_SM_CLOCK.get(truth["cc"])
        achieved = truth["flops"] / truth["loop_ns"] * 1e9 if truth["loop_ns"] > 0 else 0
        peak = truth["sms"] * rate * truth["clock_khz"] * 1e3 if rate else 0
        bound = 100 * achieved / peak if peak else None
        floor = max(10.0, 0.9 * bound) if bound is not None else 10.0
        got, n = span_mean(recs, source, "tensor_active", gemm)
        how = (f"{achieved / 1e12:.0f} of {peak / 1e12:.0f} TFLOP/s: active >= {bound:.1f}"
               if bound is not None else
               f"{achieved / 1e12:.0f} TFLOP/s; no tensor peak for sm_{truth['cc']}"
               f" at {truth['clock_khz']} kHz")
        if got is None:
            verdict(check, f">= {floor:.1f}", "no samples", False,
                    "none inside the GEMMs' span: sample clock?")
        else:
            verdict(check, f">= {floor:.1f}", f"{got:.1f}", got >= floor,
                    f"{n} samples; {truth['gemms']} GEMMs of {truth['n']}^3; {how}")
        spin_row(recs, source, f"tensor % ({label}) while spinning, same run",
                 "tensor_active", "gp_tc_spin", truth["spin_kernels"])


def check_torch(build, out):
    try:
        import torch  # noqa: F401
    except Exception as e:  # a machine without torch: a skip, with the reason
        skip("PyTorch loops", f"torch not importable: {str(e)[:60]}")
        return
    script = os.path.join(HERE, "torch_loops.py")
    for sc in ("dataloader", "compile", "graphs", "nvtx"):
        try:
            _, rep = profiled(build, out, "torch-" + sc, [sys.executable, script, sc])
            r = sh([sys.executable, script, sc, "--profile"])
            if r.returncode:
                raise RuntimeError(r.stderr.strip()[-300:])
            prof = json.loads(r.stdout.strip().splitlines()[-1])["profiler_kernel_ns"]
            ph = [p for p in rep["phases"] if p["name"] == "gp-measured"]
            ours = ph[0]["breakdown"]["kernel"]["ns"] if ph else "no phase"
            row(f"torch {sc}: kernel ns vs torch.profiler", prof, ours, 10.0,
                "phase 'gp-measured'")
            if sc == "dataloader":
                d = rep["devices"][0]["breakdown"]
                hw, k = d["host_wait"]["ns"], d["kernel"]["ns"]
                verdict("torch dataloader: host_wait > kernel", f"> {k}", hw, hw > k,
                        "a slow DataLoader starves the GPU")
        except Exception as e:
            verdict(f"torch {sc}", "runs", "error", False, str(e)[:70])


def main():
    build = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build"))
    if not have_gpu():
        print("skipped: no GPU")
        return int(os.environ.get("GP_GPU_SKIP_CODE", "0"))
    if not shutil.which("nvcc"):
        print("gpu validation: nvcc not on PATH")
        return 1
    if not os.path.exists(os.path.join(build, "tools", "gpuphase")):
        steps = [("meson compile", ["meson", "compile", "-C", build])]
        if not os.path.exists(os.path.join(build, "build.ninja")):  # not configured yet
            steps.insert(0, ("meson setup", ["meson", "setup", build, ROOT]))
        for what, args in steps:
            r = sh(args)
            if r.returncode:
                print(f"gpu validation: {what} failed ({r.returncode})\n"
                      + (r.stdout + r.stderr)[-2000:])
                return 1
    out = tempfile.mkdtemp(prefix="gp-gpu-")
    smi = sh(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    print("GPU:", smi.stdout.strip())
    for step in (check_truth, check_overhead, check_blas, check_pm, check_counters, check_dram,
                 check_tensor, check_torch):
        try:
            step(build, out)
        except Exception as e:
            verdict(step.__name__, "runs", "error", False, str(e)[:100])
    w = [max(len(str(r[i])) for r in rows + [("check", "expected", "measured", "error", "", "")])
         for i in range(6)]
    hdr = ("check", "expected", "measured", "error", "", "note")
    for r in [hdr] + rows:
        print("  ".join(str(v).ljust(w[i]) for i, v in enumerate(r)).rstrip())
    passed = len(rows) - len(failures) - len(skipped)
    print(f"{passed} passed, {len(failures)} failed, {len(skipped)} skipped"
          + (f" ({', '.join(skipped)})" if skipped else ""))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())

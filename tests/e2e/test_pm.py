"""End-to-end tests of CUPTI PM sampling (GPUPHASE_PM=1) on the simulated
CUPTI (tests/simcuda/README.md, "PM sampling"). Expected readings come
from the simulator's counter model ("Counters") applied to the kernels
the trace recorded."""
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

MSRC_PM = 3
OK, MISSING, DENIED, BUSY, UNSUPPORTED, FAILED, OVERFLOW = 0, 1, 2, 3, 4, 5, 6
NAMES = {"gr_active", "sm_active", "sm_occupancy", "tensor_active", "dram_bw",
         "dram_read_bytes", "dram_write_bytes", "pcie_bw"}
WAVE = 1000000  # GPUSIM_WAVE_NS in these runs: every kernel takes 1 ms
HBM_BYTES_PER_NS = 3000  # GPUSIM_HBM_GBPS default
WARPS = 256 // 32  # prog_pm.c's blocks: 256 threads
# A sample's reading and the kernels' times are on one clock, each
# aligned to CLOCK_MONOTONIC by its own offset: half the gap of the
# tightest of 8 clock reads (README.md, "CUPTI" and "PM sampling"), tens of
# ns, up to a few us on a loaded machine under a sanitizer. The model is
# therefore evaluated over the sample's window shifted by up to SKEW_NS
# either way, and the reading must lie within the range found, give or
# take TOL_PCT (values are kept in thousandths of a percent).
SKEW_NS = 5000
SHIFTS = (-SKEW_NS, -SKEW_NS // 2, 0, SKEW_NS // 2, SKEW_NS)
TOL_PCT = 0.01


def run_pm(extra=None, n=100, args=None, stats=True):
    d = workdir()
    st = os.path.join(d, "pm-stats")
    e = {"GPUPHASE_PM": "1", "GPUSIM_WAVE_NS": str(WAVE),
         "GPUSIM_PM_STATS": st if stats else None, "GPUSIM_PM": None,
         "GPUSIM_PM_INVALID": None, "GPUSIM_KERNEL_PROFILE": None}
    e.update(extra or {})
    p = run(args or [prog("e2e-prog-pm"), str(n)], d, e)
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    calls = {}
    if os.path.exists(st):
        for line in open(st):
            _, name, count = line.split()
            calls[name] = calls.get(name, 0) + int(count)
    return d, p, calls


def pm_view(path):
    recs, _ = dump(path)
    defs = {r["metric"]: r for r in by_kind(recs, "metric") if r["source"] == MSRC_PM}
    samples = {}
    for r in by_kind(recs, "sample"):
        m = defs.get(r["metric"])
        if m:
            samples.setdefault(m["name"], []).append(
                (r["start"], r["end"], r["value"] / m["scale"]))
    samplers = [r for r in by_kind(recs, "sampler") if r["source"] == MSRC_PM]
    return recs, defs, samples, samplers


def kernels(recs):
    return [(k["start"], k["end"], k["grid_x"] * k["grid_y"] * k["grid_z"],
             k["name"]) for k in by_kind(recs, "kernel")]


def model(ks, t0, t1, per_kernel):
    """The counter model over [t0, t1): the time-average of
    min(1, sum over running kernels of per_kernel(kernel)), in percent."""
    edges = sorted({t0, t1} | {t for k in ks for t in k[:2] if t0 < t < t1})
    acc = 0.0
    for a, b in zip(edges, edges[1:]):
        share = sum(per_kernel(k) for k in ks if k[0] <= a and k[1] >= b)
        acc += min(1.0, share) * (b - a)
    return 100.0 * acc / (t1 - t0)


def sm_share(k):
    return min(1.0, k[2] / SMS)


def occupancy(k):
    return min(k[2], SMS) * WARPS / (SMS * 64)


def check_against_model(samples, ks, name, per_kernel, tol=TOL_PCT, least=100):
    got = samples.get(name, [])
    check(len(got) >= least, f"{name}: {len(got)} samples for 200 ms of kernels")
    worst = 0.0
    for s, e, v in got:
        want = [model(ks, s + d, e + d, per_kernel) for d in SHIFTS]
        lo, hi = min(want), max(want)
        worst = max(worst, abs(v - want[len(SHIFTS) // 2]))
        check(lo - tol <= v <= hi + tol,
              f"{name} over [{s}, {e}): {v} against the model's "
              f"{want[len(SHIFTS) // 2]:.4f} "
              f"({lo:.4f}..{hi:.4f} with the window moved by {SKEW_NS} ns)")
    return worst


def phase_avg(samples, ks, name, kname):
    """Time-weighted average of the samples lying within the span of the
    kernels called kname while the device was busy throughout (gr_active
    100%: a loaded host can leave gaps between the launches)."""
    mine = [k for k in ks if k[3] == kname]
    lo, hi = min(k[0] for k in mine), max(k[1] for k in mine)
    busy = {(s, e) for s, e, v in samples["gr_active"] if v >= 99.999}
    inside = [(s, e, v) for s, e, v in samples[name]
              if s >= lo and e <= hi and (s, e) in busy]
    check(len(inside) >= 20, f"{name}: {len(inside)} busy samples within {kname}")
    return sum((e - s) * v for s, e, v in inside) / sum(e - s for s, e, _ in inside)


def linked(recs):
    """Every kernel record's correlation id is that of an API call."""
    corrs = {a["corr"] for a in by_kind(recs, "api")}
    ks = by_kind(recs, "kernel")
    return ks and all(k["corr"] in corrs for k in ks)


def t_model():
    """Full-grid then one-block kernels: sm_active, gr_active and
    sm_occupancy of every sample agree with the model applied to the
    recorded kernels; the phases differ as 100% against 1/132; every
    kernel linked to its call; one session, de-initialised once; samples
    in non-decreasing start order, within the trace."""
    d, p, calls = run_pm()
    lines = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
    check(not lines, f"no warning expected: {lines}")
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    check({m["name"] for m in defs.values()} == NAMES, f"metrics {defs}")
    check(all(m["device"] == 0 for m in defs.values()), "device 0")
    units = {m["name"]: (m["unit"], m["scale"]) for m in defs.values()}
    check(units["sm_active"] == (1, 1000) and units["dram_read_bytes"] == (2, 1),
          f"units {units}")
    check(len(samplers) == 1 and samplers[0]["status"] == OK and
          "GH100" in samplers[0]["reason"], f"samplers {samplers}")
    ks = kernels(recs)
    check(len(ks) == 200 and linked(recs), "200 kernels, each linked to its call")
    check_against_model(samples, ks, "sm_active", sm_share)
    check_against_model(samples, ks, "gr_active", lambda k: 1.0)
    check_against_model(samples, ks, "sm_occupancy", occupancy)
    full = phase_avg(samples, ks, "sm_active", "pm_full")
    one = phase_avg(samples, ks, "sm_active", "pm_one")
    check(abs(full - 100.0) <= 1.0, f"full grid: sm_active {full}")
    check(abs(one - 100.0 / SMS) <= 0.1, f"one block: sm_active {one}")
    occ = phase_avg(samples, ks, "sm_occupancy", "pm_full")
    check(abs(occ - 100.0 * WARPS / 64) <= 0.5, f"full grid occupancy {occ}")
    # the sample times: start < end, in order, after the sampler began
    sm = samples["sm_active"]
    check(all(s < e for s, e, _ in sm), "start < end")
    check(all(a[0] <= b[0] for a, b in zip(sm, sm[1:])), "non-decreasing start")
    check(sm[0][0] >= samplers[0]["start"], "samples after the sampler began")
    summ = by_kind(recs, "summary")[0]
    check(sm[-1][1] <= summ["end"], "samples before the trace's end")
    for f in ("cuptiProfilerInitialize", "cuptiProfilerDeInitialize",
              "cuptiPmSamplingEnable", "cuptiPmSamplingDisable",
              "cuptiProfilerHostInitialize", "cuptiProfilerHostDeinitialize",
              "cuptiPmSamplingStart", "cuptiPmSamplingStop",
              "cuptiProfilerHostGetNumOfPasses"):
        check(calls.get(f) == 1, f"{f} called {calls.get(f)} times, once expected")
    check(calls.get("deinitialized") == 1, f"de-initialised {calls.get('deinitialized')}")
    check(calls.get("cuptiPmSamplingDecodeData", 0) >= 2, "decoded while running and at the end")


def t_profile():
    """GPUSIM_KERNEL_PROFILE: tensor and DRAM readings follow the kernels'
    factors (tensor 0.8 / dram 0.3 for pm_full, 0.5 / 0.5 for pm_one)."""
    prof = "pm_full:tensor=0.8,dram=0.3;pm_one:tensor=0.5,dram=0.5"
    d, p, _ = run_pm({"GPUSIM_KERNEL_PROFILE": prof})
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    ks = kernels(recs)
    tensor = {"pm_full": 0.8, "pm_one": 0.5}
    dram = {"pm_full": 0.3, "pm_one": 0.5}
    check_against_model(samples, ks, "tensor_active",
                        lambda k: tensor[k[3]] * sm_share(k))
    check_against_model(samples, ks, "dram_bw", lambda k: dram[k[3]] * sm_share(k))
    check(abs(phase_avg(samples, ks, "tensor_active", "pm_full") - 80.0) <= 1.0,
          "tensor 80% on full grids")
    check(abs(phase_avg(samples, ks, "dram_bw", "pm_one") - 50.0 / SMS) <= 0.1,
          "dram 0.5/132 on one block")
    # DRAM bytes: dram x SM share x HBM rate x time, half read half write
    for s, e, v in samples["dram_read_bytes"]:
        want = [model(ks, s + d, e + d, lambda k: dram[k[3]] * sm_share(k)) / 100.0
                * HBM_BYTES_PER_NS * (e - s) / 2 for d in SHIFTS]
        # 1e-5 of the interval's full rate: the model keeps the profile
        # factors as floats (0.3 reads 0.30000001: 18 bytes in 4.5e8)
        slack = 1e-5 * HBM_BYTES_PER_NS * (e - s)
        check(min(want) - slack <= v <= max(want) + slack,
              f"dram_read_bytes over [{s}, {e}): {v}, model {min(want):.0f}..{max(want):.0f}")
    check(samples["dram_write_bytes"] and samples["pcie_bw"], "write bytes and PCIe")
    check(all(v == 0 for _, _, v in samples["pcie_bw"]), "no copies: no PCIe")


def same_trace_but_pm(d_pm, d_off):
    """The kernel records and their correlation with the calls are the
    same with PM sampling degraded as without it."""
    a, _ = dump(traces(d_pm)[0])
    b, _ = dump(traces(d_off)[0])
    check(linked(a), "kernels linked to calls")
    check(len(by_kind(a, "kernel")) == len(by_kind(b, "kernel")) == 200, "200 kernels")
    fa = [(c["fn"], c["corr"]) for c in api_calls(a)]
    fb = [(c["fn"], c["corr"]) for c in api_calls(b)]
    check(sorted(fa, key=lambda c: c[1]) == sorted(fb, key=lambda c: c[1]),
          "the calls and their correlation ids")
    check(sorted(k["corr"] for k in by_kind(a, "kernel")) ==
          sorted(k["corr"] for k in by_kind(b, "kernel")),
          "kernel correlation ids")
    check(not by_kind(a, "state"), "activity tracing not degraded")


def degraded(mode, status, word):
    d, p, calls = run_pm({"GPUSIM_PM": mode})
    lines = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
    check(len(lines) == 1 and "PM sampling" in lines[0] and word in lines[0],
          f"one stderr line expected: {p.stderr!r}")
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    check(len(samplers) == 1 and samplers[0]["status"] == status,
          f"sampler {samplers}")
    check(not samples and not defs, "no PM samples")
    d_off, _, _ = run_pm({"GPUPHASE_PM": None})
    same_trace_but_pm(d, d_off)
    check(calls.get("deinitialized") == 1, "de-initialised once")
    return samplers[0], calls


def t_denied():
    """CUPTI_ERROR_INSUFFICIENT_PRIVILEGES at Enable: DENIED, one line; the
    host object made before it is released; nothing else changes."""
    s, calls = degraded("denied", DENIED, "not permitted")
    check("INSUFFICIENT_PRIVILEGES" in s["reason"], f"reason {s['reason']}")
    check(calls.get("cuptiProfilerHostDeinitialize") == 1, "host object released")
    check("cuptiPmSamplingDisable" not in calls and "cuptiPmSamplingStart" not in calls,
          f"nothing after the failed Enable: {calls}")


def t_denied_two():
    """Two GPUs, both denied: each has its DENIED sampler record, and
    standard error one line (it had one per device)."""
    d, p, _ = run_pm({"GPUSIM_PM": "denied", "GPUSIM_DEVICES": "2"},
                     args=[prog("e2e-prog-paths"), "multidevice"])
    lines = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
    check(len(lines) == 1 and "not permitted" in lines[0], f"stderr {p.stderr!r}")
    _, _, _, samplers = pm_view(traces(d)[0])
    check(sorted((s["device"], s["status"]) for s in samplers) == [(0, DENIED), (1, DENIED)],
          f"samplers {samplers}")


def t_busy():
    """Another session holds the device's counters: BUSY."""
    degraded("busy", BUSY, "busy")


def t_unsupported():
    """The device does not support PM sampling: UNSUPPORTED, and no call
    after cuptiProfilerDeviceSupported said so."""
    _, calls = degraded("unsupported", UNSUPPORTED, "unsupported")
    check("cuptiDeviceGetChipName" not in calls, f"calls {calls}")


def t_invalid():
    """Names this chip rejects are dropped, said in the sampler's reason;
    the others sampled."""
    bad = ["dram__bytes_read.sum",
           "pcie__throughput.avg.pct_of_peak_sustained_elapsed"]
    d, p, _ = run_pm({"GPUSIM_PM_INVALID": ",".join(bad)})
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    check(len(samplers) == 1 and samplers[0]["status"] == OK, f"{samplers}")
    check(all(b in samplers[0]["reason"] for b in bad), samplers[0]["reason"])
    check({m["name"] for m in defs.values()} == NAMES - {"dram_read_bytes", "pcie_bw"},
          f"metrics {sorted(m['name'] for m in defs.values())}")
    check_against_model(samples, kernels(recs), "sm_active", sm_share)


def t_off():
    """Without GPUPHASE_PM=1: no PM record and no PM call at all."""
    d, p, calls = run_pm({"GPUPHASE_PM": None})
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    check(not defs and not samples and not samplers, "no PM records")
    check(not calls, f"PM calls made: {calls}")
    check(linked(recs), "kernels linked")
    d, p, calls = run_pm({"GPUPHASE_PM": "0"})
    check(not calls, f"GPUPHASE_PM=0: PM calls made: {calls}")


def t_overflow():
    """The hardware buffer overflows (it holds 8 samples, decoded every
    100 ms): OVERFLOW once, with one line on stderr, then sampling goes on
    (OK again)."""
    d, p, calls = run_pm({"GPUSIM_PM": "overflow"})
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    st = [s["status"] for s in samplers]
    check(st[:3] == [OK, OVERFLOW, OK] and st.count(OVERFLOW) == 1, f"states {st}")
    ours = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
    check(len(ours) == 1 and "overflowed" in ours[0], f"one stderr line: {p.stderr!r}")
    check(samples["sm_active"], "samples")
    check(all(a["start"] <= b["start"] for a, b in zip(samplers, samplers[1:])),
          "sampler records in order")
    # 8 samples kept of each decode's ~100
    check_against_model(samples, kernels(recs), "sm_active", sm_share, least=8)


def t_interval():
    """GPUPHASE_PM_INTERVAL_US=2000: 2 ms samples; a bad value: one line,
    the default (1 ms)."""
    d, p, _ = run_pm({"GPUPHASE_PM_INTERVAL_US": "2000"})
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    lens = {e - s for s, e, _ in samples["sm_active"]}
    check(lens == {2000000} or max(abs(x - 2000000) for x in lens) <= 100,
          f"sample lengths {sorted(lens)[:5]}")
    d, p, _ = run_pm({"GPUPHASE_PM_INTERVAL_US": "soon"})
    check("GPUPHASE_PM_INTERVAL_US" in p.stderr, f"stderr {p.stderr!r}")
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    lens = [e - s for s, e, _ in samples["sm_active"]]
    check(max(abs(x - 1000000) for x in lens) <= 100, "1 ms by default")


def t_fork():
    """A forked child starts its own sampling at its first CUDA call; the
    parent's goes on; each de-initialises once."""
    d, p, calls = run_pm(args=[prog("e2e-prog-lifecycle"), "fork"])
    files = traces(d)
    check(len(files) == 2, f"two traces: {files}")
    for f in files:
        recs, defs, samples, samplers = pm_view(f)
        check(samplers and samplers[0]["status"] == OK, f"{f}: {samplers}")
        check(len(by_kind(recs, "kernel")) == 5 and linked(recs), f"{f}: kernels")
    st = open(os.path.join(d, "pm-stats")).read()
    de = re.findall(r"^\d+ deinitialized (\d+)$", st, re.M)
    check(de == ["1", "1"], f"each process de-initialised once: {st}")


def t_missing():
    """GPUPHASE_CUPTI=0 with GPUPHASE_PM=1: MISSING for the device, one
    line; kernels are not recorded (no CUPTI), the calls are."""
    d, p, calls = run_pm({"GPUPHASE_CUPTI": "0"})
    lines = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
    check(len(lines) == 1 and "CUPTI is not loaded" in lines[0], f"stderr {p.stderr!r}")
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    check([(s["device"], s["status"]) for s in samplers] == [(0, MISSING)],
          f"samplers {samplers}")
    check(not samples and not calls, "no PM call, no sample")
    check(len(by_kind(recs, "api")) >= 200, "the calls recorded")


def t_device1():
    """Two devices, the program on device 1 only: device 1 is sampled
    (and agrees with the model), device 0 is not touched."""
    d, p, calls = run_pm({"GPUSIM_DEVICES": "2"},
                         args=[prog("e2e-prog-pm"), "100", "1"])
    recs, defs, samples, samplers = pm_view(traces(d)[0])
    check([(s["device"], s["status"]) for s in samplers] == [(1, OK)],
          f"samplers {samplers}")
    check({m["device"] for m in defs.values()} == {1}, "metrics of device 1")
    ks = kernels(recs)
    check(all(k["device"] == 1 for k in by_kind(recs, "kernel")), "kernels on 1")
    check_against_model(samples, ks, "sm_active", sm_share)
    check(calls.get("cuptiPmSamplingEnable") == 1, f"one session: {calls}")


def t_exec():
    """exec: the image's sampling stops with its trace (its last samples
    in it); the new image, its GPUPHASE_PM restored by the shim, samples
    on its own."""
    d, p, calls = run_pm({"GPUPHASE_OUTPUT": "t-%p.gph"},
                         args=[prog("e2e-prog-lifecycle"), "exec"])
    files = traces(d)
    check(len(files) == 2, f"two traces: {files}")
    for f in files:
        recs, defs, samples, samplers = pm_view(f)
        check(samplers and samplers[0]["status"] == OK, f"{f}: {samplers}")
        check(by_kind(recs, "summary"), f"{f}: complete")
        check(linked(recs), f"{f}: kernels linked")


TESTS = {"exec": t_exec, "missing": t_missing, "device1": t_device1, "model": t_model, "profile": t_profile, "denied": t_denied, "denied_two": t_denied_two, "busy": t_busy,
         "unsupported": t_unsupported, "invalid": t_invalid, "off": t_off,
         "overflow": t_overflow, "interval": t_interval, "fork": t_fork}

if __name__ == "__main__":
    sys.exit(main(TESTS))

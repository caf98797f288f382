"""The report's measured counters against the simulator's model, end to end:
a program run under the shim on the simulated stack (NVML and GPM from
libnvidia-ml.so.1, PM sampling from the simulated CUPTI), its trace read by
gpuphase-report, and the JSON's devices[].measured compared with what the
model says for the same run (tests/simcuda/README.md, "Counters"):

  * GPU-Util = share of time with a kernel running = the report's own
    device busy (computed from the trace's kernel records);
  * SM active = time-average of min(1, blocks / 132): busy / 132 for
    one-block kernels, busy for 132-block ones;
  * tensor and DRAM = the GPUSIM_KERNEL_PROFILE factor x SM share;
  * memory used = live allocations + the 512 MiB context.

Tolerances: the measured figures average over the samples' own periods
(NVML's 1/6 s periods, GPM's 200 ms intervals, PM's 1 ms samples), which
start after the first CUDA call and leave out the first period, while
busy is over the report's whole window. In a steady loop the two differ by
the load of the uncovered edges: a few points at most (4 points for
GPU-Util; 12% of the value, plus the JSON's 0.01 rounding, for the
ratios).
"""
import json
import sys

from gptest import check, main, prog, report_cmd, run, traces, workdir

PROG = "e2e-prog-counters"
SMS = 132
MIB = 1 << 20
BASE = {"GPUPHASE_SAMPLE_MS": "50", "GPUSIM_API_NS": "20000",
        "GPUSIM_NVML": None, "GPUSIM_NVML_ORDER": None, "GPUSIM_DEVICES": None,
        "GPUSIM_KERNEL_PROFILE": None, "GPUPHASE_NVML": None,
        "GPUPHASE_PM": None, "GPUSIM_PM": None}


def same_from_summary(path, j):
    """--format summary of the trace, merged: the same JSON (measured
    counters and call sites included)."""
    summ = path + ".gps"
    p = report_cmd(["--format", "summary", "-o", summ, path])
    check(p.returncode == 0, f"summary: {p.stderr}")
    p = report_cmd(["merge", "--format", "json", summ])
    check(p.returncode == 0, f"merge: {p.stderr}")
    check(p.stdout == j, "merge of the trace's summary differs from its report")


def report(args, extra=None, merge=False):
    d = workdir()
    e = dict(BASE, **(extra or {}))
    e["GPUPHASE_OUTPUT"] = "t.gph"
    p = run([prog(PROG)] + [str(a) for a in args], d, e, timeout=90)
    check(p.returncode == 3, f"{args}: exit {p.returncode}, expected 3: {p.stderr}")
    t = traces(d)
    check(len(t) == 1, f"{args}: traces {t}")
    j = report_cmd(["--format", "json", t[0]])
    check(j.returncode == 0, f"report: {j.returncode} {j.stderr}")
    txt = report_cmd([t[0]])
    check(txt.returncode == 0, f"text report: {txt.returncode} {txt.stderr}")
    r = json.loads(j.stdout)
    if merge:
        same_from_summary(t[0], j.stdout)
    return r, r["devices"][0], txt.stdout, p.stderr


def busy_run(args, extra, least):
    """report() of a loop meant to keep the device busy at least `least`
    percent of the time (from its own kernel records): on a loaded machine
    the host can be descheduled between launches and leave the device idle,
    which says nothing of gpuphase, so such a run is made again (3 tries)."""
    for attempt in range(3):
        r, d, txt, err = report(args, extra)
        busy = d["measured"]["device_busy_pct"]
        if busy >= least:
            return r, d, txt, err
    check(False, f"busy {busy}% in 3 runs: the loop should keep the device busy "
          f"at least {least}%")


def near(got, want, rel, what):
    check(got is not None, f"{what}: not measured")
    check(abs(got - want) <= rel * want + 0.011,
          f"{what}: {got}, model {want:.3f} (±{100 * rel:.0f}%)")


def rules(r):
    return {f["rule"] for f in r.get("findings", [])}


def sources(m):
    return {s["source"]: s["status"] for s in m["sources"]}


def t_launch():
    """One-block kernels, the device busy about a quarter of the time."""
    r, d, txt, err = report(["launch", 1000], merge=True)
    m = d["measured"]
    check(m is not None, "no measured object")
    check(sources(m) == {"nvml": "ok", "gpm": "ok"}, f"sources {m['sources']}")
    busy = m["device_busy_pct"]  # ours, from the trace's kernel records
    check(10 < busy < 90, f"busy {busy}%: not the loop this test expects")
    check(abs(m["nvml_gpu_util_pct"] - busy) <= 4,
          f"nvidia-smi GPU-Util {m['nvml_gpu_util_pct']} vs busy {busy}")
    near(m["sm_active_pct"], busy / SMS, 0.12, "SM active (one block of 132 SMs)")
    check(m["used"]["sm_active"] == "gpm", f"sm_active from {m['used']['sm_active']}")
    check(m["tensor_active_pct"] == 0 and m["dram_bw_pct"] == 0,
          f"tensor {m['tensor_active_pct']} dram {m['dram_bw_pct']} without a profile")
    # the context (512 MiB) and the program's one 1 MiB allocation
    check(m["mem_used_peak_bytes"] == 512 * MIB + MIB,
          f"memory used peak {m['mem_used_peak_bytes']}")
    check(m["cuda_alloc_peak_bytes"] == MIB, f"allocated {m['cuda_alloc_peak_bytes']}")
    check("Measured (device-wide)" in txt, "no measured section in the text")
    check("measured_sm_gap" not in rules(r), "SM-gap finding at a low GPU-Util")
    check(err == "", f"stderr: {err}")


def t_saturated():
    """One-block kernels back to back: nvidia-smi high, SMs nearly idle."""
    # 100 us kernels: 256 of them queue 25.6 ms of work per synchronisation,
    # so the host's gaps between launches leave the device idle only at the
    # synchronisations
    r, d, txt, _ = busy_run(["launch", 800], {"GPUSIM_API_NS": "1000",
                                              "GPUSIM_WAVE_NS": "100000"}, 80)
    m = d["measured"]
    busy = m["device_busy_pct"]
    check(abs(m["nvml_gpu_util_pct"] - busy) <= 4,
          f"GPU-Util {m['nvml_gpu_util_pct']} vs busy {busy}")
    near(m["sm_active_pct"], busy / SMS, 0.12, "SM active")
    check("measured_sm_gap" in rules(r), f"findings {rules(r)}")
    check("SMs active" in txt, "the SM-gap finding is not in the text")


def t_tensor():
    """Full-grid kernels with tensor 0.8 and DRAM 0.3 of their SM share."""
    _, d, _, _ = report(["tensor", 1000],
                        {"GPUSIM_KERNEL_PROFILE": "gemm*:tensor=0.8,dram=0.3"})
    m = d["measured"]
    busy = m["device_busy_pct"]
    near(m["sm_active_pct"], busy, 0.12, "SM active (132 blocks)")
    near(m["tensor_active_pct"], 0.8 * busy, 0.12, "tensor active")
    near(m["dram_bw_pct"], 0.3 * busy, 0.12, "DRAM bandwidth")


def t_bandwidth():
    """Full-grid memory-bound kernels (DRAM 0.9, no tensor) back to back."""
    r, d, txt, _ = busy_run(["tensor", 800],
                            {"GPUSIM_KERNEL_PROFILE": "gemm*:dram=0.9",
                             "GPUSIM_API_NS": "1000", "GPUSIM_WAVE_NS": "100000"}, 70)
    m = d["measured"]
    busy = m["device_busy_pct"]
    near(m["dram_bw_pct"], 0.9 * busy, 0.12, "DRAM bandwidth")
    check(m["tensor_active_pct"] == 0, f"tensor {m['tensor_active_pct']}")
    check("measured_memory_bound" in rules(r), f"findings {rules(r)}")
    check("memory-bound" in txt, "the memory-bound finding is not in the text")


def t_pm():
    """PM sampling on: SM active from PM (preferred over GPM)."""
    _, d, _, err = report(["launch", 600], {"GPUPHASE_PM": "1"}, merge=True)
    m = d["measured"]
    check(sources(m).get("pm") == "ok", f"sources {m['sources']}")
    check(m["used"]["sm_active"] == "pm", f"sm_active from {m['used']['sm_active']}")
    near(m["sm_active_pct"], m["device_busy_pct"] / SMS, 0.12, "SM active (PM)")
    check(err == "", f"stderr: {err}")


def t_pm_denied():
    """PM denied: one stderr line, the source listed as denied, GPM used."""
    _, d, _, err = report(["launch", 600], {"GPUPHASE_PM": "1", "GPUSIM_PM": "denied"})
    m = d["measured"]
    check(sources(m) == {"nvml": "ok", "gpm": "ok", "pm": "denied"},
          f"sources {m['sources']}")
    pm = [s for s in m["sources"] if s["source"] == "pm"][0]
    check("INSUFFICIENT_PRIVILEGES" in (pm["reason"] or ""), f"reason {pm['reason']}")
    check(m["used"]["sm_active"] == "gpm", f"sm_active from {m['used']['sm_active']}")
    lines = err.strip().splitlines()
    check(len(lines) == 1 and "PM sampling" in lines[0], f"stderr: {err!r}")


def t_nvml_missing():
    """No NVML: one stderr line, no measured figures, a note saying why."""
    r, d, txt, err = report(["launch", 300], {"GPUSIM_NVML": "absent"})
    check(d["measured"] is None, f"measured {d['measured']}")
    lines = err.strip().splitlines()
    check(len(lines) == 1 and "NVML" in lines[0], f"stderr: {err!r}")
    notes = r.get("notes", [])
    check(any("nvml missing" in n for n in notes), f"notes {notes}")
    check("Measured (device-wide)" not in txt, "a measured section without counters")


TESTS = {"launch": t_launch, "saturated": t_saturated, "tensor": t_tensor,
         "bandwidth": t_bandwidth, "pm": t_pm, "pm_denied": t_pm_denied,
         "nvml_missing": t_nvml_missing}

if __name__ == "__main__":
    sys.exit(main(TESTS))

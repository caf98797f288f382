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
import re
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
    # byte counts are whole numbers in the JSON (a time-weighted mean of
    # the device's memory size read 141000000000.00)
    frac = re.findall(r'"[a-z_]*_bytes": \d+\.\d+', j.stdout)
    check(not frac, f"{args}: byte counts with decimals {frac[:3]}")
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
    # below 80% GPU-Util the coverage finding is not left to measured_sm_gap
    # (which does not fire there): it says it, from the measured SMs active
    f = [x for x in r.get("findings", []) if x["rule"] == "low_sm_coverage"]
    check(len(f) == 1 and "SMs active" in f[0]["text"] and "(measured, gpm)" in f[0]["text"],
          f"low_sm_coverage with NVML on: {r.get('findings')}")
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
    # SMs active under 10% with one decimal, as the measured block prints
    # it (it read "1%" for 0.7%)
    g = [x["text"] for x in r["findings"] if x["rule"] == "measured_sm_gap"]
    check(g and re.search(r"SMs active \d\.\d%", g[0]), f"SM-gap text {g}")


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


# The simulated NVML's power model (tests/simcuda/README.md, "NVML"):
# 100 W idle + 500 W x GPU-Util; the energy counter is its integral, so
# over [a, b) it is 100 W x (b - a) + 500 W x (the time a kernel ran).
IDLE_W, BUSY_W = 100.0, 500.0


def model_energy(d):
    """The model's energy over the report's window, in J, from the window
    and the device busy share the report computed from the kernels."""
    w = d["window_ns"] / 1e9
    return IDLE_W * w + BUSY_W * d["measured"]["device_busy_pct"] / 100 * w


def t_short():
    """A run shorter than one sampling period (GPUPHASE_SAMPLE_MS=1000, a
    120 ms loop): the sampler's first reading of the device comes when the
    trace first describes it, not a period later, so the window has memory
    used (the 512 MiB context and the program's 1 MiB allocation) and power
    (100 W: the model's power is that of the last complete NVML period,
    1/6 s from NVML's initialisation at the first CUDA call, and none has
    completed by then), and the text says why GPU-Util is missing (NVML's
    first period only starts its samples: the second ends after the run).
    The period leaves a loaded machine room: the device is described
    within the writer's 10 ms poll when idle, tens of ms when not. Then a
    run of about a millisecond."""
    r, d, txt, err = report(["launch", 120], {"GPUPHASE_SAMPLE_MS": "1000"})
    m = d["measured"]
    check(m is not None, "no measured object")
    check(d["window_ns"] < 1000e6, f"window {d['window_ns']} ns: not shorter than a period")
    check(m["mem_used_peak_bytes"] == 512 * MIB + MIB,
          f"memory used peak {m['mem_used_peak_bytes']}")
    check(m["power_w"] == IDLE_W, f"power {m['power_w']} W")
    check(m["sm_clock_mhz"] == 1980, f"SM clock {m['sm_clock_mhz']}")
    check(m["nvml_gpu_util_pct"] is None, f"GPU-Util {m['nvml_gpu_util_pct']}")
    check("nvidia-smi GPU-Util none (no NVML sample period within the run)" in txt,
          f"no GPU-Util note: {txt.split('Measured', 1)[-1][:400]}")
    check("memory used peak 513.0 MiB (device)" in txt,
          f"memory not in the text: {txt.split('Measured', 1)[-1][:400]}")
    check(err == "", f"stderr: {err}")
    # ten kernels, about a millisecond: the device may be described only
    # at exit, its readings then all after the window; the note still
    # says why GPU-Util is missing. The energy, when the sampler's first
    # reading (once NVML is initialised on its thread) came before the
    # window's end, is the counter interpolated between that reading and
    # the one at exit: at most the model's full power over the window
    # (JSON rounds to a mJ)
    r, d, txt, err = report(["fixed", 10], {"GPUPHASE_SAMPLE_MS": None})
    m = d["measured"]
    check(m is not None, "ten kernels: no measured object")
    check(m["nvml_gpu_util_pct"] is None, f"ten kernels: GPU-Util {m['nvml_gpu_util_pct']}")
    check("nvidia-smi GPU-Util none (no NVML sample period within the run)" in txt,
          f"ten kernels: no GPU-Util note: {txt.split('Measured', 1)[-1][:400]}")
    w = d["window_ns"] / 1e9
    check(m["energy_j"] is None or 0 <= m["energy_j"] <= (IDLE_W + BUSY_W) * w + 0.002,
          f"ten kernels: energy {m['energy_j']} J over {w * 1e3:.3f} ms")
    check(err == "", f"ten kernels: stderr: {err}")


def t_long_period():
    """GPUPHASE_SAMPLE_MS=60000 over a 1 s run: the reading at start and the
    one at exit give every quantity its value: GPU-Util (NVML's periods
    within the run, read at exit) against busy, SM active (one GPM interval
    from start to exit) against busy / 132, memory used, clocks, power
    (100 W: no NVML period had completed at the first reading) and the
    energy of the model."""
    r, d, txt, err = report(["launch", 1000], {"GPUPHASE_SAMPLE_MS": "60000"})
    m = d["measured"]
    check(m is not None, "no measured object")
    busy = m["device_busy_pct"]
    check(m["nvml_gpu_util_pct"] is not None and abs(m["nvml_gpu_util_pct"] - busy) <= 4,
          f"nvidia-smi GPU-Util {m['nvml_gpu_util_pct']} vs busy {busy}")
    near(m["sm_active_pct"], busy / SMS, 0.12, "SM active (one block of 132 SMs)")
    check(m["mem_used_peak_bytes"] == 512 * MIB + MIB,
          f"memory used peak {m['mem_used_peak_bytes']}")
    check(m["sm_clock_mhz"] == 1980 and m["mem_clock_mhz"] == 2619,
          f"clocks {m['sm_clock_mhz']} {m['mem_clock_mhz']}")
    check(m["power_w"] == IDLE_W, f"power {m['power_w']} W")
    near(m["energy_j"], model_energy(d), ENERGY_TOL, "energy over the window")
    for what in ("GPU-Util", "SM active", "memory used peak", "energy"):
        check(what in txt, f"{what} not in the text")
    check(err == "", f"stderr: {err}")


# The report's energy is the counter's difference between the window's
# edges, interpolated between the readings around each (the sampler reads
# every device's counter when it starts, at the first CUDA call, once NVML
# is initialised on its thread, and once more at exit, after the window),
# else from the first reading inside it. 3%: linear interpolation while
# the power changes between two readings, the report's busy share rounded,
# and a first reading some ms after the window's start on a loaded machine
# or under a sanitizer. A first reading one 100 ms period late misses about
# 10% of a 1 s run.
ENERGY_TOL = 0.03


def t_energy():
    """Energy over a 1 s run at the default period against the model."""
    _, d, _, _ = report(["launch", 1000], {"GPUPHASE_SAMPLE_MS": None})
    m = d["measured"]
    near(m["energy_j"], model_energy(d), ENERGY_TOL, "energy over the window")


TESTS = {"launch": t_launch, "saturated": t_saturated, "tensor": t_tensor,
         "bandwidth": t_bandwidth, "pm": t_pm, "pm_denied": t_pm_denied,
         "nvml_missing": t_nvml_missing, "short": t_short,
         "long_period": t_long_period, "energy": t_energy}

if __name__ == "__main__":
    sys.exit(main(TESTS))

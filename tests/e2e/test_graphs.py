"""End-to-end tests of CUDA graphs under the shim, on the simulated GPU:
a graph built node by node (prog_graph_explicit.c) and one captured from
three streams joined by events (prog_capture_forkjoin.c). Each program
behaves the same with and without the shim; every device record belongs
to one graph launch call; the counts of kernels, copies and memsets are
those the simulator's model gives (tests/simcuda/README.md: nodes start
when their dependencies end); the calls made while streams captured are
marked captured (API flag 2) and counted as such, never as launches
waiting for a kernel."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

MB = 1 << 20
CLS_LAUNCH = 1     # GPUPHASE_API_LAUNCH
OP_CAPTURED = 2    # GPUPHASE_OP_CAPTURED (API.flags)
DEVICE_KINDS = ("kernel", "memcpy", "memset")
SIM_DEFAULTS = {k: "" for k in (
    "GPUSIM_DEVICES", "GPUSIM_SMS", "GPUSIM_MEM_BYTES", "GPUSIM_WAVE_NS",
    "GPUSIM_PCIE_GBPS", "GPUSIM_HBM_GBPS", "GPUSIM_COPY_LATENCY_NS",
    "GPUSIM_API_NS", "GPUSIM_CUPTI")}


def run_both(name, *argv):
    """Runs the program without and with the shim: same exit code and
    stdout; returns the trace's records, the trace and the output."""
    args = [prog("e2e-prog-" + name), *argv]
    d0, d1 = workdir(), workdir()
    p0 = run(args, d0, extra=SIM_DEFAULTS, preload=False)
    p1 = run(args, d1, extra=SIM_DEFAULTS)
    check(p0.returncode == 0, f"{name} failed alone ({p0.returncode}): {p0.stdout} {p0.stderr}")
    check(p1.returncode == p0.returncode, f"exit {p1.returncode} under the shim")
    check(p1.stdout == p0.stdout, f"output differs under the shim: {p0.stdout!r} vs {p1.stdout!r}")
    files = traces(d1)
    check(len(files) == 1, f"one trace expected, got {files}")
    recs, _ = dump(files[0])
    check(not by_kind(recs, "state"), "trace unexpectedly degraded")
    check(by_kind(recs, "summary")[0]["lost"] == 0, "events lost")
    said = dict(line.split("=", 1) for line in p0.stdout.split() if "=" in line)
    return recs, files[0], said


def calls_of(recs):
    defs = {r["api"]: r for r in by_kind(recs, "api_def")}
    out = api_calls(recs)
    for c in out:
        c["cls"] = defs[c["api"]]["cls"] if c["api"] in defs else 0
    return out


def owners(recs, calls):
    """Every device record has exactly one API record with its corr, a
    graph launch; returns them per record."""
    by_corr = {}
    for c in calls:
        if c["corr"]:
            by_corr.setdefault(c["corr"], []).append(c)
    own = {}
    for kind in DEVICE_KINDS:
        for i, r in enumerate(by_kind(recs, kind)):
            o = by_corr.get(r["corr"], [])
            check(len(o) == 1, f"{kind} corr={r['corr']} matches {len(o)} API records")
            check(o[0]["fn"] == "cudaGraphLaunch", f"{kind} linked to {o[0]['fn']}")
            check(r.get("graph_id", 1) != 0, f"{kind} without graph id")
            own[(kind, i)] = o[0]
    return own


def report_json(path):
    p = subprocess.run([REPORT, "--format", "json", path], capture_output=True,
                       text=True, timeout=60, env=env(preload=False))
    check(p.returncode == 0, f"report failed: {p.stderr}")
    return json.loads(p.stdout)


def report_text(path):
    p = subprocess.run([REPORT, path], capture_output=True, text=True, timeout=60,
                       env=env(preload=False))
    check(p.returncode == 0, f"report failed: {p.stderr}")
    return p.stdout


def per_launch(recs, own, kind):
    out = {}
    for i, r in enumerate(by_kind(recs, kind)):
        out.setdefault(own[(kind, i)]["corr"], []).append(r)
    return out


def t_forkjoin():
    """6 nodes captured from streams A, B, C; 20 launches: 4 kernels, one
    copy and one memset each, timed as the model says; the 4 captured
    launches, the copy, the memset and the event calls marked captured."""
    recs, path, said = run_both("capture_forkjoin")
    check(said.get("nodes") == "6" and said.get("status") == "ok", f"program said {said}")
    calls = calls_of(recs)
    own = owners(recs, calls)
    graph_launches = [c for c in calls if c["fn"] == "cudaGraphLaunch"]
    check(len(graph_launches) == 20, f"{len(graph_launches)} graph launches")
    ks, cs, ms = by_kind(recs, "kernel"), by_kind(recs, "memcpy"), by_kind(recs, "memset")
    check((len(ks), len(cs), len(ms)) == (80, 20, 20),
          f"{len(ks)} kernels, {len(cs)} copies, {len(ms)} memsets; want 80, 20, 20")
    pk, pc, pm = (per_launch(recs, own, k) for k in DEVICE_KINDS)
    for g in graph_launches:
        k = {r["name"]: r for r in pk.get(g["corr"], [])}
        check(sorted(k) == ["fj_b", "fj_c", "fj_post", "fj_pre"], f"launch ran {sorted(k)}")
        c, m = pc[g["corr"]][0], pm[g["corr"]][0]
        pre, b, cc, post = k["fj_pre"], k["fj_b"], k["fj_c"], k["fj_post"]
        check(b["start"] == pre["end"] and c["start"] == pre["end"], "fork not after fj_pre")
        check(c["end"] - c["start"] == copy_ns(MB, HBM_GBPS), "copy duration")
        check(cc["start"] == c["end"], "fj_c not after the copy")
        join = max(b["end"], cc["end"])
        check(join == pre["end"] + kernel_ns(264), "join time")
        check(m["start"] == join, "memset not at the join")
        check(m["end"] - m["start"] == copy_ns(1000, HBM_GBPS), "memset duration")
        check(post["start"] == m["end"], "fj_post not after the memset")
        check(post["end"] - post["start"] == kernel_ns(396), "fj_post duration")
    captured = [c for c in calls if c["flags"] & OP_CAPTURED]
    names = sorted(c["fn"] for c in captured)
    want = sorted(["cudaLaunchKernel"] * 4 + ["cudaEventRecord"] * 3 +
                  ["cudaStreamWaitEvent"] * 4 + ["cudaMemcpyAsync", "cudaMemsetAsync"])
    check(names == want, f"captured calls {names}")
    check(not [c for c in calls if c["fn"] == "cudaGraphLaunch" and c["flags"]],
          "a graph launch marked captured")
    check([c["fn"] for c in calls if c["fn"].startswith("cudaStream") and
           "Capture" in c["fn"]] == ["cudaStreamBeginCapture", "cudaStreamEndCapture"],
          "capture begin/end not recorded")
    j = report_json(path)
    check(j["launches"]["captured"] == 4, f"launches.captured {j['launches']}")
    check(j["diagnostics"]["async_copies_without_device_record"] == 0,
          "captured copy waits for a device record")
    t = report_text(path)
    check("captured: 4 launches" in t, "text report lacks the captured count")
    # a summary of the trace, merged, says the same (docs/jobs.md)
    summ = os.path.join(os.path.dirname(path), "t.gps")
    p = subprocess.run([REPORT, "--format", "summary", "-o", summ, path],
                       capture_output=True, text=True, timeout=60, env=env(preload=False))
    check(p.returncode == 0, f"summary failed: {p.stderr}")
    p = subprocess.run([REPORT, "merge", "--format", "json", summ], capture_output=True,
                       text=True, timeout=60, env=env(preload=False))
    check(p.returncode == 0, f"merge failed: {p.stderr}")
    check(json.loads(p.stdout)["launches"] == j["launches"],
          f"merged launches {json.loads(p.stdout)['launches']}, report {j['launches']}")
    peak = j["devices"][0]["utilization"]["mem_peak_bytes"]
    check(peak == 2 * MB, f"memory peak {peak}, want {2 * MB} (two cudaMalloc)")


def t_explicit():
    """7 nodes; 10 launches, ge_a 132 blocks in the first 5 and 396 after
    its parameters were set; the alloc and free nodes recorded with the
    allocation's size and address."""
    recs, path, said = run_both("graph_explicit")
    check(said == {"nodes": "7", "launches": "10", "host_calls": "10",
                   "graph_memory_released": "yes", "status": "ok"}, f"program said {said}")
    calls = calls_of(recs)
    own = owners(recs, calls)
    gl = [c for c in calls if c["fn"] == "cudaGraphLaunch"]
    check(len(gl) == 10, f"{len(gl)} graph launches")
    ks, cs, ms = by_kind(recs, "kernel"), by_kind(recs, "memcpy"), by_kind(recs, "memset")
    check((len(ks), len(cs), len(ms)) == (20, 10, 10),
          f"{len(ks)} kernels, {len(cs)} copies, {len(ms)} memsets; want 20, 10, 10")
    pk, pc, pm = (per_launch(recs, own, k) for k in DEVICE_KINDS)
    gl.sort(key=lambda c: c["start"])
    for i, g in enumerate(gl):
        k = {r["name"]: r for r in pk[g["corr"]]}
        c, m = pc[g["corr"]][0], pm[g["corr"]][0]
        a_blocks = 132 if i < 5 else 396
        check(k["ge_a"]["grid_x"] == a_blocks, f"launch {i}: ge_a grid {k['ge_a']['grid_x']}")
        check(k["ge_a"]["start"] == m["end"] and k["ge_b"]["start"] == m["end"],
              "branches not after the memset")
        check(k["ge_a"]["end"] - k["ge_a"]["start"] == kernel_ns(a_blocks), "ge_a duration")
        check(c["start"] == k["ge_a"]["end"], "copy not after ge_a")
        check(c["bytes"] == MB and m["bytes"] == 1000, "sizes")
    alloc = [c for c in calls if c["fn"] == "cudaGraphAddMemAllocNode"]
    free = [c for c in calls if c["fn"] == "cudaGraphAddMemFreeNode"]
    check(len(alloc) == 1 and alloc[0]["bytes"] == MB and alloc[0]["ptr"] != 0,
          f"alloc node record {alloc}")
    check(len(free) == 1 and free[0]["ptr"] == alloc[0]["ptr"], f"free node record {free}")
    check(not [c for c in calls if c["flags"] & OP_CAPTURED], "calls marked captured")
    inst = [c for c in calls if c["fn"] == "cudaGraphInstantiate"]
    check(len(inst) == 1 and inst[0]["ptr"] == gl[0]["func"],
          "instantiation not recorded with its executable graph")
    j = report_json(path)
    check(j["launches"]["captured"] == 0, "captured launches without capture")
    # the 1 MiB cudaMalloc and, from the first launch on, the graph's 1 MiB
    peak = j["devices"][0]["utilization"]["mem_peak_bytes"]
    check(peak == 2 * MB, f"memory peak {peak}, want {2 * MB}")
    # the graph frees its allocation (a free node): CUDA's pool keeps it
    # from the first launch to the executable graph's destruction, whatever
    # the launches in between (the second launch ended it); the cudaMalloc
    # lives from its call to its cudaFree
    at = {fn: sorted(c["start"] for c in calls if c["fn"] == fn)
          for fn in ("cudaMalloc", "cudaFree", "cudaGraphExecDestroy")}
    live = (at["cudaFree"][-1] - at["cudaMalloc"][0]) + \
        (at["cudaGraphExecDestroy"][0] - gl[0]["start"])
    mean, window = j["devices"][0]["utilization"]["mem_mean_bytes"], j["devices"][0]["window_ns"]
    want = MB * live / window
    check(abs(mean - want) <= want * 0.001 + 1, f"memory mean {mean}, want {want:.0f}")


def t_unfreed():
    """Graph memory that the graph does not free (no free node): it is the
    program's from each launch until the program frees it, as CUDA has it
    (prog_graph_explicit.c "unfreed"): live from the first launch to the
    first cudaFree, and again from the relaunch to the second cudaFree,
    across the executable graph's destruction. The mean over the window is
    1 MiB times that time over the window (the calls' start times, from
    the trace; a tolerance of 0.1% for the rounding of the mean)."""
    recs, path, said = run_both("graph_explicit", "unfreed")
    check(said.get("status") == "ok", f"program said {said}")
    calls = sorted(calls_of(recs), key=lambda c: c["start"])
    launch = [c["start"] for c in calls if c["fn"] == "cudaGraphLaunch"]
    free = [c["start"] for c in calls if c["fn"] == "cudaFree"]
    check(len(launch) == 2 and len(free) == 2, f"launches {launch}, frees {free}")
    live = (free[0] - launch[0]) + (free[1] - launch[1])
    j = report_json(path)
    u, window = j["devices"][0]["utilization"], j["devices"][0]["window_ns"]
    want = MB * live / window
    check(u["mem_peak_bytes"] == MB, f"memory peak {u['mem_peak_bytes']}")
    check(abs(u["mem_mean_bytes"] - want) <= want * 0.001 + 1,
          f"memory mean {u['mem_mean_bytes']}, want {want:.0f} "
          f"(1 MiB over {live} of {window} ns)")


def t_abandon():
    """Captures abandoned by destroying a stream (prog_capture_abandon.c):
    the new streams that get the destroyed streams' handles are not in a
    capture; only the calls issued while capturing are marked, and every
    other launch has its kernel, timed as the model says."""
    recs, path, said = run_both("capture_abandon")
    # the simulator hands a destroyed stream's handle to the next stream
    # (tests/simcuda/README.md): both new streams reuse one
    check(said == {"reused_origin": "1", "reused_joined": "1", "end": "901",
                   "graph": "0", "status": "ok"}, f"program said {said}")
    calls = calls_of(recs)
    by_fn = {}
    for c in sorted(calls, key=lambda c: c["start"]):
        by_fn.setdefault(c["fn"], []).append(c)
    marked = sorted(c["fn"] for c in calls if c["flags"] & OP_CAPTURED)
    check(marked == ["cudaEventRecord", "cudaLaunchKernel", "cudaStreamWaitEvent"],
          f"calls marked captured: {marked}")
    destroys = by_fn.get("cudaStreamDestroy", [])
    check(len(destroys) == 5 and all(d["ret"] == 0 and not d["flags"] for d in destroys),
          f"stream destroys recorded: {destroys}")
    launches = by_fn["cudaLaunchKernel"]
    check(len(launches) == 7, f"{len(launches)} launches")
    check(launches[0]["flags"] & OP_CAPTURED, "the launch into the capture not marked")
    kernels = {r["corr"]: r for r in by_kind(recs, "kernel")}
    want = [None] + [kernel_ns(132)] * 3 + [kernel_ns(264)] * 2 + [kernel_ns(396)]
    for i, (c, ns) in enumerate(zip(launches, want)):
        k = kernels.get(c["corr"])
        if ns is None:
            check(k is None, "the captured launch ran a kernel")
            continue
        check(not c["flags"], f"launch {i} (after the capture was abandoned) marked captured")
        check(k is not None, f"launch {i} has no kernel")
        check(k["end"] - k["start"] == ns, f"launch {i}: {k['end'] - k['start']} ns, want {ns}")
    check(len(kernels) == 6, f"{len(kernels)} kernels, want 6")
    j = report_json(path)
    check(j["launches"]["captured"] == 1, f"launches.captured {j['launches']}")


def t_many_quiet():
    """Captures on more streams than the shim follows: one line says so,
    through the shim's warnings, so GPUPHASE_QUIET=1 silences it (before,
    it was written to stderr whatever the setting)."""
    args = [prog("e2e-prog-capture_abandon"), "many", "300"]
    d = workdir()
    p = run(args, d, extra=SIM_DEFAULTS)
    check(p.returncode == 0 and "status=ok" in p.stdout, f"returned {p.returncode}: {p.stdout}")
    lines = [l for l in p.stderr.splitlines() if "too many capturing streams" in l]
    check(len(lines) == 1 and lines[0].startswith("gpuphase: "), f"stderr {p.stderr!r}")
    d = workdir()
    p = run(args, d, extra=dict(SIM_DEFAULTS, GPUPHASE_QUIET="1"))
    check(p.returncode == 0 and "status=ok" in p.stdout, f"quiet: returned {p.returncode}")
    check(p.stderr == "", f"GPUPHASE_QUIET=1, stderr {p.stderr!r}")
    check(len(traces(d)) == 1, f"quiet: traces {traces(d)}")


if __name__ == "__main__":
    sys.exit(main({"forkjoin": t_forkjoin, "explicit": t_explicit, "abandon": t_abandon,
                   "unfreed": t_unfreed, "many_quiet": t_many_quiet}))

"""End-to-end tests of the ways programs reach CUDA (prog_paths.c,
fakeblas.c, prog_nvcc.cu) under the shim, on the simulated GPU: every
launch is recorded exactly once on the host side, by the layer the program
called, and every device record is linked (same corr) to exactly one API
record. Expected durations come from the simulator's documented model
(tests/simcuda/README.md)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

MB = 1 << 20
LAYER_RUNTIME, LAYER_DRIVER = 0, 1
CLS_LAUNCH = 1  # GPUPHASE_API_LAUNCH
COPY_PTOP = 5   # GPUPHASE_COPY_PTOP
SYNC_CONTEXT = 4  # dump's type for a context synchronisation
DEVICE_KINDS = ("kernel", "memcpy", "memset", "sync")
# Every GPUSIM_* parameter at its default unless a test says otherwise.
SIM_DEFAULTS = {k: "" for k in (
    "GPUSIM_DEVICES", "GPUSIM_SMS", "GPUSIM_MEM_BYTES", "GPUSIM_WAVE_NS",
    "GPUSIM_PCIE_GBPS", "GPUSIM_HBM_GBPS", "GPUSIM_COPY_LATENCY_NS",
    "GPUSIM_API_NS", "GPUSIM_CUPTI")}
NEXT_LIB = os.path.join(PROGDIR, "libe2e-paths-next.so")
CUDART = os.path.join(SIMDIR, "libcudart.so.13")


traces_of_last_run = []


def same_file(a, b):
    try:
        return os.path.samefile(a, b)
    except OSError:
        return False


def run_prog(args, extra=None, preload=True):
    """Runs a program; returns its trace's records (None without the shim)
    and the key=value lines it printed."""
    d = workdir()
    e = dict(SIM_DEFAULTS)
    e.update(extra or {})
    p = run(args, d, extra=e, preload=preload)
    check(p.returncode == 0, f"{args} failed ({p.returncode}): {p.stderr.strip()}")
    said = dict(line.split("=", 1) for line in p.stdout.splitlines() if "=" in line)
    if not preload:
        return None, said
    files = traces(d)
    check(len(files) == 1, f"one trace expected, got {files}")
    traces_of_last_run[:] = files
    recs, _ = dump(files[0])
    check(not by_kind(recs, "state"), "trace unexpectedly degraded")
    check(by_kind(recs, "summary") and by_kind(recs, "summary")[0]["lost"] == 0,
          "events lost or summary missing")
    return recs, said


def paths(mode, extra=None, preload=True):
    return run_prog([prog("e2e-prog-paths"), mode], extra, preload)


def calls_of(recs):
    """API records with name and layer from their API_DEF."""
    layers = {r["api"]: r["layer"] for r in by_kind(recs, "api_def")}
    out = api_calls(recs)
    for c in out:
        c["layer"] = layers.get(c["api"], -1)
        c["cls"] = next((r["cls"] for r in by_kind(recs, "api_def")
                         if r["api"] == c["api"]), 0)
    return out


def launches(calls):
    return [c for c in calls if c["cls"] & CLS_LAUNCH]


def linked(recs, calls):
    """Checks that every device record has exactly one API record with its
    corr; returns {device record index: that API record} per kind."""
    by_corr = {}
    for c in calls:
        if c["corr"]:
            by_corr.setdefault(c["corr"], []).append(c)
    owner = {}
    for kind in DEVICE_KINDS:
        for i, r in enumerate(by_kind(recs, kind)):
            o = by_corr.get(r["corr"], [])
            check(len(o) == 1, f"{kind} corr={r['corr']} matches {len(o)} API records")
            owner[(kind, i)] = o[0]
    return owner


def check_launch_bijection(recs, calls, fn, layer):
    """The launch-class API records are exactly the calls to fn on layer,
    each with its own corr, and each kernel belongs to one of them."""
    ls = launches(calls)
    check(all(c["fn"] == fn and c["layer"] == layer for c in ls),
          f"launch records other than {fn}: {sorted({c['fn'] for c in ls})}")
    corrs = [c["corr"] for c in ls]
    check(all(corrs) and len(set(corrs)) == len(corrs), f"launch corrs {corrs}")
    owner = linked(recs, calls)
    for i, _ in enumerate(by_kind(recs, "kernel")):
        c = owner[("kernel", i)]
        check(c["fn"] == fn and c["layer"] == layer, f"kernel linked to {c['fn']}")
    return ls, owner


def check_kernels(ks, name, blocks, block=None):
    for k in ks:
        check(k["name"] == name, f"kernel name {k['name']}, want {name}")
        check(k["grid_x"] == blocks, f"{name}: grid {k['grid_x']}")
        check(block is None or k["block_x"] == block, f"{name}: block {k['block_x']}")
        check(k["end"] - k["start"] == kernel_ns(blocks),
              f"{name} lasted {k['end'] - k['start']}, want {kernel_ns(blocks)}")


def check_fifo(ks):
    ks = sorted(ks, key=lambda k: k["start"])
    check(len({k["stream"] for k in ks}) == 1, "kernels on several streams")
    for a, b in zip(ks, ks[1:]):
        check(b["start"] >= a["end"], "kernels of one stream overlap")


def t_blas():
    """A library with a private runtime: 10 launches, alternating the
    pointer from cuGetProcAddress_v2 and the one from dlsym."""
    n = 10
    recs, said = paths("blas")
    check(same_file(said.get("by_proc", ""), LIB) and same_file(said.get("by_dlsym", ""), LIB),
          f"libfakeblas did not get the shim's cuLaunchKernel: {said}")
    calls = calls_of(recs)
    ls, _ = check_launch_bijection(recs, calls, "cuLaunchKernel", LAYER_DRIVER)
    check(len(ls) == n, f"{len(ls)} cuLaunchKernel records, want {n}")
    ks = by_kind(recs, "kernel")
    check(len(ks) == n, f"{len(ks)} kernel records, want {n}")
    check_kernels(ks, "fakeblas_sgemm_128x64_nn", 264, 256)
    check(sorted(k["corr"] for k in ks) == sorted(c["corr"] for c in ls),
          "kernels and launches do not pair up")
    check_fifo(ks)
    check(all(c["grid"] == 264 and c["block"] == 256 for c in ls), "launch grid/block")


def t_entrypoint():
    """cuMemAlloc / cuLaunchKernel / cuCtxSynchronize from both runtime
    resolvers (version 13000: cuMemAlloc_v2, cuCtxSynchronize_v2)."""
    recs, said = paths("entrypoint")
    for name in ("cuMemAlloc", "cuLaunchKernel", "cuCtxSynchronize"):
        got = said.get(name, "").split()
        check(len(got) == 2 and all(same_file(g, LIB) for g in got),
              f"{name} entry points are not the shim's: {got}")
    calls = calls_of(recs)
    fns = [c["fn"] for c in calls if c["layer"] == LAYER_DRIVER]
    check(fns == ["cuMemAlloc_v2", "cuLaunchKernel", "cuLaunchKernel"] * 2 +
          ["cuCtxSynchronize_v2"] * 2, f"driver calls {fns}")
    allocs = [c for c in calls if c["fn"] == "cuMemAlloc_v2"]
    check(all(c["bytes"] == MB and c["ret"] == 0 and c["ptr"] for c in allocs),
          "allocation records")
    ls, owner = check_launch_bijection(recs, calls, "cuLaunchKernel", LAYER_DRIVER)
    check(len(ls) == 4, f"{len(ls)} launches recorded, want 4")
    ks = by_kind(recs, "kernel")
    check(len(ks) == 4, f"{len(ks)} kernel records, want 4")
    check_kernels(ks, "paths_ep_kernel", 264, 128)
    syncs = by_kind(recs, "sync")
    check(len(syncs) == 2 and all(s["type"] == SYNC_CONTEXT for s in syncs),
          f"context synchronisations {syncs}")
    for i, _ in enumerate(syncs):
        check(owner[("sync", i)]["fn"] == "cuCtxSynchronize_v2", "sync linkage")


def t_runtime_nested():
    """cudaLaunchKernel calls the shim's cuLaunchKernel inside: one record
    per launch, as cudaLaunchKernel."""
    recs, said = paths("runtime-nested")
    check(same_file(said.get("driver_launch", ""), LIB),
          f"the runtime's path to cuLaunchKernel bypasses the shim: {said}")
    # dlsym(libcuda, "cuGetProcAddress"), the 11.3-12.x resolver: ours too,
    # and what it resolves
    for k in ("gpa_v1", "driver_launch_v1"):
        check(same_file(said.get(k, ""), LIB), f"{k} is not the shim's: {said}")
    calls = calls_of(recs)
    check(not [c for c in calls if c["fn"].startswith("cuLaunch")],
          "a nested cuLaunchKernel was recorded")
    ls, _ = check_launch_bijection(recs, calls, "cudaLaunchKernel", LAYER_RUNTIME)
    check(len(ls) == 5, f"{len(ls)} launch records, want 5")
    ks = by_kind(recs, "kernel")
    check(len(ks) == 5, f"{len(ks)} kernel records, want 5")
    check_kernels(ks, "paths_rt_kernel", 264, 128)
    check_fifo(ks)


def t_graph():
    """3 kernels captured, the graph launched 4 times: 12 kernels, all from
    the graph, 3 linked to each cudaGraphLaunch; nothing from the capture."""
    recs, _ = paths("graph")
    calls = calls_of(recs)
    ls = launches(calls)
    check([c["fn"] for c in ls] == ["cudaLaunchKernel"] * 3 + ["cudaGraphLaunch"] * 4,
          f"launch records {[c['fn'] for c in ls]}")
    check(all(c["layer"] == LAYER_RUNTIME for c in ls), "graph launches on the driver layer")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    check(len(ks) == 12, f"{len(ks)} kernel records, want 12")
    gids = {k["graph_id"] for k in ks}
    check(len(gids) == 1 and 0 not in gids, f"graph ids {gids}")
    per_launch = {}
    for i, k in enumerate(ks):
        c = owner[("kernel", i)]
        check(c["fn"] == "cudaGraphLaunch", f"graph kernel linked to {c['fn']}")
        check(k["start"] >= c["start"], "kernel started before its graph launch")
        per_launch.setdefault(c["corr"], []).append(k)
    graph_launches = [c for c in ls if c["fn"] == "cudaGraphLaunch"]
    check(sorted(per_launch) == sorted(c["corr"] for c in graph_launches),
          "not every graph launch ran kernels")
    spec = [("paths_graph_a", 132), ("paths_graph_b", 264), ("paths_graph_c", 1)]
    for corr, mine in per_launch.items():
        mine.sort(key=lambda k: k["start"])
        check(len(mine) == 3, f"graph launch {corr} ran {len(mine)} kernels")
        for k, (name, blocks) in zip(mine, spec):
            check_kernels([k], name, blocks)
        for a, b in zip(mine, mine[1:]):
            check(b["start"] == a["end"], "graph nodes not back to back")
    check_fifo(ks)


def t_multidevice():
    """Launches on two devices and a peer copy: devices on API and device
    records, and a per-device breakdown in the JSON report."""
    d = workdir()
    e = dict(SIM_DEFAULTS, GPUSIM_DEVICES="2")
    p = run([prog("e2e-prog-paths"), "multidevice"], d, extra=e)
    check(p.returncode == 0, f"program failed: {p.stderr}")
    files = traces(d)
    check(len(files) == 1, f"traces {files}")
    recs, _ = dump(files[0])
    calls = calls_of(recs)
    setdev = [(c["device"], c["ret"] == 0) for c in calls if c["fn"] == "cudaSetDevice"]
    # the failed cudaSetDevice(7) is on device 0, which stayed current: no
    # GPU 7 in the report
    check(setdev == [(0, True), (1, True), (0, True), (0, False)],
          f"cudaSetDevice records carry devices {setdev}")
    ls = launches(calls)
    check([(c["fn"], c["device"]) for c in ls] ==
          [("cudaLaunchKernel", 0)] * 3 + [("cudaLaunchKernel", 1)] * 2,
          f"launches {[(c['fn'], c['device']) for c in ls]}")
    peer = [c for c in calls if c["fn"] == "cudaMemcpyPeer"]
    check(len(peer) == 1 and peer[0]["device"] == 1 and peer[0]["bytes"] == MB and
          peer[0]["copy_kind"] == COPY_PTOP, f"cudaMemcpyPeer record {peer}")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    check(len(ks) == 5, f"{len(ks)} kernels")
    for i, k in enumerate(ks):
        check(owner[("kernel", i)]["device"] == k["device"],
              "kernel linked to a launch on another device")
    on = {dev: [k for k in ks if k["device"] == dev] for dev in (0, 1)}
    check(len(on[0]) == 3 and len(on[1]) == 2, "3 kernels on device 0, 2 on device 1")
    check_kernels(on[0], "paths_dev0", 264)
    check_kernels(on[1], "paths_dev1", 132)
    copies = by_kind(recs, "memcpy")
    check(len(copies) == 1, f"{len(copies)} copy records")
    c = copies[0]
    check(c["copy_kind"] == COPY_PTOP and c["bytes"] == MB and
          {c["device"], c["peer_device"]} == {0, 1}, f"peer copy record {c}")
    check(c["end"] - c["start"] == copy_ns(MB, HBM_GBPS), "peer copy duration")
    check(owner[("memcpy", 0)]["fn"] == "cudaMemcpyPeer", "peer copy linkage")
    check(sorted(r["device"] for r in by_kind(recs, "device")) == [0, 1],
          "device properties for both devices")
    r = subprocess.run([REPORT, "--format", "json", files[0]], capture_output=True,
                       text=True, env=env(preload=False), timeout=60)
    check(r.returncode == 0, f"report failed: {r.stderr}")
    devs = {x["id"]: x for x in json.loads(r.stdout)["devices"]}
    check(sorted(devs) == [0, 1], f"report devices {sorted(devs)}")
    # one stream per device, so kernel time is the sum of the durations;
    # device 0 was synchronised before device 1 ran, and the peer copy
    # follows device 1's kernels, so on both devices it overlaps no kernel:
    # its whole duration is transfer time on each (a peer copy occupies both)
    want = {0: 3 * kernel_ns(264), 1: 2 * kernel_ns(132)}
    pcopy = copy_ns(MB, HBM_GBPS)
    for dev, ns in want.items():
        b = devs[dev]["breakdown"]
        check(b["kernel"]["ns"] == ns, f"device {dev}: kernel {b['kernel']['ns']} ns, want {ns}")
        check(b["transfer"]["ns"] == pcopy,
              f"device {dev}: transfer {b['transfer']['ns']} ns, want {pcopy}")
        p2p = devs[dev]["copies"]["p2p"]
        check(p2p["count"] == 1 and p2p["bytes"] == MB and p2p["ns"] == pcopy,
              f"device {dev}: P2P row {p2p}")
        check(devs[dev]["kernels"] == (3 if dev == 0 else 2), f"device {dev} kernel count")
        check(sum(v["ns"] for v in b.values()) == devs[dev]["window_ns"],
              f"device {dev}: breakdown does not fill the window")


def t_dlsym_next():
    """dlsym(RTLD_NEXT) from the executable answers what glibc answers (the
    next object after the executable: the first preloaded one that defines
    the name, the runtime without preloads); dlsym on the runtime's handle
    gives the shim's wrapper, and calls through it are recorded."""
    _, base = paths("dlsym-next", preload=False)
    check(same_file(base.get("next", ""), CUDART) and same_file(base.get("handle", ""), CUDART),
          f"without the shim: {base}")
    recs, said = paths("dlsym-next")
    check(same_file(said.get("next", ""), LIB), f"RTLD_NEXT from the executable: {said}")
    check(same_file(said.get("handle", ""), LIB), f"dlsym(libcudart handle): {said}")
    sizes = sorted(c["bytes"] for c in calls_of(recs) if c["fn"] == "cudaMalloc")
    check(sizes == [1111, 2222], f"cudaMalloc records {sizes}")


def t_next_lib():
    """Another tool's preloaded interposer calling dlsym(RTLD_NEXT) gets the
    object after itself, whether it is preloaded after the shim (the
    runtime) or before it (the shim); the call is recorded once."""
    pre = PRELOAD_PREFIX + ":" if PRELOAD_PREFIX else ""
    for order, want in (((LIB, NEXT_LIB), CUDART), ((NEXT_LIB, LIB), LIB)):
        recs, said = paths("next-lib", {"LD_PRELOAD": pre + ":".join(order)})
        check(same_file(said.get("lib_next", ""), want),
              f"LD_PRELOAD={order}: the interposer's next is {said.get('lib_next')}, want {want}")
        check(said.get("lib_calls") == "1", f"interposer called {said.get('lib_calls')} times")
        sizes = [c["bytes"] for c in calls_of(recs) if c["fn"] == "cudaMalloc"]
        check(sizes == [3333], f"LD_PRELOAD={order}: cudaMalloc records {sizes}")


def t_hostfn():
    """Host functions, the four entry points: each recorded once as a
    launch-class call on the layer the program used, each callback run
    once; the two kernels around them still linked to their launches."""
    recs, said = paths("hostfn")
    check(said.get("hostfn_calls") == "4", f"callbacks ran {said.get('hostfn_calls')} times")
    calls = calls_of(recs)
    ls = launches(calls)
    got = [(c["fn"], c["layer"]) for c in ls]
    want = [("cudaLaunchKernel", LAYER_RUNTIME), ("cudaLaunchHostFunc", LAYER_RUNTIME),
            ("cudaStreamAddCallback", LAYER_RUNTIME), ("cuLaunchHostFunc", LAYER_DRIVER),
            ("cuStreamAddCallback", LAYER_DRIVER), ("cudaLaunchKernel", LAYER_RUNTIME)]
    check(got == want, f"launch records {got}")
    check(all(c["ret"] == 0 for c in ls), "a host function call failed")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    check(len(ks) == 2 and all(owner[("kernel", i)]["fn"] == "cudaLaunchKernel"
                               for i in range(len(ks))), f"kernels {ks}")
    check_kernels(ks, "paths_rt_kernel", 132, 128)


def t_nvcc():
    """nvcc's <<<>>> launches (__cudaLaunchKernel): once each, kernels
    named by their registered names (mangled C++, plain extern "C")."""
    recs, _ = run_prog([prog("e2e-prog-nvcc")])
    calls = calls_of(recs)
    ls, owner = check_launch_bijection(recs, calls, "__cudaLaunchKernel", LAYER_RUNTIME)
    check([c["grid"] for c in ls] == [264] * 3 + [132] * 2, f"launch grids {[c['grid'] for c in ls]}")
    ks = by_kind(recs, "kernel")
    check(len(ks) == 5, f"{len(ks)} kernel records, want 5")
    # paths_scale(float *, int): _Z, length 11, name, P f (float *), i (int)
    check_kernels([k for k in ks if k["grid_x"] == 264], "_Z11paths_scalePfi", 264, 128)
    check_kernels([k for k in ks if k["grid_x"] == 132], "paths_axpy", 132, 128)
    for i, k in enumerate(ks):
        check(owner[("kernel", i)]["grid"] == k["grid_x"], "kernel linked to another launch")
    # the report keeps the recorded name and adds the C++ declaration; the
    # text table shows the function's name
    d = os.path.dirname(traces_of_last_run[0])
    r = subprocess.run([REPORT, "--format", "json", traces_of_last_run[0]],
                       capture_output=True, text=True, env=env(preload=False), timeout=60)
    kern = {k["name"]: k for k in json.loads(r.stdout)["kernels"]}
    check(kern["_Z11paths_scalePfi"]["demangled"] == "paths_scale(float*, int)"
          and kern["paths_axpy"]["demangled"] is None, f"demangled {kern}")
    r = subprocess.run([REPORT, traces_of_last_run[0]], capture_output=True, text=True,
                       env=env(preload=False), timeout=60)
    rows = [ln.split()[0] for ln in r.stdout.splitlines() if ln.startswith("  paths_")]
    check(sorted(rows) == ["paths_axpy", "paths_scale"], f"text kernel rows {rows} in {d}")


if __name__ == "__main__":
    sys.exit(main({
        "blas": t_blas, "entrypoint": t_entrypoint, "runtime_nested": t_runtime_nested,
        "graph": t_graph, "multidevice": t_multidevice, "dlsym_next": t_dlsym_next,
        "next_lib": t_next_lib, "hostfn": t_hostfn, "nvcc": t_nvcc,
    }))

"""End-to-end tests of gpuphase's CUPTI callbacks on the simulated GPU:
only the callback ids of the functions gpuphase records are enabled
(cupti/cupti_ids.c), so a call it does not wrap (cudaGetDevice, what
PyTorch makes millions of) gets no callback, while every recorded call
still gets its own, and every device record still carries the correlation
id of its call. The simulated driver counts the calls and callbacks of
each callback id and writes them at exit (GPUSIM_CUPTI_STATS,
tests/simcuda/README.md)."""
import os
import re
import sys
from collections import Counter

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

HERE = os.path.dirname(os.path.abspath(__file__))
PRELOAD_SRC = os.path.join(HERE, "..", "..", "preload")
SIM_DEFAULTS = {k: "" for k in (
    "GPUSIM_DEVICES", "GPUSIM_SMS", "GPUSIM_MEM_BYTES", "GPUSIM_WAVE_NS",
    "GPUSIM_PCIE_GBPS", "GPUSIM_HBM_GBPS", "GPUSIM_COPY_LATENCY_NS",
    "GPUSIM_API_NS", "GPUSIM_CUPTI")}
DEVICE_KINDS = ("kernel", "memcpy", "memset", "sync")
LAYERS = {0: "runtime", 1: "driver"}


def recorded_functions():
    """The functions gpuphase wraps and records, by domain: the X(...) rows
    of preload/api_*.def, with their _ptsz/_ptds variants."""
    out = {}
    for domain, name in (("runtime", "api_runtime.def"), ("driver", "api_driver.def")):
        with open(os.path.join(PRELOAD_SRC, name)) as f:
            rows = re.findall(r"\bX\(\s*([NZDAL])\s*,\s*(\w+)\s*,", f.read())
        check(rows, f"no rows in {name}")
        names = set()
        for v, n in rows:
            names.add(n)
            if v in "ZAL":
                names.add(n + "_ptsz")
            if v == "D":
                names.add(n + "_ptds")
        out[domain] = names
    return out


def read_stats(path):
    """GPUSIM_CUPTI_STATS lines: (pid, epoch, domain, name, calls, callbacks)."""
    check(os.path.exists(path), "the simulated driver wrote no callback counts")
    out = []
    with open(path) as f:
        for line in f:
            pid, epoch, domain, name, calls, cbs = line.split()
            out.append((int(pid), int(epoch), domain, name, int(calls), int(cbs)))
    check(out, "no callback counts")
    return out


def totals(stats, epochs=None):
    """(domain, name) -> [calls, callbacks], over the given epochs."""
    t = {}
    for _pid, epoch, domain, name, calls, cbs in stats:
        if epochs is None or epoch in epochs:
            v = t.setdefault((domain, name), [0, 0])
            v[0] += calls
            v[1] += cbs
    return t


def profiled(args, extra=None, timeout=60):
    """Runs ARGS under the shim with the counters on; returns the records
    of its one trace and the counters."""
    d = workdir()
    stats = os.path.join(d, "cupti-stats")
    e = dict(SIM_DEFAULTS, GPUSIM_CUPTI_STATS=stats)
    e.update(extra or {})
    p = run(args, d, extra=e, timeout=timeout)
    check(p.returncode == 0, f"{args} failed ({p.returncode}): {p.stderr.strip()}")
    files = traces(d)
    check(len(files) == 1, f"{args}: one trace expected, got {files}")
    recs, _ = dump(files[0])
    return recs, read_stats(stats)


def layered_calls(recs):
    layer = {r["api"]: LAYERS.get(r["layer"], "?") for r in by_kind(recs, "api_def")}
    out = api_calls(recs)
    for c in out:
        c["domain"] = layer.get(c["api"], "?")
    return out


def check_callbacks(what, recs, stats, epochs=None):
    """The invariants of a run with gpuphase holding CUPTI throughout:
    callbacks come only for recorded functions; each recorded call had its
    own callback and carries a correlation id (a runtime call one of its
    own); every device record carries the id of a recorded call."""
    wrapped = recorded_functions()
    t = totals(stats, epochs)
    foreign = sorted(f"{d} {n} ({v[1]})" for (d, n), v in t.items()
                     if v[1] and n not in wrapped.get(d, ()))
    check(not foreign, f"{what}: callbacks for functions gpuphase does not record: {foreign}")
    calls = layered_calls(recs)
    check(calls, f"{what}: no recorded calls")
    for (domain, fn), n in sorted(Counter((c["domain"], c["fn"]) for c in calls).items()):
        got = t.get((domain, fn), [0, 0])[1]
        check(got >= n, f"{what}: {domain} {fn}: {n} recorded calls but {got} callbacks "
                        "(its callback id not enabled?)")
    nocorr = sorted({c["fn"] for c in calls if not c["corr"]})
    check(not nocorr, f"{what}: recorded calls without a correlation id: {nocorr}")
    # Each runtime call takes an id of its own; driver calls made inside a
    # runtime call share its id (cuInit inside the first call).
    dup = [k for k, v in Counter(c["corr"] for c in calls if c["domain"] == "runtime").items()
           if v > 1]
    check(not dup, f"{what}: correlation ids shared by recorded runtime calls: {dup[:5]}")
    owner = {c["corr"]: c for c in calls}
    ndev = 0
    for kind in DEVICE_KINDS:
        for r in by_kind(recs, kind):
            ndev += 1
            check(r["corr"] in owner,
                  f"{what}: {kind} record (corr={r['corr']}) linked to no recorded call")
    return t, calls, ndev


# A ctypes program: many calls gpuphase does not wrap around a few it
# records. Ends normally, so the driver writes its counters.
UNWRAPPED_PROG = r"""
import ctypes, sys
ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
rt = ctypes.CDLL(None)  # the preloaded shim first, then the runtime
n = int(sys.argv[2])
class Dim3(ctypes.Structure):
    _fields_ = [("x", ctypes.c_uint), ("y", ctypes.c_uint), ("z", ctypes.c_uint)]
rt.cudaLaunchKernel.argtypes = [ctypes.c_void_p, Dim3, Dim3, ctypes.c_void_p,
                                ctypes.c_size_t, ctypes.c_void_p]
rt.cudaMemset.argtypes = [ctypes.c_void_p, ctypes.c_int, ctypes.c_size_t]
rt.cudaMemcpy.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_int]
kernel = ctypes.cast(ctypes.CDLL("libc.so.6").labs, ctypes.c_void_p)  # named by dladdr
dev, ptr = ctypes.c_int(), ctypes.c_void_p()
buf = ctypes.create_string_buffer(1 << 20)
assert rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)) == 0
for i in range(n):
    assert rt.cudaGetDevice(ctypes.byref(dev)) == 0
    assert rt.cudaGetLastError() == 0
    if i % (n // 4) == 0:
        assert rt.cudaLaunchKernel(kernel, Dim3(132, 1, 1), Dim3(64, 1, 1), None, 0, None) == 0
assert rt.cudaMemcpy(ptr, buf, 1 << 20, 1) == 0
assert rt.cudaMemset(ptr, 0, 1 << 20) == 0
assert rt.cudaDeviceSynchronize() == 0
# The per-thread-stream variants of both layers (_ptds, _ptsz), and the
# driver API called directly.
for f in ("cudaLaunchKernel_ptsz",):
    getattr(rt, f).argtypes = rt.cudaLaunchKernel.argtypes
assert rt.cudaLaunchKernel_ptsz(kernel, Dim3(132, 1, 1), Dim3(64, 1, 1), None, 0, None) == 0
rt.cudaMemcpy_ptds.argtypes = rt.cudaMemcpy.argtypes
assert rt.cudaMemcpy_ptds(ptr, buf, 1 << 20, 1) == 0
rt.cudaMemset_ptds.argtypes = rt.cudaMemset.argtypes
assert rt.cudaMemset_ptds(ptr, 0, 1 << 20) == 0
rt.cudaMemsetAsync_ptsz.argtypes = rt.cudaMemset.argtypes + [ctypes.c_void_p]
assert rt.cudaMemsetAsync_ptsz(ptr, 0, 1 << 20, None) == 0
assert rt.cudaStreamSynchronize_ptsz(None) == 0
dptr = ctypes.c_uint64(ptr.value)
for f, args in (("cuMemsetD8_v2", (dptr, ctypes.c_ubyte(0), ctypes.c_size_t(4096))),
                ("cuMemsetD8_v2_ptds", (dptr, ctypes.c_ubyte(0), ctypes.c_size_t(4096))),
                ("cuMemsetD8Async_ptsz", (dptr, ctypes.c_ubyte(0), ctypes.c_size_t(4096), None)),
                ("cuMemcpyHtoD_v2_ptds", (dptr, buf, ctypes.c_size_t(4096))),
                ("cuStreamSynchronize", (None,)),
                ("cuStreamSynchronize_ptsz", (None,))):
    assert getattr(rt, f)(*args) == 0, f
assert rt.cudaFree(ptr) == 0
"""


def t_unwrapped():
    """cudaGetDevice and cudaGetLastError, called 2000 times each between
    recorded calls: called, never called back; the recorded calls (runtime
    and driver, with their _ptsz/_ptds variants) each called back once, and
    their kernel, copy and memset records linked to them."""
    n = 2000
    d = workdir()
    script = os.path.join(d, "unwrapped.py")
    with open(script, "w") as f:
        f.write(UNWRAPPED_PROG)
    recs, stats = profiled([sys.executable, script, os.path.join(SIMDIR, "libcudart.so.13"),
                            str(n)])
    t, calls, _ = check_callbacks("unwrapped", recs, stats)
    for fn in ("cudaGetDevice", "cudaGetLastError"):
        c, cb = t.get(("runtime", fn), [0, 0])
        check(c >= n, f"{fn}: {c} calls counted, the program made {n}")
        check(cb == 0, f"{fn}: {cb} callbacks for a call gpuphase does not record")
    want = {("runtime", f): k for f, k in (
        ("cudaMalloc", 1), ("cudaLaunchKernel", 4), ("cudaMemcpy", 1), ("cudaMemset", 1),
        ("cudaDeviceSynchronize", 1), ("cudaLaunchKernel_ptsz", 1), ("cudaMemcpy_ptds", 1),
        ("cudaMemset_ptds", 1), ("cudaMemsetAsync_ptsz", 1), ("cudaStreamSynchronize_ptsz", 1),
        ("cudaFree", 1))}
    want.update({("driver", f): 1 for f in (
        "cuMemsetD8_v2", "cuMemsetD8_v2_ptds", "cuMemsetD8Async_ptsz", "cuMemcpyHtoD_v2_ptds",
        "cuStreamSynchronize", "cuStreamSynchronize_ptsz")})
    got = Counter((c["domain"], c["fn"]) for c in calls)
    check(got == Counter(want), f"recorded calls {dict(got)}, want {want}")
    # a driver function is also called back inside the runtime calls that
    # use it (cudaMemset: cuMemsetD8_v2)
    for key, k in want.items():
        got = t.get(key, [0, 0])[1]
        check(got == k if key[0] == "runtime" else got >= k,
              f"{key}: {t.get(key)} calls/callbacks, want {k} callbacks")
    owner = {c["corr"]: c["fn"] for c in calls}
    for kind, fns in (("kernel", ["cudaLaunchKernel"] * 4 + ["cudaLaunchKernel_ptsz"]),
                      ("memcpy", ["cudaMemcpy", "cudaMemcpy_ptds", "cuMemcpyHtoD_v2_ptds"]),
                      ("memset", ["cudaMemset", "cudaMemset_ptds", "cudaMemsetAsync_ptsz",
                                  "cuMemsetD8_v2", "cuMemsetD8_v2_ptds",
                                  "cuMemsetD8Async_ptsz"])):
        got = sorted(str(owner.get(r["corr"])) for r in by_kind(recs, kind))
        check(got == sorted(fns), f"{kind} records linked to {got}, want {sorted(fns)}")


def t_programs():
    """The end-to-end programs (runtime and driver layers, entry points,
    libraries with a private runtime, graphs, host functions, two devices,
    nvcc launches, threads, the demo): in each, callbacks only for recorded
    functions, one for each recorded call, and every device record linked
    to its call."""
    runs = [
        ([prog("e2e-prog-basic")], {}),
        ([prog("e2e-prog-paths"), "blas"], {}),
        ([prog("e2e-prog-paths"), "entrypoint"], {}),
        ([prog("e2e-prog-paths"), "runtime-nested"], {}),
        ([prog("e2e-prog-paths"), "graph"], {}),
        ([prog("e2e-prog-paths"), "hostfn"], {}),
        ([prog("e2e-prog-paths"), "multidevice"], {"GPUSIM_DEVICES": "2"}),
        ([prog("e2e-prog-scenarios"), "transfer", "3"], {"MALLOC_PERTURB_": None}),
        ([prog("e2e-prog-scenarios"), "pageable", "3"], {"MALLOC_PERTURB_": None}),
        ([os.path.join(SIMDIR, "gpuphase-demo"), "3", "1"], {"MALLOC_PERTURB_": None}),
    ]
    if os.path.exists(prog("e2e-prog-nvcc")):
        runs.append(([prog("e2e-prog-nvcc")], {}))
    seen = Counter()
    for args, extra in runs:
        what = " ".join(os.path.basename(a) for a in args)
        recs, stats = profiled(args, extra)
        _, calls, ndev = check_callbacks(what, recs, stats)
        check(ndev, f"{what}: no device records")
        seen.update({(c["domain"], c["fn"]) for c in calls})
    check(len(seen) >= 20 and any(d == "driver" for d, _ in seen),
          f"the runs recorded only {sorted(seen)}")


def t_threads():
    """Eight threads launching at once: each launch called back once, each
    kernel linked to its launch."""
    recs, stats = profiled([prog("e2e-prog-threads")], {"GPUPHASE_FLUSH_MS": "10"},
                           timeout=100)
    t, calls, ndev = check_callbacks("threads", recs, stats)
    n = sum(1 for c in calls if c["fn"] == "cudaLaunchKernel")
    check(n and ndev >= n, f"{n} launches, {ndev} device records")
    check(t[("runtime", "cudaLaunchKernel")][1] == n,
          f"cudaLaunchKernel callbacks {t[('runtime', 'cudaLaunchKernel')]}, launches {n}")


def t_othertool():
    """CUPTI handed over to another tool and back (prog_othertool.c): the
    tool's subscription gets no callback of ours (it enabled none itself);
    when gpuphase subscribes again it enables the same ids, so the two
    launches after the hand-back are called back and their kernels linked
    to them, and unwrapped calls still are not called back."""
    recs, stats = profiled([prog("e2e-prog-othertool")])
    epochs = sorted({s[1] for s in stats})
    check(epochs[-1] == 3, f"epochs {epochs}: want gpuphase (1), the tool (2), gpuphase (3)")
    before, tool, after = totals(stats, {1}), totals(stats, {2}), totals(stats, {3})
    wrapped = recorded_functions()
    for what, t in (("before", before), ("after", after)):
        foreign = sorted(n for (d, n), v in t.items() if v[1] and n not in wrapped[d])
        check(not foreign, f"{what} the hand-over: callbacks for {foreign}")
    check(not any(v[1] for v in tool.values()),
          f"callbacks while the tool held CUPTI: {[k for k, v in tool.items() if v[1]]}")
    for what, t, k in (("before", before, 3), ("while the tool held CUPTI", tool, 4),
                       ("after", after, 2)):
        got = t.get(("runtime", "cudaLaunchKernel"), [0, 0])
        check(got[0] == k, f"{what}: {got[0]} launches counted, want {k}")
    for what, t, k in (("before", before, 3), ("after", after, 2)):
        for domain, fn in (("runtime", "cudaLaunchKernel"), ("driver", "cuLaunchKernel")):
            got = t.get((domain, fn), [0, 0])[1]
            check(got == k, f"{what} the hand-over: {fn} called back {got} times, want {k}")
        check(t.get(("runtime", "cudaDeviceSynchronize"), [0, 0])[1] == 1,
              f"{what} the hand-over: cudaDeviceSynchronize not called back once")
    calls = layered_calls(recs)
    owner = {c["corr"]: c for c in calls if c["corr"]}
    ks = sorted(by_kind(recs, "kernel"), key=lambda r: r["start"])
    linked = [(k["name"], owner[k["corr"]]["fn"]) if k["corr"] in owner else (k["name"], None)
              for k in ks]
    want = [("k_before", "cudaLaunchKernel")] * 3 + [("k_after", "cudaLaunchKernel")] * 2
    check(linked == want, f"kernels and their calls {linked}, want {want}")
    states = sorted(by_kind(recs, "state"), key=lambda r: r["start"])
    check(len(states) == 2, f"degraded interval {states}")
    back = [c for c in calls if c["start"] > states[1]["start"]]
    check(back and all(c["corr"] for c in back),
          f"calls after the hand-back without a correlation id: {back}")


TESTS = {"unwrapped": t_unwrapped, "programs": t_programs, "threads": t_threads,
         "othertool": t_othertool}

if __name__ == "__main__":
    sys.exit(main(TESTS))

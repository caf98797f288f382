"""End-to-end runs of programs written like real ones (prog_arrays.c,
prog_managed.c, prog_occupancy.c, prog_streams_callbacks.c,
prog_omp2gpu.c, prog_xstream.c, prog_ctxmix.c) on the simulated GPU: the same exit code and stdout with
and without the shim, every device record linked to exactly one API
record, and the kernel and copy counts, bytes, durations and memory
figures that the simulator's documented model predicts
(tests/simcuda/README.md; the figures are worked out at the top of each
program)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

MB = 1 << 20
SIM_DEFAULTS = {k: "" for k in (
    "GPUSIM_DEVICES", "GPUSIM_SMS", "GPUSIM_MEM_BYTES", "GPUSIM_WAVE_NS",
    "GPUSIM_PCIE_GBPS", "GPUSIM_HBM_GBPS", "GPUSIM_COPY_LATENCY_NS",
    "GPUSIM_API_NS", "GPUSIM_CUPTI", "GPUSIM_KERNEL_ATTRS")}
DEVICE_KINDS = ("kernel", "memcpy", "memset", "sync")
# trace_records.h: MEMCPY.copy_kind and src_mem/dst_mem
COPY_HTOD, COPY_DTOH = 1, 2
MEM_PAGEABLE, MEM_PINNED, MEM_DEVICE, MEM_MANAGED, MEM_ARRAY = 1, 2, 3, 4, 5
SKIP = 77  # meson's "skipped"


def run_both(name, args=(), extra=None):
    """Runs the program without and with the shim; checks the exit codes
    and stdout are the same; returns the trace's records, the API calls
    and the trace's path."""
    e = dict(SIM_DEFAULTS)
    e.update(extra or {})
    cmd = [prog(name)] + list(args)
    bare = run(cmd, workdir(), extra=e, preload=False)
    check(bare.returncode == 0, f"{name} failed alone ({bare.returncode}): {bare.stderr}")
    d = workdir()
    shim = run(cmd, d, extra=e)
    check(shim.returncode == bare.returncode,
          f"{name}: exit {shim.returncode} under the shim, {bare.returncode} without")
    check(shim.stdout == bare.stdout,
          f"{name}: stdout differs under the shim:\n{shim.stdout}\nwithout:\n{bare.stdout}")
    files = traces(d)
    check(len(files) == 1, f"one trace expected, got {files}")
    recs, _ = dump(files[0])
    check(not by_kind(recs, "state"), "trace unexpectedly degraded")
    check(by_kind(recs, "summary") and by_kind(recs, "summary")[0]["lost"] == 0,
          "events lost or summary missing")
    return recs, api_calls(recs), files[0], bare.stdout


def linked(recs, calls):
    """Every device record has exactly one API record with its corr;
    returns {(kind, index): that record}."""
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


def report(path):
    r = subprocess.run([REPORT, "--format", "json", path], capture_output=True,
                       text=True, env=env(preload=False), timeout=60)
    check(r.returncode == 0, f"report failed: {r.stderr}")
    return json.loads(r.stdout)


def device_of(j, dev=0):
    devs = {x["id"]: x for x in j["devices"]}
    check(dev in devs, f"device {dev} not in the report: {sorted(devs)}")
    return devs[dev]


def only(calls, fn):
    return [c for c in calls if c["fn"] == fn]


def check_copy(c, nbytes, kind, src, dst, gbps):
    check(c["bytes"] == nbytes and c["copy_kind"] == kind and c["src_mem"] == src and
          c["dst_mem"] == dst, f"copy {c}: want {nbytes} B kind {kind} {src}->{dst}")
    check(c["end"] - c["start"] == copy_ns(nbytes, gbps),
          f"copy of {nbytes} B lasted {c['end'] - c['start']}, want {copy_ns(nbytes, gbps)}")


def t_arrays():
    recs, calls, path, out = run_both("e2e-prog-arrays")
    check(out.splitlines()[0] == "level1=128x128", f"output {out!r}")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    check(len(ks) == 4 and all(k["name"] == "arrays_filter" and
                               k["end"] - k["start"] == kernel_ns(264) for k in ks),
          f"kernels {ks}")
    cs = by_kind(recs, "memcpy")
    check(len(cs) == 4, f"{len(cs)} copies, want 4")
    img, vol, lvl = 1024 * 512 * 4, 64 * 64 * 16 * 4, 128 * 128 * 4
    # to the image (pageable, synchronous), back (pinned, async, behind
    # the kernels), the volume (cudaMemcpy3D), the mipmap level; in the
    # trace in whatever order CUPTI delivered them
    want = {"cudaMemcpy2DToArray": [(img, COPY_HTOD, MEM_PAGEABLE, MEM_ARRAY),
                                    (lvl, COPY_HTOD, MEM_PAGEABLE, MEM_ARRAY)],
            "cudaMemcpy2DFromArrayAsync": [(img, COPY_DTOH, MEM_ARRAY, MEM_PINNED)],
            "cudaMemcpy3D": [(vol, COPY_HTOD, MEM_PAGEABLE, MEM_ARRAY)]}
    got = {}
    for i, c in enumerate(cs):
        check_copy(c, c["bytes"], c["copy_kind"], c["src_mem"], c["dst_mem"], PCIE_GBPS)
        got.setdefault(owner[("memcpy", i)]["fn"], []).append(
            (c["bytes"], c["copy_kind"], c["src_mem"], c["dst_mem"]))
    check({k: sorted(v) for k, v in got.items()} == {k: sorted(v) for k, v in want.items()},
          f"copies {got}")
    back = [c for c in cs if c["copy_kind"] == COPY_DTOH][0]
    check(back["start"] >= max(k["end"] for k in ks), "download before the kernels ended")
    # allocations: the handle is the pointer, freed by the matching call
    mip = (256 * 256 + 128 * 128 + 64 * 64) * 4
    allocs = {fn: only(calls, fn) for fn in ("cudaMallocArray", "cudaMalloc3DArray",
                                             "cudaMallocMipmappedArray")}
    sizes = {fn: [(c["bytes"], c["ret"]) for c in cs_] for fn, cs_ in allocs.items()}
    check(sizes == {"cudaMallocArray": [(img, 0)], "cudaMalloc3DArray": [(vol, 0)],
                    "cudaMallocMipmappedArray": [(mip, 0)]}, f"allocations {sizes}")
    frees = {c["ptr"] for fn in ("cudaFreeArray", "cudaFreeMipmappedArray")
             for c in only(calls, fn) if c["ret"] == 0}
    check(frees == {c["ptr"] for v in allocs.values() for c in v},
          "every array freed by its handle")
    # the driver calls the runtime made are not recorded again; the
    # program's own driver array is, as an allocation and its free
    da, dd = only(calls, "cuArray3DCreate_v2"), only(calls, "cuArrayDestroy")
    check(len(da) == 1 and da[0]["bytes"] == 256 * 256 * 4 and da[0]["ret"] == 0 and
          len(dd) == 1 and dd[0]["ptr"] == da[0]["ptr"] != 0,
          f"driver array records {da} {dd}")
    dv = device_of(report(path))
    check(dv["utilization"]["mem_peak_bytes"] == img + vol + mip,
          f"memory peak {dv['utilization']['mem_peak_bytes']}, want {img + vol + mip}")
    check(dv["kernels"] == 4, f"report kernels {dv['kernels']}")


def t_managed():
    recs, calls, path, out = run_both("e2e-prog-managed")
    # sum of (i % 13) over 2^20 floats, times 1.0
    n = 1 << 20
    s = sum(range(13)) * (n // 13) + sum(range(n % 13))
    check(out.splitlines() == [f"checksum={s} preferred=0 read_mostly=1 last_prefetch=-1",
                               "managed=2"], f"output {out!r}")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    check(len(ks) == 3 and all(k["end"] - k["start"] == kernel_ns(132) for k in ks),
          f"kernels {ks}")
    cs = by_kind(recs, "memcpy")
    check(len(cs) == 5, f"{len(cs)} copies, want 5")
    kinds = [COPY_HTOD, COPY_HTOD, COPY_DTOH, COPY_HTOD, COPY_HTOD]
    for c, k in zip(cs, kinds):
        check_copy(c, 4 * MB, k, MEM_MANAGED, MEM_MANAGED, PCIE_GBPS)
    got = [owner[("memcpy", i)]["fn"] for i in range(5)]
    check(got == ["cudaMemPrefetchAsync"] * 3 + ["cudaMemPrefetchBatchAsync"] * 2,
          f"prefetches linked to {got}")
    # FIFO on the one stream: the prefetch back follows the kernels
    check(cs[2]["start"] >= max(k["end"] for k in ks), "prefetch back before the kernels")
    check(len({c["stream"] for c in cs + ks}) == 1, "prefetches and kernels on several streams")
    batch = only(calls, "cudaMemPrefetchBatchAsync")
    pf = only(calls, "cudaMemPrefetchAsync")
    check([c["bytes"] for c in pf] == [4 * MB] * 3, f"prefetch records {pf}")
    # the batch: the sum of the sizes, the first pointer, the same stream
    check(len(batch) == 1 and batch[0]["bytes"] == 8 * MB and batch[0]["ret"] == 0 and
          batch[0]["stream"] == pf[0]["stream"] != 0 and batch[0]["ptr"] == pf[0]["ptr"],
          f"batch prefetch record {batch}")
    at = only(calls, "cudaStreamAttachMemAsync")
    check(len(at) == 1 and at[0]["ret"] == 0, f"attach record {at}")
    m = only(calls, "cudaMallocManaged")
    check([c["bytes"] for c in m] == [4 * MB] * 2, f"managed allocations {m}")
    dv = device_of(report(path))
    check(dv["utilization"]["mem_peak_bytes"] == 8 * MB,
          f"memory peak {dv['utilization']['mem_peak_bytes']}, want 8 MiB")


def t_occupancy():
    attrs = {"GPUSIM_KERNEL_ATTRS": "occ_saxpy=40,8192"}
    recs, calls, path, out = run_both("e2e-prog-occupancy", extra=attrs)
    check(out.splitlines() == [
        "regs=40 static_smem=8192 block=768 min_grid=264 active=2 smem_avail=107520",
        "grids=1000,264"], f"output {out!r}")
    linked(recs, calls)
    ks = by_kind(recs, "kernel")
    check([k["grid_x"] for k in ks] == [1000, 264] and
          all(k["block_x"] == 768 and k["regs"] == 40 and k["smem_static"] == 8192
              for k in ks), f"kernels {ks}")
    check([k["end"] - k["start"] for k in ks] == [kernel_ns(1000), kernel_ns(264)],
          "kernel durations")
    dv = device_of(report(path))
    check(dv["kernels"] == 2, f"report kernels {dv['kernels']}")


def t_streams_callbacks():
    recs, calls, path, out = run_both("e2e-prog-streams-callbacks")
    check(out.splitlines() == [f"stream{i} launched=3 checked=3" for i in range(4)],
          f"output {out!r}")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    check(len(ks) == 12 and all(k["end"] - k["start"] == kernel_ns(264) for k in ks),
          f"{len(ks)} kernels")
    cs = by_kind(recs, "memcpy")
    check(len(cs) == 24 and all(c["bytes"] == MB and
                                c["end"] - c["start"] == copy_ns(MB, PCIE_GBPS) for c in cs),
          f"{len(cs)} copies")
    check(sum(c["copy_kind"] == COPY_HTOD for c in cs) == 12, "12 uploads")
    check(len({k["stream"] for k in ks}) == 4, "kernels on 4 streams")
    for fn, n in (("cudaLaunchHostFunc", 12), ("cudaStreamAddCallback", 12),
                  ("cudaEventRecord", 12), ("cudaStreamWaitEvent", 11),
                  ("cudaLaunchKernel", 12), ("cudaMemcpyAsync", 24)):
        got = only(calls, fn)
        check(len(got) == n and all(c["ret"] == 0 for c in got), f"{fn}: {len(got)} records")
    # each stream's kernel waits for the previous stream's kernel of the
    # round (the event), and its download follows it (FIFO)
    by_stream = {}
    for i, k in enumerate(ks):
        by_stream.setdefault(k["stream"], []).append(k)
    for i, k in enumerate(ks):
        check(owner[("kernel", i)]["fn"] == "cudaLaunchKernel", "kernel linkage")
    order = sorted(ks, key=lambda k: k["start"])
    for a, b in zip(order, order[1:]):
        check(b["start"] >= a["end"], "the event chain lets two kernels overlap")
    dv = device_of(report(path))
    check(dv["kernels"] == 12, f"report kernels {dv['kernels']}")
    check(dv["utilization"]["mem_peak_bytes"] == 4 * MB,
          f"memory peak {dv['utilization']['mem_peak_bytes']}, want 4 MiB")


def t_omp2gpu():
    p = prog("e2e-prog-omp2gpu")
    if not os.path.exists(p):
        print("skipped: built without OpenMP (or under TSan, which libgomp's "
              "synchronisation confuses)")
        sys.exit(SKIP)
    recs, calls, path, out = run_both("e2e-prog-omp2gpu", extra={"GPUSIM_DEVICES": "2"})
    check(out.splitlines() == ["gpu0 done", "gpu1 done"], f"output {out!r}")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    on = {d: [k for k in ks if k["device"] == d] for d in (0, 1)}
    check(len(on[0]) == 10 and len(on[1]) == 10, f"kernels per device {len(on[0])}, {len(on[1])}")
    check(all(k["name"] == "omp_work0" and k["grid_x"] == 264 for k in on[0]) and
          all(k["name"] == "omp_work1" and k["grid_x"] == 132 for k in on[1]),
          "each device ran its own kernel")
    for i, k in enumerate(ks):
        check(owner[("kernel", i)]["device"] == k["device"], "kernel linked to another device")
    cs = by_kind(recs, "memcpy")
    for d in (0, 1):
        mine = [c for c in cs if c["device"] == d]
        check(len(mine) == 10 and sum(c["copy_kind"] == COPY_HTOD for c in mine) == 5,
              f"device {d}: {len(mine)} copies")
    threads = {c["thread"] for c in only(calls, "cudaLaunchKernel")}
    check(len(threads) == 2, f"launches from {len(threads)} threads")
    j = report(path)
    for d in (0, 1):
        dv = device_of(j, d)
        check(dv["kernels"] == 10, f"device {d}: report kernels {dv['kernels']}")
        check(dv["utilization"]["mem_peak_bytes"] == MB,
              f"device {d}: memory peak {dv['utilization']['mem_peak_bytes']}")


def idle_overlap(intervals, busy, lo, hi):
    """The time in [lo, hi) covered by intervals and by none of busy."""
    total = 0
    for s, e in intervals:
        s, e = max(s, lo), min(e, hi)
        if s >= e:
            continue
        cuts = sorted((max(bs, s), min(be, e)) for bs, be in busy if bs < e and be > s)
        t, covered = s, 0
        for bs, be in cuts:
            if be > t:
                covered += be - max(bs, t)
                t = be
        total += (e - s) - covered
    return total


def t_xstream():
    """Waits from GPU 0 for work on GPU 1's stream (cudaStreamSynchronize
    on it, cudaEventSynchronize on an event recorded on it): the calls are
    booked on GPU 1, the device they wait for, not on GPU 0, the thread's
    current device; so is a cudaMallocAsync on that stream (its memory),
    and a wait that begins before the device record of its stream's first
    work (known from the kernel launched on it; before, that wait was
    GPU 0's). Before, GPU 0 (which runs nothing) showed the two waits
    as sync idle and GPU 1 none. GPU 1's sync idle is the part of the
    waits during which it ran no kernel, worked out here from the records."""
    recs, calls, path, out = run_both("e2e-prog-xstream", extra={"GPUSIM_DEVICES": "2"})
    check(out == "done\n", f"output {out!r}")
    ks = by_kind(recs, "kernel")
    check(len(ks) == 12 and all(k["device"] == 1 for k in ks), "12 kernels, all on GPU 1")
    durs = sorted(k["end"] - k["start"] for k in ks)
    check(durs == [200000] * 11 + [1000000], f"kernels of 200 us (20 waves) and one of 1 ms: {durs}")
    waits = only(calls, "cudaStreamSynchronize") + only(calls, "cudaEventSynchronize")
    check(len(waits) == 4 and all(w["device"] == 0 for w in waits),
          "four waits (three on streams, one on the event), made with GPU 0 current")
    # the last wait began before its stream's first (and only) kernel
    last = max(waits, key=lambda w: w["start"])
    check(last["start"] < max(k["start"] for k in ks),
          "the last wait begins before the device record of its stream's work")
    j = report(path)
    g0, g1 = device_of(j, 0)["breakdown"], device_of(j, 1)["breakdown"]
    check(g0["sync_idle"]["ns"] == 0 and g0["launch"]["ns"] == 0,
          f"GPU 0 ran nothing and no call waited for it: {g0}")
    busy = [(k["start"], k["end"]) for k in ks]
    # the waits lie inside the window (from the first call to the last event)
    want = idle_overlap([(w["start"], w["end"]) for w in waits], busy, 0, 1 << 64)
    check(want > 0, "the waits outlast the kernels (the simulator's return latency)")
    check(g1["sync_idle"]["ns"] == want,
          f"GPU 1 sync idle {g1['sync_idle']['ns']} ns, the waits' idle part {want} ns")
    check(g0["host_wait"]["ns"] == device_of(j, 0)["window_ns"],
          f"GPU 0 all host wait: {g0}")
    # the stream-ordered allocation on GPU 1's stream, GPU 0 current
    allocs = only(calls, "cudaMallocAsync")
    check(len(allocs) == 1 and allocs[0]["device"] == 0 and allocs[0]["bytes"] == MB,
          "one cudaMallocAsync of 1 MiB made with GPU 0 current")
    peaks = [device_of(j, d)["utilization"]["mem_peak_bytes"] for d in (0, 1)]
    check(peaks == [0, MB], f"memory peaks of GPU 0 and 1: {peaks}, want [0, {MB}]")


def t_ctxmix():
    """Runtime calls inside contexts the driver API made current
    (cuCtxSetCurrent, cuCtxPushCurrent_v2, cuCtxPopCurrent_v2) run on
    those contexts' devices, as CUDA's runtime does, and are recorded
    there; cudaSetDevice replaces the current context. Before, the
    simulated runtime made its own device's primary context current under
    the program (cudaGetDevice said 0 and GPU 1's kernels ran on GPU 0)."""
    recs, calls, path, out = run_both("e2e-prog-ctxmix", extra={"GPUSIM_DEVICES": "2"})
    check(out == "devices 1 0 1 0\n", f"output {out!r}")
    owner = linked(recs, calls)
    ks = by_kind(recs, "kernel")
    on = {d: sorted(k["end"] - k["start"] for k in ks if k["device"] == d) for d in (0, 1)}
    check(on == {0: [100000, 100000], 1: [200000] * 3},
          f"kernels by GPU {on}: want two of 100 us (10 waves) on GPU 0, three of 200 us on GPU 1")
    for i, k in enumerate(ks):
        check(owner[("kernel", i)]["device"] == k["device"],
              f"the launch of kernel {i} is recorded on GPU {owner[('kernel', i)]['device']}, "
              f"it ran on GPU {k['device']}")
    waits = only(calls, "cudaDeviceSynchronize") + only(calls, "cudaStreamSynchronize")
    waits.sort(key=lambda c: c["start"])
    check([(w["fn"], w["device"]) for w in waits] ==
          [("cudaDeviceSynchronize", 1), ("cudaStreamSynchronize", 0),
           ("cudaDeviceSynchronize", 1), ("cudaDeviceSynchronize", 0)],
          f"the waits and their GPUs: {[(w['fn'], w['device']) for w in waits]}")
    mem = only(calls, "cudaMalloc") + only(calls, "cudaFree")
    check(len(mem) == 2 and all(c["device"] == 1 for c in mem),
          f"cudaMalloc and cudaFree on GPU 1: {mem}")
    j = report(path)
    peaks = [device_of(j, d)["utilization"]["mem_peak_bytes"] for d in (0, 1)]
    check(peaks == [0, MB], f"memory peaks of GPU 0 and 1: {peaks}, want [0, {MB}]")
    for d in (0, 1):
        b = device_of(j, d)["breakdown"]
        check(b["kernel"]["ns"] == sum(on[d]), f"GPU {d} kernel time {b['kernel']['ns']}")
        blocked = [(c["start"], c["end"]) for c in waits + mem
                   if c["device"] == d and c["fn"] != "cudaMalloc"]
        busy = [(k["start"], k["end"]) for k in ks if k["device"] == d]
        want = idle_overlap(blocked, busy, 0, 1 << 64)
        check(b["sync_idle"]["ns"] == want,
              f"GPU {d} sync idle {b['sync_idle']['ns']} ns, its blocking calls' idle part {want} ns")


if __name__ == "__main__":
    sys.exit(main({
        "arrays": t_arrays, "managed": t_managed, "occupancy": t_occupancy,
        "streams_callbacks": t_streams_callbacks, "omp2gpu": t_omp2gpu,
        "xstream": t_xstream, "ctxmix": t_ctxmix,
    }))

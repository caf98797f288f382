"""gpuphase-report --format perfetto / chrome (docs/export.md) on the
simulated GPU. Every Perfetto export is decoded with Perfetto's own generated
classes (the `perfetto` and `protobuf` packages; without them the test is
skipped) and checked against what makes the viewer fail; every Chrome export
is parsed as JSON and checked the same way. Expected counts and durations
come from the programs and the simulation's timing model
(tests/simcuda/README.md)."""
import glob
import gzip
import json
import os
import re
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import (HBM_GBPS, PCIE_GBPS, Fail, SIMDIR, by_kind, check, copy_ns, dump,
                    kernel_ns, main,
                    prog, report_cmd, run, traces, workdir)

try:
    from perfetto.protos.perfetto.trace import perfetto_trace_pb2 as pb
except Exception:  # the package or a recent enough protobuf is missing
    pb = None

SIM = {k: "" for k in ("GPUSIM_DEVICES", "GPUSIM_SMS", "GPUSIM_WAVE_NS", "GPUSIM_PCIE_GBPS",
                       "GPUSIM_HBM_GBPS", "GPUSIM_COPY_LATENCY_NS", "GPUSIM_API_NS")}
MB = 1 << 20
CLEARED, NEEDS = 1, 2
BEGIN, END, INSTANT, COUNTER = 1, 2, 3, 4


def record(args, extra=None, timeout=100):
    d = workdir()
    p = run(args, d, dict(SIM, **(extra or {})), timeout=timeout)
    check(p.returncode == 0, f"{args}: failed ({p.returncode}): {p.stderr.strip()}")
    files = traces(d)
    check(files, f"{args}: no trace")
    return d, files


def export(fmt, files, out, *extra, rc=0):
    p = report_cmd(["--format", fmt, "-o", out] + list(extra) + list(files))
    check(p.returncode == rc, f"export {fmt} {extra}: exit {p.returncode}, want {rc}: "
          f"{p.stderr.strip()}")
    return p


# ---- Perfetto: decode and check the rules the viewer depends on

class Model:
    """What a Perfetto export holds, after every check passed."""

    def __init__(self):
        self.tracks = {}    # uuid -> TrackDescriptor
        self.slices = {}    # uuid -> [(name, start, end, args, flows, terms)]
        self.counters = {}  # uuid -> [(ts, value)]
        self.instants = []  # (ts, name)

    def named(self, pred):
        return [u for u, t in self.tracks.items() if pred(t)]

    def all_slices(self, pred=lambda t: True):
        return [s for u, ss in self.slices.items() if pred(self.tracks[u]) for s in ss]


def decode(path):
    raw = open(path, "rb").read()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    trace = pb.Trace()
    trace.ParseFromString(raw)
    check(len(trace.packet) > 0, "empty trace")
    m = Model()
    seqs = {}  # id -> state
    open_ = {}  # uuid -> [(name, start, args, flows, terms)]
    flows_src, flows_dst = {}, {}
    for i, p in enumerate(trace.packet):
        sid = p.trusted_packet_sequence_id
        check(sid != 0, f"packet {i} has no sequence id")
        st = seqs.setdefault(sid, {"cleared": False, "clock": None, "t": None,
                                   "defaults": None, "names": {}, "anames": {},
                                   "svals": {}})
        if p.sequence_flags & CLEARED:
            st.update(cleared=True, names={}, anames={}, svals={}, t=None, clock=None)
        if p.sequence_flags & NEEDS:
            check(st["cleared"], f"packet {i}: sequence {sid} needs incremental state "
                  "before it was cleared")
        if p.HasField("trace_packet_defaults"):
            st["defaults"] = p.trace_packet_defaults
        if p.HasField("interned_data"):
            check(st["cleared"], f"packet {i}: interned data on an uncleared sequence")
            for e in p.interned_data.event_names:
                st["names"][e.iid] = e.name
            for e in p.interned_data.debug_annotation_names:
                st["anames"][e.iid] = e.name
            for e in p.interned_data.debug_annotation_string_values:
                st["svals"][e.iid] = e.str.decode()
        if p.HasField("clock_snapshot"):
            for c in p.clock_snapshot.clocks:
                if c.clock_id == 64:
                    check(c.is_incremental, "clock 64 is not incremental")
                    st["clock"], st["t"] = 64, c.timestamp
        if p.HasField("track_descriptor"):
            d = p.track_descriptor
            check(d.uuid not in m.tracks, f"track {d.uuid} declared twice")
            check(not d.parent_uuid or d.parent_uuid in m.tracks,
                  f"track {d.uuid}: parent {d.parent_uuid} not declared before it")
            m.tracks[d.uuid] = d
        if not p.HasField("track_event"):
            continue
        e = p.track_event
        dflt = st["defaults"]
        clock = p.timestamp_clock_id or (dflt.timestamp_clock_id if dflt else 0)
        check(clock == 64 and st["clock"] == 64,
              f"packet {i}: event without the sequence's incremental clock")
        ts = st["t"] + p.timestamp
        check(ts < 1 << 62, f"packet {i}: timestamp went backwards on sequence {sid}")
        st["t"] = ts
        uuid = e.track_uuid if e.HasField("track_uuid") else (
            dflt.track_event_defaults.track_uuid if dflt else 0)
        check(uuid in m.tracks, f"packet {i}: event on undeclared track {uuid}")
        is_counter = m.tracks[uuid].HasField("counter")
        if e.HasField("name_iid"):
            check(e.name_iid in st["names"], f"packet {i}: name iid {e.name_iid} undefined")
            name = st["names"][e.name_iid]
        else:
            name = e.name
        args = {}
        for a in e.debug_annotations:
            check(a.name_iid in st["anames"], f"packet {i}: annotation name undefined")
            k = st["anames"][a.name_iid]
            if a.HasField("string_value_iid"):
                check(a.string_value_iid in st["svals"], f"packet {i}: string iid undefined")
                args[k] = st["svals"][a.string_value_iid]
            elif a.HasField("uint_value"):
                args[k] = a.uint_value
            elif a.HasField("int_value"):
                args[k] = a.int_value
            else:
                args[k] = a.string_value
        if e.type == COUNTER:
            check(is_counter, f"packet {i}: counter value on a non-counter track")
            v = e.double_counter_value if e.HasField("double_counter_value") else e.counter_value
            m.counters.setdefault(uuid, []).append((ts, v))
            continue
        check(not is_counter, f"packet {i}: slice event on a counter track")
        if e.type == INSTANT:
            m.instants.append((ts, name))
        elif e.type == BEGIN:
            open_.setdefault(uuid, []).append((name, ts, args, list(e.flow_ids),
                                               list(e.terminating_flow_ids)))
            for f in e.flow_ids:
                check(f not in flows_src, f"flow {f} starts twice")
                flows_src[f] = ts
            for f in e.terminating_flow_ids:
                check(f not in flows_dst, f"flow {f} ends twice")
                flows_dst[f] = ts
        elif e.type == END:
            stack = open_.get(uuid, [])
            check(stack, f"packet {i}: END on track {uuid} with no open slice")
            name0, start, args0, fl, te = stack.pop()
            m.slices.setdefault(uuid, []).append((name0, start, ts, args0, fl, te))
        else:
            raise Fail(f"packet {i}: event type {e.type}")
    for u, stack in open_.items():
        check(not stack, f"track {u}: {len(stack)} slices never ended")
    check(set(flows_src) == set(flows_dst),
          f"flows without both ends: {len(set(flows_src) ^ set(flows_dst))}")
    for f, t in flows_src.items():
        check(flows_dst[f] >= t, f"flow {f} goes back in time")
    m.flows = len(flows_src)
    # device lanes hold no nested work: one slice at a time
    for u, ss in m.slices.items():
        if m.tracks[u].sibling_merge_key and "-gpu" in m.tracks[u].sibling_merge_key:
            ss = sorted(ss, key=lambda s: s[1])
            for a, b in zip(ss, ss[1:]):
                check(b[1] >= a[2], f"track {u}: device slices overlap")
    return m


def stream_tracks(m):
    return lambda t: t.sibling_merge_key and "-gpu" in t.sibling_merge_key


# ---- Chrome JSON

NS_TS = re.compile(rb'"(ts|dur)":(-?\d+\.\d{3})[,}]')


def chrome(path):
    raw = open(path, "rb").read()
    if path.endswith(".gz"):
        raw = gzip.decompress(raw)
    doc = json.loads(raw)
    evs = doc["traceEvents"]
    check(evs, "no events")
    # every timestamp written as µs with exactly three decimals (ns)
    n_ts = len(re.findall(rb'"(?:ts|dur)":', raw))
    check(len(NS_TS.findall(raw)) == n_ts, "a ts/dur without ns precision")
    named = {(e["pid"], e["tid"]) for e in evs if e["ph"] == "M" and e["name"] == "thread_name"}
    pnamed = {e["pid"] for e in evs if e["ph"] == "M" and e["name"] == "process_name"}
    by = {}
    s, f = {}, {}
    for e in evs:
        ph = e["ph"]
        if ph in ("X", "s", "f", "C"):
            check(e["pid"] in pnamed, f"event of unnamed process {e['pid']}")
        if ph == "X":
            check((e["pid"], e["tid"]) in named, f"X on unnamed thread {e['pid']}/{e['tid']}")
            check(e["dur"] >= 0 and e["name"] != "", f"bad X {e}")
            by.setdefault((e["pid"], e["tid"]), []).append(
                (round(e["ts"] * 1000), round((e["ts"] + e["dur"]) * 1000), e))
        elif ph == "s":
            check(e["id"] not in s, f"flow {e['id']} starts twice")
            s[e["id"]] = e
        elif ph == "f":
            check(e.get("bp") == "e", "flow end without bp e")
            check(e["id"] not in f, f"flow {e['id']} ends twice")
            f[e["id"]] = e
        elif ph == "C":
            check(isinstance(e["args"]["value"], (int, float)), "counter without a value")
    check(set(s) == set(f), "flows without both ends")
    for k, ss in by.items():  # nested or disjoint on each thread
        ss.sort(key=lambda x: (x[0], -x[1]))
        stack = []
        for a, b, e in ss:
            while stack and stack[-1] <= a:
                stack.pop()
            check(not stack or b <= stack[-1], f"X slices overlap on {k}: {e['name']}")
            stack.append(b)
    doc["_by"] = by
    doc["_flows"] = len(s)
    return doc


def chrome_x(doc, cat=None, name=None):
    return [e for ss in doc["_by"].values() for _, _, e in ss
            if (cat is None or e["cat"] == cat) and (name is None or e["name"] == name)]


def need_pb():
    if pb is None:
        print("SKIP: perfetto_trace_pb2 not importable (pip install perfetto protobuf)")
        sys.exit(77)


# ---- scenarios

def t_graph():
    """3 kernels captured, the graph launched 4 times: 12 kernels of the
    model's durations, each with one arrow from its cudaGraphLaunch (3
    arrows per launch, no chain)."""
    need_pb()
    d, files = record([prog("e2e-prog-paths"), "graph"])
    spec = {"paths_graph_a": 132, "paths_graph_b": 264, "paths_graph_c": 1}
    out = os.path.join(d, "g.pftrace")
    export("perfetto", files, out)
    m = decode(out)
    ks = [s for s in m.all_slices(stream_tracks(m)) if s[0] in spec]
    check(len(ks) == 12, f"{len(ks)} kernel slices, want 12")
    for name, a, b, args, fl, te in ks:
        check(b - a == kernel_ns(spec[name]), f"{name}: {b - a} ns, want {kernel_ns(spec[name])}")
        check(len(te) == 1 and not fl, f"{name}: flows {fl} {te}")
        check(args.get("grid") == spec[name], f"{name}: grid {args}")
    gl = [s for s in m.all_slices() if s[0] == "cudaGraphLaunch"]
    check(len(gl) == 4 and all(len(s[4]) == 3 for s in gl),
          f"graph launches {[len(s[4]) for s in gl]}: want 4 with 3 flows each")
    check(m.flows == sum(1 for s in m.all_slices() if s[5]), "flows != kernels with a flow")
    check(set(f for s in gl for f in s[4]) == set(f for s in ks for f in s[5]),
          "kernel flows do not come from the graph launches")
    doc = chrome_out(files, d)
    ck = [e for e in chrome_x(doc, "kernel") if e["name"] in spec]
    check(len(ck) == 12 and doc["_flows"] >= 12, f"chrome: {len(ck)} kernels, {doc['_flows']} flows")
    for e in ck:
        check(round(e["dur"] * 1000) == kernel_ns(spec[e["name"]]), f"chrome {e}")
    # two traces: two processes in one export, 24 kernels, 24 arrows
    _, files2 = record([prog("e2e-prog-paths"), "graph"])
    export("perfetto", files + files2, out)
    m2 = decode(out)
    procs = [t for t in m2.tracks.values() if t.HasField("process")]
    check(len(procs) == 2 and len({t.process.pid for t in procs}) == 2, "two processes")
    k2 = [s for s in m2.all_slices(stream_tracks(m2)) if s[0] in spec]
    check(len(k2) == 24 and m2.flows == 2 * m.flows, f"two traces: {len(k2)} kernels, {m2.flows} flows")
    doc2 = chrome_out(files + files2, d)
    check(len([e for e in chrome_x(doc2, "kernel") if e["name"] in spec]) == 24, "chrome x2")
    # no steps in this trace: --steps is refused
    p = export("perfetto", files, out, "--steps", "0..1", rc=1)
    check("no steps" in p.stderr and len(p.stderr.strip().splitlines()) == 1, p.stderr)


def chrome_out(files, d, *extra):
    out = os.path.join(d, "c.json")
    export("chrome", files, out, *extra)
    return chrome(out)


def t_multidevice():
    """Two GPUs: a group each with its streams; 3 kernels of 264 blocks on
    GPU 0, 2 of 132 on GPU 1, a peer copy of 1 MiB at HBM speed, each with
    its arrow from the call."""
    need_pb()
    d, files = record([prog("e2e-prog-paths"), "multidevice"], {"GPUSIM_DEVICES": "2"})
    out = os.path.join(d, "m.pftrace.gz")
    export("perfetto", files, out)
    m = decode(out)
    gpus = {u: t for u, t in m.tracks.items() if t.name.startswith("GPU ")}
    check(len(gpus) == 2, f"GPU groups {[t.name for t in gpus.values()]}")
    check(all("132 SMs" in t.name for t in gpus.values()), "SMs in the GPU names")
    per = {}
    for u, ss in m.slices.items():
        t = m.tracks[u]
        if t.parent_uuid in gpus:
            g = gpus[t.parent_uuid].name.split()[1]
            per.setdefault(g, []).extend(ss)
    k0 = [s for s in per.get("0", []) if s[0] == "paths_dev0"]
    k1 = [s for s in per.get("1", []) if s[0] == "paths_dev1"]
    check(len(k0) == 3 and all(s[2] - s[1] == kernel_ns(264) for s in k0), f"GPU 0 kernels {k0}")
    check(len(k1) == 2 and all(s[2] - s[1] == kernel_ns(132) for s in k1), f"GPU 1 kernels {k1}")
    cp = [s for ss in per.values() for s in ss if s[0] == "memcpy PtoP"]
    check(len(cp) == 1 and cp[0][2] - cp[0][1] == copy_ns(MB, HBM_GBPS) and
          cp[0][3]["bytes"] == MB and cp[0][3]["copy_kind"] == "PtoP" and len(cp[0][5]) == 1,
          f"peer copy {cp}")
    peer = [s for s in m.all_slices() if s[0] == "cudaMemcpyPeer"]
    check(len(peer) == 1 and peer[0][4] == cp[0][5], "peer copy arrow from cudaMemcpyPeer")
    launches = [s for s in m.all_slices() if s[0] == "cudaLaunchKernel"]
    check(len(launches) == 5 and all(len(s[4]) == 1 for s in launches), "one arrow per launch")
    check(sorted(s[3]["device"] for s in launches) == [0, 0, 0, 1, 1], "devices on launches")
    doc = chrome_out(files, d)
    gp = [e for e in doc["traceEvents"] if e["ph"] == "M" and e["name"] == "process_name"
          and e["args"]["name"].startswith("GPU ")]
    check(len(gp) == 2, "chrome: a process per GPU")


def t_nvtx():
    """NVTX ranges on a track under their thread: push/pop nested, the
    domain ranges (a pop closes its own domain's push), the start/end range
    crossing threads on a lane; every begin ended."""
    need_pb()
    d, files = record([prog("e2e-prog-nvtx")], {"NVTX_INJECTION64_PATH": os.environ["GP_LIB"]})
    out = os.path.join(d, "n.pftrace")
    export("perfetto", files, out)
    m = decode(out)
    rt = lambda t: t.name == "ranges"
    rs = m.all_slices(rt)
    names = sorted(s[0] for s in rs)
    # A (default domain) and DOM_B (mydomain) overlap without nesting: A's
    # pop closes A; DOM_B, above it on the track, ends there and goes on
    # after it as a second slice (a track's slices nest)
    check(len(rs) == 7, f"ranges {names}")
    a = [s for s in rs if s[0] == "A"]
    b = sorted((s for s in rs if s[0] == "DOM_B"), key=lambda s: s[1])
    check(len(a) == 1 and len(b) == 2 and b[0][2] == a[0][2] == b[1][1] and
          a[0][1] <= b[0][1], f"A {a}, DOM_B {b}")
    outer = [s for s in rs if s[0] == "outer"]
    inner = [s for s in rs if s[0].startswith("inn")]
    check(outer and inner and outer[0][1] <= inner[0][1] and inner[0][2] <= outer[0][2],
          "inner range not inside outer")
    check(any(s[0] == "registered step" for s in rs), f"domain range missing: {names}")
    cross = [u for u, ss in m.slices.items() if any(s[0] == "crossing" for s in ss)]
    check(len(cross) == 1 and m.tracks[cross[0]].sibling_merge_key, "start/end range lane")
    for u in m.named(rt):
        check(m.tracks[m.tracks[u].parent_uuid].HasField("thread"), "ranges not under a thread")
    doc = chrome_out(files, d)
    check(len(chrome_x(doc, "range")) == 7, "chrome ranges")


def chrome_sorted_under_threads(doc):
    """Chrome sorts a process's threads by index alone: each ranges track
    right under its own thread (named with its tid), before the next
    thread; before, their indices were numbered apart and collided with
    the threads' (the main thread's ranges sorted beside another thread)."""
    meta = {}
    for e in doc["traceEvents"]:
        if e["ph"] == "M" and e["name"] in ("thread_name", "thread_sort_index"):
            meta.setdefault((e["pid"], e["tid"]), {})[e["name"]] = \
                e["args"]["name" if e["name"] == "thread_name" else "sort_index"]
    threads = {k: v for k, v in meta.items() if k[1] < 0x40000000}
    ranges = {k: v for k, v in meta.items() if ": ranges" in v["thread_name"]}
    check(len(threads) >= 2 and len(ranges) >= 2, f"threads {len(threads)}, ranges {len(ranges)}")
    for k, v in ranges.items():
        m_tid = re.search(r"\[(\d+)\]: ranges", v["thread_name"])
        own = (k[0], int(m_tid.group(1))) if m_tid else None
        check(own in threads, f"{v['thread_name']}: its thread {own} not among {list(threads)}")
        if own not in threads:
            continue
        mine = threads[own]["thread_sort_index"]
        nxt = min([t["thread_sort_index"] for kk, t in threads.items()
                   if kk[0] == k[0] and t["thread_sort_index"] > mine], default=1 << 40)
        check(mine < v["thread_sort_index"] < nxt,
              f"{v['thread_name']} sorts at {v['thread_sort_index']}, its thread at {mine}, "
              f"the next thread at {nxt}")


def t_threads():
    """16 threads x 2000 launches on their own streams: a track per thread
    with its 2000 launches, 32000 kernels of 132 blocks, one arrow each."""
    need_pb()
    d, files = record([prog("e2e-prog-threads")], {"GPUPHASE_FLUSH_MS": "10"})
    out = os.path.join(d, "t.pftrace")
    export("perfetto", files, out)
    m = decode(out)
    per = {}
    for u, ss in m.slices.items():
        n = sum(1 for s in ss if s[0] == "cudaLaunchKernel")
        if n:
            check(m.tracks[u].HasField("thread"), "launches on a non-thread track")
            per[u] = n
    check(sorted(per.values()) == [2000] * 16, f"launches per thread {sorted(per.values())}")
    ks = [s for s in m.all_slices(stream_tracks(m)) if s[0] == "k_thread"]
    check(len(ks) == 32000 and all(s[2] - s[1] == kernel_ns(132) for s in ks),
          f"{len(ks)} kernels")
    check(sum(1 for s in ks if len(s[5]) == 1) == 32000 and m.flows >= 32000, "kernel arrows")
    size = os.path.getsize(out)
    print(f"perfetto: {size} bytes, {size / (2 * 32000 + 16 * 3):.1f} per event")
    # the size estimated before writing (docs/export.md: bytes per timed
    # record) is at most the size written and not far under it: an
    # estimate of 40 B missed Perfetto exports of 500 to 750 MB
    hdr = open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                            "reports", "export.h")).read()
    bpe = {k: int(re.search(rf"GP_EXPORT_{k.upper()}_BPE (\d+)", hdr).group(1))
           for k in ("perfetto", "chrome")}
    timed = json.loads(report_cmd(["--format", "json"] + files).stdout)
    timed = timed["processes"][0]["diagnostics"]["timed_records"]
    cout = os.path.join(d, "c.json")
    for fmt, path in (("perfetto", out), ("chrome", cout)):
        if fmt == "chrome":
            export("chrome", files, cout)
        per = os.path.getsize(path) / timed
        print(f"{fmt}: {per:.1f} B per timed record")
        check(bpe[fmt] <= per <= 1.5 * bpe[fmt],
              f"{fmt}: {per:.1f} B per timed record, estimated {bpe[fmt]}")
    doc = chrome_out(files, d)
    check(len(chrome_x(doc, "kernel", "k_thread")) == 32000 and doc["_flows"] >= 32000,
          "chrome kernels and flows")
    check(len(chrome_x(doc, "range", "worker")) == 16, "a range per worker")
    chrome_sorted_under_threads(doc)


DEMO_KERNELS = {"gemm_fwd", "gemm_bwd"}


def t_demo():
    """The demo: 50 steps on a steps track, 27 kernels and two copies of the
    model's durations per step, counters per GPU; windows by steps and by
    time; gzip; the errors of misuse and of hostile input."""
    need_pb()
    d, files = record([prog_demo()])
    out = os.path.join(d, "d.pftrace")
    export("perfetto", files, out)
    m = decode(out)
    steps = m.all_slices(lambda t: t.name == "steps")
    check(len(steps) == 50, f"{len(steps)} steps")
    check(m.tracks[m.tracks[m.named(lambda t: t.name == "steps")[0]].parent_uuid].HasField("thread"),
          "steps not under a thread")
    dev = m.all_slices(stream_tracks(m))
    kern = [s for s in dev if s[0] not in ("memcpy HtoD", "memcpy DtoH")
            and not s[0].startswith("sync")]
    check(len(kern) == 50 * 27, f"{len(kern)} kernels, want 1350")
    h2d = [s for s in dev if s[0] == "memcpy HtoD"]
    d2h = [s for s in dev if s[0] == "memcpy DtoH"]
    check(len(h2d) == 50 and all(s[2] - s[1] == copy_ns(64 * MB, PCIE_GBPS) for s in h2d),
          "H2D copies")
    check(len(d2h) == 50 and all(s[2] - s[1] == copy_ns(4096, PCIE_GBPS) for s in d2h),
          "D2H copies")
    check(sum(s[2] - s[1] for s in kern) == 50 * 650000, "kernel time per step 650 us")
    # every kernel of the report is a slice, name by name
    rep = json.loads(report_cmd(["--format", "json"] + files).stdout)
    want = {k["name"]: k["count"] for k in rep["kernels"]}
    got = {}
    for s in kern:
        got[s[0]] = got.get(s[0], 0) + 1
    check(got == want, f"kernel slices {got} != the report's {want}")
    cnt = {m.tracks[u].name: v for u, v in m.counters.items()}
    # the report's two per GPU, and a track per measured counter (the
    # simulated NVML and GPM), each with the dump's samples: value / scale
    recs, _ = dump(files[0])
    src = {1: "nvml", 2: "gpm", 3: "pm"}
    met = {r["metric"]: r for r in by_kind(recs, "metric")}
    want = {}
    for x in by_kind(recs, "sample"):
        mt = met[x["metric"]]
        want.setdefault(f"{mt['name']} ({src[mt['source']]})", []).append(
            x["value"] / mt["scale"])
    check(len(want) >= 10, f"the demo's measured counters: {sorted(want)}")
    check(set(cnt) == {"busy %", "memory allocated"} | set(want), f"counters {set(cnt)}")
    for name, vals in want.items():
        got = [v for _, v in cnt.get(name, [])]
        check(got == vals, f"counter {name}: {got[:5]} != {vals[:5]}")
    check(all(0 <= v <= 100 for _, v in cnt["busy %"]) and max(v for _, v in cnt["busy %"]) > 0,
          "busy % values")
    check(max(v for _, v in cnt["memory allocated"]) >= 64 * MB, "memory counter")
    # gzip: the same trace
    export("perfetto", files, out + ".gz")
    check(gzip.decompress(open(out + ".gz", "rb").read()) == open(out, "rb").read(),
          "gzipped export differs")
    # a window of steps: 5..9 -> 5 steps, the kernels of 5 steps
    w = os.path.join(d, "w.pftrace")
    export("perfetto", files, w, "--steps", "5..9")
    mw = decode(w)
    ws = mw.all_slices(lambda t: t.name == "steps")
    check(sorted(s[0] for s in ws) == [f"step #{i}" for i in range(5, 10)], f"steps {ws}")
    wk = [s for s in mw.all_slices(stream_tracks(mw)) if s[0] in DEMO_KERNELS]
    allk = [s for s in kern if s[0] in DEMO_KERNELS]
    check(len(wk) == len(allk) // 10, f"{len(wk)} gemm kernels in 5 steps, want {len(allk) // 10}")
    # time windows: every step syncs its stream, so the kernels that start
    # in [start of step 10, start of step 12) are those of steps 10 and 11;
    # offsets count from the first CUDA call (the first API slice)
    st = {s[0]: s[1] for s in steps}
    t0 = min(s[1] for s in m.all_slices(lambda t: t.HasField("thread")))
    for args, want in ((["--from", str(st["step #10"]), "--to", str(st["step #12"])], 2 * 27),
                       (["--from", "+0", "--to", f"+{st['step #12'] - t0}ns"], 12 * 27)):
        export("perfetto", files, w, *args)
        mt = decode(w)
        got = [s for s in mt.all_slices(stream_tracks(mt)) if s[0] not in
               ("memcpy HtoD", "memcpy DtoH") and not s[0].startswith("sync")]
        check(len(got) == want, f"{args}: {len(got)} kernels, want {want}")
    doc = chrome_out(files, d)
    check(len([e for e in chrome_x(doc, "kernel")]) == 1350, "chrome kernels")
    check(len(chrome_x(doc, "step")) == 50, "chrome steps")
    check(any(e["ph"] == "C" for e in doc["traceEvents"]), "chrome counters")
    errors(files, d)


def prog_demo():
    return os.path.join(SIMDIR, "gpuphase-demo")


def errors(files, d):
    out = os.path.join(d, "e.pftrace")
    cases = [
        (["--format", "perfetto"], 2, "-o FILE"),
        (["--format", "perfetto", "-o", out, "--from", "+2s", "--to", "+1s"], 2, "before --to"),
        (["--format", "perfetto", "-o", out, "--from", "yesterday"], 2, "--from"),
        (["--format", "chrome", "-o", out, "--steps", "9..2"], 2, "--steps"),
        (["--format", "perfetto", "-o", out, "--steps", "0..999"], 1, "steps #0..#49"),
        (["--from", "+1s"], 2, "--format perfetto or chrome"),
        # a window that misses the whole run (the demo lasts about 1 s)
        (["--format", "chrome", "-o", out, "--from", "+100s"], 1, "after the end of the run"),
        (["--format", "perfetto", "-o", out, "--to", "+0"], 1, "before the start of the run"),
    ]
    for args, rc, text in cases:
        p = report_cmd(args + list(files))
        check(p.returncode == rc and text in p.stderr and len(p.stderr.strip().splitlines()) == 1,
              f"{args}: exit {p.returncode} (want {rc}), stderr {p.stderr!r}")
    corpus = sorted(glob.glob(os.path.join(os.path.dirname(__file__), "..", "fuzz",
                                           "corpus", "*", "*.gph")))
    check(corpus, "no hostile traces found")
    for f in corpus:
        for fmt in ("perfetto", "chrome"):
            p = report_cmd(["--format", fmt, "-o", out, f])
            check(p.returncode in (0, 1), f"{f}: exit {p.returncode} {p.stderr[-300:]}")
            if p.returncode:
                check(len(p.stderr.strip().splitlines()) == 1, f"{f}: {p.stderr!r}")
            elif fmt == "perfetto":
                decode(out)


if __name__ == "__main__":
    sys.exit(main({"graph": t_graph, "multidevice": t_multidevice, "nvtx": t_nvtx,
                   "threads": t_threads, "demo": t_demo}))

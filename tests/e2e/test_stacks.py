"""Call sites on the simulated GPU (prog_stacks.c): which calls get a
stack for each GPUPHASE_STACKS value (derived from the rule in
docs/callsites.md and the calls' classes and times in the trace), that the
innermost native frame of each lies in the function that made the call
(the ELF symbol table, `nm -S`, against module base + pc), the prefix tree
(one FRAME per node, written before use), a truncated deep stack, a
dlclosed plugin still described, a function without unwind tables, a
second thread, fork and exec children; the cap on Python frames under each
CPython found (python_deep-VERSION)."""
import json
import os
import re
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import (FIELD, REPORT, SIMDIR, Fail, check, env, main,  # noqa: E402
                    parse_value, prog, run, traces, workdir)
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from findpython import find_python  # noqa: E402

SYNC, COPY, MEMSET, LAUNCH, ASYNC, WAIT = 1 << 3, 1 << 1, 1 << 2, 1 << 0, 1 << 7, 1 << 8
IDLE_NS = 1_000_000   # GP_STK_IDLE_US
EVERY = 64            # GP_STK_LAUNCH_EVERY
N_STREAM_SYNC, N_DEVICE_SYNC, N_LAUNCH = 5, 3, 640  # prog_stacks.c
NATIVE, PYTHON, TRUNCATED = 1, 2, 3
EXE = prog("e2e-prog-stacks")
PLUGIN = os.path.join(os.path.dirname(EXE), "libstacks_plugin.so")


def symbols(path):
    """name -> (value, size) of the defined functions (nm -S)."""
    p = subprocess.run(["nm", "-S", "--defined-only", path], capture_output=True,
                       text=True, check=True)
    out = {}
    for line in p.stdout.splitlines():
        f = line.split()
        if len(f) == 4 and f[2] in "Tt":
            out[f[3]] = (int(f[0], 16), int(f[1], 16))
    return out


def dump(path, sort=False):
    """Records of `gpuphase-report dump`, the record kind under "_k" (FRAME
    has a field named kind)."""
    p = subprocess.run([REPORT, "dump", *(["--sorted"] if sort else []), path],
                       capture_output=True, text=True,
                       timeout=60, env=env(preload=False))
    check(p.returncode == 0, f"dump {path}: {p.stderr}")
    recs, strings = [], {}
    for line in p.stdout.splitlines():
        parts = line.split(None, 1)
        r = {"_k": parts[0]}
        if len(parts) > 1:
            for k, v in FIELD.findall(parts[1]):
                r[k] = parse_value(v)
        if r["_k"] == "string":
            strings[r["id"]] = r["text"]
        recs.append(r)
    # dump prints MODULE.path and PYCODE.file as string ids
    for r in recs:
        if r["_k"] == "module":
            r["path"] = strings.get(r["path"], "")
            r["build_id"] = unescape(r["build_id"])
        elif r["_k"] == "pycode":
            r["file"] = strings.get(r["file"], "")
    return recs


def unescape(s):
    """The bytes of a blob as dump escapes it (\\xHH, \\n, \\t, \\\\, \\")."""
    return str(s).encode("latin-1").decode("unicode_escape").encode("latin-1")


def by_kind(recs, kind):
    return [r for r in recs if r["_k"] == kind]


def api_calls(recs):
    names = {r["api"]: r["name"] for r in by_kind(recs, "api_def")}
    return [dict(r, fn=names.get(r["api"], "?")) for r in by_kind(recs, "api")]


def record(mode, stacks, args=(), warn_ok=False, env=None):
    d = workdir()
    record_to(d, mode, stacks, args, warn_ok, env)
    return [dump(t) for t in traces(d)]


def record_to(d, mode, stacks, args=(), warn_ok=False, env=None):
    extra = {"GPUPHASE_OUTPUT": os.path.join(d, "t-%p.gph"), **(env or {})}
    if stacks is not None:
        extra["GPUPHASE_STACKS"] = stacks
    p = run([EXE, mode, *args], d, extra)
    check(p.returncode == 0, f"prog_stacks {mode} exited {p.returncode}: {p.stderr}")
    check(warn_ok or "gpuphase:" not in p.stderr, f"unexpected warning: {p.stderr}")


class Tree:
    """The FRAME tree and MODULE table of a file-order dump (sort=False:
    each MODULE before the first FRAME that names it) or of a time-order
    one (each MODULE before the first API record whose stack names it)."""

    def __init__(self, recs, sort=False):
        self.frames, self.modules, self.strings = {}, {}, {}
        seen_nodes, seen_mods = set(), set()
        keys = set()
        for r in recs:
            k = r["_k"]
            if k == "module":
                self.modules[r["module"]] = r  # the last copy (unloaded set)
                seen_mods.add(r["module"])
            elif k == "frame":
                n = r["node"]
                check(n not in self.frames, f"FRAME node {n} written twice")
                check(n >= 1, "node id 0")
                check(r["parent"] == 0 or r["parent"] in seen_nodes,
                      f"node {n}: parent {r['parent']} not written before")
                key = (r["parent"], r["kind"], r["module"], r["pc"], r["flags"])
                check(key not in keys, f"two FRAME nodes for {key}")
                keys.add(key)
                if r["kind"] == NATIVE and r["module"] and not sort:
                    check(r["module"] in seen_mods,
                          f"node {n}: MODULE {r['module']} not written before")
                self.frames[n] = r
                seen_nodes.add(n)
            elif k == "api" and r.get("stack"):
                check(r["stack"] in seen_nodes,
                      f"API stack {r['stack']} before its FRAME")
                for f in self.path(r["stack"]):
                    check(f["kind"] != NATIVE or not f["module"] or
                          f["module"] in seen_mods,
                          f"API at {r['start']}: MODULE {f['module']} of its "
                          "stack comes after it")

    def path(self, node):
        out = []
        while node:
            f = self.frames[node]
            out.append(f)
            node = f["parent"]
        return out

    def innermost(self, node):
        """(module path, symbol) of the innermost native frame."""
        for f in self.path(node):
            if f["kind"] == NATIVE:
                m = self.modules.get(f["module"])
                check(m is not None, f"frame module {f['module']} unknown")
                return m, f["pc"]
        raise Fail(f"stack {node} has no native frame")


def function_at(module, pc, syms_by_path):
    syms = syms_by_path.get(os.path.realpath(module["path"]))
    if syms is None:
        return None
    for name, (v, size) in syms.items():
        if v <= pc < v + size:
            return name
    return None


def blocking(cls):
    return bool(cls & SYNC) or (bool(cls & (COPY | MEMSET)) and not cls & ASYNC)


def expected(recs, mode, why=None):
    """(least, most) API records with a stack, by the rule of
    docs/callsites.md; gaps within 20% of the idle time may go either way.
    why, a list, gets a line for each call whose verdict is sure but which
    has no stack, or has a stack that the rule rules out."""
    cls = {r["api"]: r["cls"] for r in by_kind(recs, "api_def")}
    calls = sorted(by_kind(recs, "api"), key=lambda r: (r["thread"], r["start"]))
    if mode == "off":
        return 0, 0
    if mode == "all":
        return len(calls), len(calls)
    lo = hi = 0
    last = {}
    for r in calls:
        c = cls[r["api"]]
        t = r["thread"]
        st = last.setdefault(t, {"end": None, "after_block": False, "launches": 0})
        if blocking(c):
            lo += 1
            hi += 1
            st["after_block"] = True
            if why is not None and not r["stack"]:
                why.append(f"thread {t} blocking call at {r['start']} "
                           f"(api {r['api']}): no stack")
        elif mode == "sampled" and c & COPY:
            # an async copy: every one (it may block: pageable memory)
            lo += 1
            hi += 1
            st["after_block"] = False
            if why is not None and not r["stack"]:
                why.append(f"thread {t} async copy at {r['start']}: no stack")
        elif mode == "sampled" and c & (LAUNCH | MEMSET | ASYNC | WAIT):
            sure = st["after_block"] or st["end"] is None
            maybe = sure
            if st["end"] is not None:
                gap = r["start"] - st["end"]
                sure = sure or gap > IDLE_NS * 1.2
                maybe = maybe or gap > IDLE_NS * 0.8
            if c & LAUNCH:
                st["launches"] += 1
                if st["launches"] % EVERY == 0:
                    sure = maybe = True
            lo += sure
            hi += maybe
            st["after_block"] = False
            if why is not None and (sure and not r["stack"] or
                                    not maybe and r["stack"]):
                gap = r["start"] - st["end"] if st["end"] is not None else None
                why.append(f"thread {t} call at {r['start']} (api {r['api']}, "
                           f"launch {st['launches']}, gap {gap} ns): "
                           f"{'no stack' if sure else 'a stack'}")
        st["end"] = r["end"]
    return lo, hi


def t_counts():
    """The number of captured calls for each setting."""
    for mode in ["off", "sync", "sampled", "all", None]:
        recs = record("main", mode)[0]
        got = sum(1 for r in by_kind(recs, "api") if r["stack"])
        why = []
        lo, hi = expected(recs, mode or "sampled", why)
        check(lo <= got <= hi, f"GPUPHASE_STACKS={mode}: {got} calls with a "
              f"stack, expected {lo}..{hi}; " + "; ".join(why[:5]))
        Tree(recs)
        if mode == "off":
            check(not by_kind(recs, "frame") and not by_kind(recs, "module"),
                  "off: FRAME or MODULE records")
    # the sampled rule's occasions, one by one
    recs = record("gaps", "sampled")[0]
    lo, hi = expected(recs, "sampled")
    got = sum(1 for r in by_kind(recs, "api") if r["stack"])
    check(lo <= got <= hi, f"gaps: {got} calls with a stack, expected {lo}..{hi}")
    launches = sorted((r for r in api_calls(recs) if r["fn"] == "cudaLaunchKernel"),
                      key=lambda r: r["start"])
    check(len(launches) == 14, f"gaps: {len(launches)} launches")
    check(launches[10]["stack"] != 0, "the launch after a blocking call has no stack")
    check(launches[11]["stack"] != 0, "the launch after 5 ms away has no stack")
    if launches[12]["start"] - launches[11]["end"] < IDLE_NS * 0.8:
        check(launches[12]["stack"] == 0, "the launch right after another has a stack")
    check(launches[13]["stack"] != 0,
          "the launch after a blocking call and a cudaSetDevice has no stack")
    rec = [r for r in api_calls(recs) if r["fn"] == "cudaEventRecord"]
    check(len(rec) == 1 and rec[0]["stack"] != 0,
          f"the event recorded after 5 ms away has no stack: {rec}")
    # the launches alone: 640 with no blocking call among them; with the
    # TSC and with CLOCK_MONOTONIC (the launch wrapper's other path)
    for clock in (None, "monotonic"):
        recs = record("main", "sampled",
                      env={"GPUPHASE_CLOCK": clock} if clock else None)[0]
        calls = api_calls(recs)
        launches = [r for r in calls if r["fn"] == "cudaLaunchKernel"]
        check(len(launches) == N_LAUNCH, f"clock {clock}: {len(launches)} launches")
        got = sum(1 for r in launches if r["stack"])
        check(got >= N_LAUNCH // EVERY, f"clock {clock}: {got} launches with a stack")
        why = []
        lo, hi = expected(recs, "sampled", why)
        got = sum(1 for r in by_kind(recs, "api") if r["stack"])
        check(lo <= got <= hi, f"clock {clock}: {got} calls with a stack, "
              f"expected {lo}..{hi}; " + "; ".join(why[:5]))


def t_sites():
    """Innermost frames in the calling functions; truncation; plugin;
    no unwind tables; a second thread."""
    recs = record("main", "sync")[0]
    tree = Tree(recs)
    d = workdir()
    record_to(d, "main", "sync")
    Tree(dump(traces(d)[0], sort=True), sort=True)
    syms = {os.path.realpath(EXE): symbols(EXE),
            os.path.realpath(PLUGIN): symbols(PLUGIN)}
    calls = api_calls(recs)
    where = {}
    threads = {}
    for r in calls:
        if not r["stack"]:
            check(not blocking({d["api"]: d["cls"] for d in by_kind(recs, "api_def")}[r["api"]]),
                  f"{r['fn']} without a stack")
            continue
        m, pc = tree.innermost(r["stack"])
        fn = function_at(m, pc, syms)
        where.setdefault((r["fn"], fn), []).append(r)
        threads.setdefault(fn, set()).add(r["thread"])
    count = {k: len(v) for k, v in where.items()}
    check(count.get(("cudaStreamSynchronize", "stacks_sync_stream")) == N_STREAM_SYNC,
          f"stream syncs by function: {count}")
    check(count.get(("cudaDeviceSynchronize", "stacks_sync_device")) == N_DEVICE_SYNC + 1,
          f"device syncs by function: {count}")
    check(len(threads.get("stacks_sync_device", ())) == 2,
          "stacks_sync_device: the main thread and the second thread")
    check(count.get(("cudaDeviceSynchronize", "stacks_recurse")) == 1, f"recursion: {count}")
    check(count.get(("cudaDeviceSynchronize", "stacks_plugin_sync")) == 1, f"plugin: {count}")
    check(count.get(("cudaStreamSynchronize", "stacks_nounwind_sync")) == 1,
          f"no unwind tables: {count}")
    for (api, fn), rs in where.items():
        check(fn is not None, f"{api}: innermost frame in no known function")
    # 200 levels: 128 native frames and the TRUNCATED node outermost
    deep = tree.path(where[("cudaDeviceSynchronize", "stacks_recurse")][0]["stack"])
    check(len(deep) == 129 and deep[-1]["kind"] == TRUNCATED and
          all(f["kind"] == NATIVE for f in deep[:-1]),
          f"deep stack: {len(deep)} nodes, outermost kind {deep[-1]['kind']}")
    inner = [function_at(tree.modules[f["module"]], f["pc"], syms) for f in deep[:-1]]
    check(inner.count("stacks_recurse") == 128, "the 128 frames are the recursion's")
    # shallow stacks are whole: main and below, no TRUNCATED
    shallow = tree.path(where[("cudaStreamSynchronize", "stacks_sync_stream")][0]["stack"])
    names = [function_at(tree.modules[f["module"]], f["pc"], syms) for f in shallow]
    check(names[:2] == ["stacks_sync_stream", "main"] and
          all(f["kind"] == NATIVE for f in shallow), f"stream sync stack: {names}")
    # the plugin: described, unloaded, its frame resolves to it
    m, pc = tree.innermost(where[("cudaDeviceSynchronize", "stacks_plugin_sync")][0]["stack"])
    check(os.path.realpath(m["path"]) == os.path.realpath(PLUGIN), f"plugin module {m}")
    check(m["unloaded"] != 0 and m["unloaded"] >= m["start"], f"plugin not unloaded: {m}")
    check(len(m["build_id"]) == 20, f"plugin build id {m['build_id']!r}")
    copies = [r for r in by_kind(recs, "module") if r["module"] == m["module"]]
    check(1 <= len(copies) <= 2 and copies[-1]["unloaded"], f"plugin MODULE copies {copies}")
    check(all(f["kind"] != PYTHON for f in tree.frames.values()), "Python frames without Python")
    # the module of each native frame contains its address
    for f in tree.frames.values():
        if f["kind"] == NATIVE and f["module"]:
            check(f["pc"] < tree.modules[f["module"]]["size"], f"pc outside its module: {f}")


def t_reload():
    """A library dlopened where a dlclosed one lay (the loader mostly maps
    the second at the first's address): its calls are its own, by module
    and function, in the trace and in the report; before, the writer took
    the unloaded library for still mapped and named it."""
    plugin2 = os.path.join(os.path.dirname(EXE), "libstacks_plugin2.so")
    d = workdir()
    record_to(d, "reload", "sync")
    recs = dump(traces(d)[0])
    tree = Tree(recs)
    syms = {os.path.realpath(PLUGIN): symbols(PLUGIN),
            os.path.realpath(plugin2): symbols(plugin2)}
    count = {}
    for r in api_calls(recs):
        if r["stack"] and r["fn"] == "cudaDeviceSynchronize":
            m, pc = tree.innermost(r["stack"])
            key = (os.path.basename(m["path"]), function_at(m, pc, syms))
            count[key] = count.get(key, 0) + 1
    check(count == {("libstacks_plugin.so", "stacks_plugin_sync"): 1,
                    ("libstacks_plugin2.so", "stacks_plugin2_sync"): 3},
          f"syncs by module and function: {count}")
    p = subprocess.run([REPORT, "-f", "json", traces(d)[0]], capture_output=True, text=True,
                       timeout=60, env=env(preload=False))
    sites = {}
    for c in json.loads(p.stdout)["callsites"]:
        if c["kind"] == "blocking" and c["frames"]:
            f = c["frames"][0]
            sites[(f["function"], os.path.basename(f["module"] or ""))] = c["count"]
    check(sites.get(("stacks_plugin_sync", "libstacks_plugin.so")) == 1 and
          sites.get(("stacks_plugin2_sync", "libstacks_plugin2.so")) == 3,
          f"report call sites: {sites}")


def t_fork():
    for mode in ["fork", "exec"]:
        ts = record(mode, "sync")
        check(len(ts) == 2, f"{mode}: {len(ts)} traces")
        found = 0
        for recs in ts:
            tree = Tree(recs)
            syms = {os.path.realpath(EXE): symbols(EXE)}
            for r in api_calls(recs):
                if r["fn"] == "cudaStreamSynchronize" and r["stack"]:
                    m, pc = tree.innermost(r["stack"])
                    found += function_at(m, pc, syms) == "stacks_sync_stream"
        check(found == 1, f"{mode}: the child's stream sync has a stack ({found})")
    # a failed exec: the second trace of the process has the stack again
    # (the simulated CUPTI refuses a second setup: a warning, host calls kept)
    ts = record("execfail", "sync", warn_ok=True)
    check(len(ts) == 2, f"execfail: {len(ts)} traces")
    for recs in ts:
        tree = Tree(recs)
        syms = {os.path.realpath(EXE): symbols(EXE)}
        sites = [function_at(*tree.innermost(r["stack"]), syms)
                 for r in api_calls(recs) if r["fn"] == "cudaStreamSynchronize"]
        check(sites == ["stacks_sync_stream"], f"execfail: stream syncs at {sites}")


def t_python():
    """The Python path with fake_pyframes.c's fixed frames: PYCODE records,
    the placement of the two runs, a thread without Python."""
    d = workdir()
    fake = os.path.join(os.path.dirname(EXE), "libgpuphase-pyfake.so")
    pre = os.environ.get("GP_PRELOAD_PREFIX", "")
    p = run([EXE, "py"], d, {"GPUPHASE_OUTPUT": os.path.join(d, "t.gph"),
                              "GPUPHASE_STACKS": "sync",
                              "LD_PRELOAD": (pre + ":" if pre else "") + fake})
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    recs = dump(os.path.join(d, "t.gph"))
    tree = Tree(recs)
    Tree(dump(os.path.join(d, "t.gph"), sort=True), sort=True)
    syms = {os.path.realpath(EXE): symbols(EXE)}
    codes = {r["code"]: r for r in by_kind(recs, "pycode")}
    check(len(codes) == 3, f"{len(codes)} PYCODE records")
    byfile = {r["file"]: r for r in codes.values()}
    for k in (1, 2, 3):
        r = byfile.get(f"/fake/train_{k}.py")
        check(r is not None and r["name"] == f"Model.step_{k}" and
              r["first_line"] == 100 * k and r["py_version"] == 0x030c00f0,
              f"PYCODE {k}: {r}")
        lt = bytes(0xa0 + k * 16 + i for i in range(k + 2))
        check(r["linetable"] == "".join("\\x%02x" % b for b in lt),
              f"PYCODE {k} line table {r['linetable']!r}")
    code_k = {c: int(r["file"][-4]) for c, r in codes.items()}

    def show(f):
        if f["kind"] == NATIVE:
            return function_at(tree.modules[f["module"]], f["pc"], syms) or "?"
        if f["kind"] == PYTHON:
            return "py%d@%d%s" % (code_k[f["module"]], f["pc"],
                                  "E" if f["flags"] & 1 else "")
        return "T"

    py_thread, other = [], []
    for r in api_calls(recs):
        if r["fn"] != "cudaDeviceSynchronize":
            continue
        check(r["stack"] != 0, "a sync without a stack")
        path = [show(f) for f in tree.path(r["stack"])]
        (py_thread if any(x.startswith("py") for x in path) else other).append(path)
    check(len(py_thread) == 2 and len(other) == 1,
          f"{len(py_thread)} stacks with Python, {len(other)} without")
    want_inner = ["stacks_sync_device", "py1@10", "py2@20E", "stacks_fake_eval", "main"]
    for path in py_thread:
        check(path[:5] == want_inner and path[-1] == "py3@30E" and
              "py3@30E" not in path[:-1],
              f"placement: {path}")
    check(py_thread[0] == py_thread[1], "the same stack twice")
    check(other[0][0] == "stacks_sync_device" and "main" not in other[0],
          f"thread stack {other[0]}")


def t_table_full():
    """5000 new stacks on one thread (the fake frames differ at each
    capture): the first 4095 (GP_STK_IDS - 1) get one, the rest none, and
    one stderr line says so."""
    d = workdir()
    fake = os.path.join(os.path.dirname(EXE), "libgpuphase-pyfake.so")
    pre = os.environ.get("GP_PRELOAD_PREFIX", "")
    p = run([EXE, "many"], d, {"GPUPHASE_OUTPUT": os.path.join(d, "t.gph"),
                                "GPUPHASE_STACKS": "sync", "GP_FAKEPY_VARY": "1",
                                "LD_PRELOAD": (pre + ":" if pre else "") + fake},
            timeout=120)
    check(p.returncode == 0, f"exit {p.returncode}: {p.stderr}")
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("gpuphase:")]
    check(len(lines) == 1 and "full" in lines[0], f"stderr: {p.stderr!r}")
    recs = dump(os.path.join(d, "t.gph"))
    Tree(recs)
    syncs = [r for r in api_calls(recs) if r["fn"] == "cudaDeviceSynchronize"]
    check(len(syncs) == 5000, f"{len(syncs)} syncs")
    with_stack = [r for r in syncs if r["stack"]]
    check(len(with_stack) == 4095, f"{len(with_stack)} with a stack")
    check(len({r["stack"] for r in with_stack}) == 4095, "distinct stacks")
    first = sorted(syncs, key=lambda r: r["start"])
    check(all(r["stack"] for r in first[:4095]) and not any(r["stack"] for r in first[4095:]),
          "the first 4095 have stacks")


def t_pageable():
    """Async copies from pageable memory block like synchronous ones (the
    report learns it from their device records): in the default mode each
    async copy carries a stack, so all 20 are a blocking call site, none
    "not captured"."""
    d = workdir()
    p = run([prog("e2e-prog-scenarios"), "pageable", "20"], d,
            {"GPUPHASE_OUTPUT": os.path.join(d, "t-%p.gph")})
    check(p.returncode == 0, f"scenarios pageable: {p.stderr}")
    r = subprocess.run([REPORT, "--format", "json", traces(d)[0]], capture_output=True,
                       text=True, timeout=60, env=env(preload=False))
    cs = json.loads(r.stdout)["callsites"]
    blk = [c for c in cs if c["kind"] == "blocking" and c["api"] == "cudaMemcpyAsync"]
    check(sum(c["count"] for c in blk) == 20, f"blocking async copies {blk}")
    tot = json.loads(r.stdout)["callsites_totals"]
    check(tot.get("calls_uncaptured", 0) == 0, f"totals {tot}")
    # With GPUPHASE_STACKS=sync no async copy carries a stack: the sync idle
    # the 200 small pageable copies cause is "not captured", and the
    # sync_bound finding, which names the best captured site (the final
    # cudaStreamSynchronize, next to nothing), says how much it leaves
    # out: the not-captured sync idle over the GPU's idle time (launch +
    # sync idle + host wait), as the rule in findings.c computes it.
    for mode in ("sync", "sampled"):
        d = workdir()
        p = run([prog("e2e-prog-scenarios"), "pageable_small", "200"], d,
                {"GPUPHASE_OUTPUT": os.path.join(d, "t-%p.gph"),
                 "GPUPHASE_STACKS": mode})
        check(p.returncode == 0, f"scenarios pageable_small: {p.stderr}")
        r = subprocess.run([REPORT, "--format", "json", traces(d)[0]],
                           capture_output=True, text=True, timeout=60,
                           env=env(preload=False))
        js = json.loads(r.stdout)
        tot = js["callsites_totals"]
        idle = sum(dv["breakdown"][c]["ns"] for dv in js["devices"]
                   for c in ("launch", "sync_idle", "host_wait"))
        text = [f["text"] for f in js["findings"] if f["rule"] == "sync_bound"]
        check(len(text) == 1, f"{mode}: sync_bound finding: {js['findings']}")
        un = tot["sync_idle_not_captured_ns"]
        if mode == "sync":
            check(tot["blocking_calls_not_captured"] == 200, f"sync: {tot}")
            want = "and %.0f%% in calls whose site was not captured" % (100.0 * un / idle)
            check(un * 2 > tot["sync_idle_ns"] and want in text[0],
                  f"sync: want {want!r} in {text[0]!r} ({tot})")
        else:
            check(un == 0 and "not captured" not in text[0],
                  f"sampled: {text[0]!r} ({tot})")


def t_bad_setting():
    d = workdir()
    p = run([EXE, "main"], d, {"GPUPHASE_OUTPUT": os.path.join(d, "t.gph"),
                                "GPUPHASE_STACKS": "sometimes"})
    check(p.returncode == 0, "exit status")
    lines = [ln for ln in p.stderr.splitlines() if ln.startswith("gpuphase:")]
    check(len(lines) == 1 and "GPUPHASE_STACKS=sometimes" in lines[0], f"stderr: {p.stderr}")
    # 0 turns stacks off, as it does the other switches: no warning, no
    # stack records
    for v in ("0", "off"):
        recs = record("main", v)[0]
        check(not [r for r in recs if r["_k"] in ("frame", "module")],
              f"GPUPHASE_STACKS={v}: stack records recorded")
    # the text table: the call a site waits in is never cut (its frame is),
    # and a table that shows fewer sites than it has says how many more
    d = workdir()
    record_to(d, "main", "sync")
    r = subprocess.run([REPORT, "--top", "1", traces(d)[0]], capture_output=True,
                       text=True, timeout=60)
    rows = r.stdout.split("Where the host waits", 1)[-1].splitlines()
    sync_rows = [x for x in rows if "cudaStreamSynchronize" in x or "cudaDeviceSynchronize" in x]
    check(r.returncode == 0 and sync_rows, f"call names cut in the table: {rows[:8]}")
    check(any(re.fullmatch(r"  \(\d+ more\)", x) for x in rows), f"no '(N more)': {rows[:12]}")


def t_python_real():
    """The real Python frame reader, end to end (prog_pysites.py under this
    interpreter): the report's blocking call sites name the Python
    function and line of each blocking call (lines marked in the source),
    merged in place of the interpreter's frames, with one call per step:
    copy_here -> cudaMemcpy and wait_here -> cudaDeviceSynchronize, N each.
    The native frames below them are libffi's and the interpreter's."""
    n = 6
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prog_pysites.py")
    lines = {}
    with open(src) as f:
        for i, text in enumerate(f, 1):
            for mark in ("LINE-COPY", "LINE-WAIT"):
                if text.rstrip().endswith("# " + mark):
                    lines[mark] = i
    d = workdir()
    p = run([sys.executable, src, os.path.join(SIMDIR, "libcudart.so.13"), str(n)], d)
    check(p.returncode == 0 and p.stdout.strip() == "ok", f"program: {p.stdout} {p.stderr}")
    check("Python" not in p.stderr, f"stderr: {p.stderr}")
    r = subprocess.run([REPORT, "--format", "json", traces(d)[0]], capture_output=True,
                       text=True, timeout=120, env=env(preload=False))
    check(r.returncode == 0, f"report: {r.stderr}")
    import json
    sites = [c for c in json.loads(r.stdout)["callsites"] if c["kind"] == "blocking"]

    def site(func, line):
        for c in sites:
            py = [f for f in c["frames"] if f.get("python")]
            if py and py[0]["function"] == func and py[0]["line"] == line and \
                    os.path.samefile(py[0]["file"], src):
                return c
        return None

    for func, mark, api in (("copy_here", "LINE-COPY", "cudaMemcpy"),
                            ("wait_here", "LINE-WAIT", "cudaDeviceSynchronize")):
        c = site(func, lines[mark])
        check(c is not None, f"no blocking site at {func} line {lines[mark]}: "
              f"{[(c['count'], c['frames'][:3]) for c in sites]}")
        if c:
            check(c["count"] == n and c.get("api", api) == api, f"{func}: {c}")


def documented_py_cap():
    """The Python frames a stack keeps, as docs/callsites.md ("Limits")
    states it."""
    doc = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..",
                       "docs", "callsites.md")
    with open(doc, encoding="utf-8") as f:
        g = re.search(r"(\d+) native and (\d+) Python\s+frames", f.read())
    check(g is not None, "docs/callsites.md states no cap on Python frames")
    return int(g.group(2))


def t_python_deep(version):
    """The cap on Python frames (prog_pydeep.py under CPython VERSION): a
    call from CAP - 1 and CAP Python frames keeps them all, untruncated;
    one from CAP + 1 and from 150 keeps its CAP innermost Python frames and
    is marked truncated, as a native stack deeper than its cap is: JSON
    `truncated` true (and false for the others), the folded line starting
    with `[truncated]`, the text's full stack ending "(outer callers not
    captured)". From 3.11 a Python call adds no native frame, so the
    native stack is shallow and the mark comes from the Python frames
    alone; 3.9 and 3.10 nest native frames for each Python one, so there
    the native cap cuts even the shallower stacks and only the deeper ones'
    mark and the number of Python frames kept are checked. Skipped (77)
    where that interpreter is not installed."""
    py = find_python(version)
    if not py:
        print("skipped: no python%s here" % version)
        sys.exit(77)
    cap = documented_py_cap()
    depths = [cap - 1, cap, cap + 1, 150]
    src = os.path.join(os.path.dirname(os.path.abspath(__file__)), "prog_pydeep.py")
    leaf_line = {}
    with open(src) as f:
        for i, text in enumerate(f, 1):
            g = re.search(r"# LEAF-(\d)$", text.rstrip())
            if g:
                leaf_line[i] = int(g.group(1)) - 1
    check(len(leaf_line) == 4, f"LEAF marks in {src}: {leaf_line}")
    d = workdir()
    p = run([py, src, os.path.join(SIMDIR, "libcudart.so.13")] + [str(x) for x in depths],
            d, {"GPUPHASE_OUTPUT": os.path.join(d, "t-%p.gph"), "PYTHONPATH": None,
                "PYTHONHOME": None})
    want_out = ["depth %d %d" % (k + 1, x) for k, x in enumerate(depths)] + ["ok"]
    check(p.returncode == 0 and p.stdout.split("\n")[:-1] == want_out,
          f"program: {p.returncode} {p.stdout!r} {p.stderr}")
    check("gpuphase:" not in p.stderr, f"stderr: {p.stderr}")
    minor = int(subprocess.run([py, "-c", "import sys; print(sys.version_info[1])"],
                               capture_output=True, text=True, timeout=30).stdout)
    nested = minor < 11
    tr = traces(d)
    check(len(tr) == 1, f"traces {tr}")
    r = subprocess.run([REPORT, "--format", "json", "--frames", "all", tr[0]],
                       capture_output=True, text=True, timeout=120, env=env(preload=False))
    check(r.returncode == 0, f"report: {r.stderr}")
    found = {}
    for c in json.loads(r.stdout)["callsites"]:
        pyf = [f for f in c["frames"] if f.get("python")]
        if c["kind"] != "blocking" or not pyf or pyf[0]["function"] != "leaf":
            continue
        k = leaf_line.get(pyf[0]["line"])
        check(k is not None and k not in found and c["count"] == 1,
              f"site {c['count']} x {pyf[0]}")
        found[k] = (c, pyf)
    check(sorted(found) == [0, 1, 2, 3], f"sites of depths {sorted(found)}")
    for k, depth in enumerate(depths):
        c, pyf = found[k]
        deeper = depth > cap
        names = [f["function"] for f in pyf]
        check(len(pyf) == min(depth, cap),
              f"depth {depth}: {len(pyf)} Python frames kept, want {min(depth, cap)}")
        # the innermost kept: leaf, then dive ...; the module's frame only
        # when nothing was cut
        check(names[0] == "leaf" and set(names[1:-2]) <= {"dive"} and
              (names[-1] == "<module>") == (not deeper),
              f"depth {depth}: Python frames {names[:3]} ... {names[-3:]}")
        if deeper or not nested:
            check(c["truncated"] == deeper,
                  f"depth {depth} ({cap} kept): truncated {c['truncated']}")
    # folded (blocked time: every blocking site has some) and text
    r = subprocess.run([REPORT, "--format", "folded", "--weight", "blocked", "--frames", "all",
                        tr[0]], capture_output=True, text=True, timeout=120,
                       env=env(preload=False))
    check(r.returncode == 0, f"folded: {r.stderr}")
    lines = {}
    for ln in r.stdout.splitlines():
        parts = ln.rsplit(" ", 1)[0].split(";")
        # outermost first: the leaf's frame is followed by native ones
        # (libffi) and the CUDA function
        leaf = [g for g in (re.search(r"prog_pydeep\.py:(\d+) \(leaf\)$", x)
                            for x in parts) if g]
        g = parts[-1] == "cudaDeviceSynchronize" and leaf and leaf[-1]
        if g and int(g.group(1)) in leaf_line:
            k = leaf_line[int(g.group(1))]
            check(k not in lines, f"two folded lines for LEAF-{k + 1}")
            lines[k] = ln
    check(sorted(lines) == [0, 1, 2, 3], f"folded lines: {r.stdout}")
    for k, depth in enumerate(depths):
        if depth > cap or not nested:
            check(lines[k].startswith("[truncated];") == (depth > cap),
                  f"depth {depth}: folded {lines[k][:60]}")
    r = subprocess.run([REPORT, "--frames", "all", tr[0]], capture_output=True, text=True,
                       timeout=120, env=env(preload=False))
    check(r.returncode == 0, f"text: {r.stderr}")
    # each table row of a site (blocking, host wait ended by) and its stack
    blocks, cur = [], None
    for ln in r.stdout.splitlines():
        if ln.startswith("        ") and cur is not None:
            cur.append(ln.strip())
        else:
            cur = [ln] if ln.startswith("  ") else None
            if cur is not None:
                blocks.append(cur)
    rows = 0
    for b in blocks:
        leaf = [g for g in (re.fullmatch(r"prog_pydeep\.py:(\d+) \(leaf\)", x) for x in b[1:])
                if g]
        if not leaf or int(leaf[0].group(1)) not in leaf_line:
            continue
        depth = depths[leaf_line[int(leaf[0].group(1))]]
        rows += 1
        if depth > cap or not nested:
            check((b[-1] == "(outer callers not captured)") == (depth > cap),
                  f"text: depth {depth}: stack ends {b[-1]!r}")
    check(rows >= 4, f"text: {rows} rows with a stack of leaf()")


PY_VERSIONS = ["3.9", "3.10", "3.11", "3.12", "3.13", "3.14", "system"]

if __name__ == "__main__":
    sys.exit(main({"counts": t_counts, "pageable": t_pageable, "sites": t_sites, "fork": t_fork,
                   "reload": t_reload,
                   "bad_setting": t_bad_setting, "python": t_python,
                   "table_full": t_table_full, "python_real": t_python_real,
                   **{"python_deep-" + v: (lambda v=v: t_python_deep(v))
                      for v in PY_VERSIONS}}))

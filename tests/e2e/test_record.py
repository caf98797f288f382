"""End-to-end tests of recording on the simulated GPU (tests/simcuda).
Expected values come from the simulator's documented timing model."""
import errno
import glob
import json
import os
import shutil
import re
import signal
import socket
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

MB = 1 << 20


def t_basic():
    d = workdir()
    p = run([prog("e2e-prog-basic")], d)
    check(p.returncode == 0, f"program failed: {p.returncode} {p.stderr}")
    files = traces(d)
    check(len(files) == 1, f"expected one trace, got {files}")
    recs, _ = dump(files[0])
    calls = api_calls(recs)
    names = [c["fn"] for c in calls]
    expect = (["cudaMalloc"] * 2 + ["cudaMallocHost", "cudaMemcpy"] +
              ["cudaLaunchKernel"] * 15 +
              ["cudaMemsetAsync", "cudaMemcpyAsync", "cudaStreamSynchronize",
               "cudaDeviceSynchronize", "cudaFree", "cudaFree", "cudaFreeHost",
               "cudaMalloc"])
    check(names == expect, f"API calls differ:\n got {names}\nwant {expect}")
    check(calls[-1]["ret"] == 2, "failed cudaMalloc must record cudaErrorMemoryAllocation (2)")
    kernels = sorted(by_kind(recs, "kernel"), key=lambda r: r["start"])
    copies = sorted(by_kind(recs, "memcpy"), key=lambda r: r["start"])
    sets = by_kind(recs, "memset")
    syncs = by_kind(recs, "sync")
    check(len(kernels) == 15, f"15 kernel records expected, got {len(kernels)}")
    check(len(copies) == 2 and len(sets) == 1, f"copies {len(copies)} memsets {len(sets)}")
    check(len(syncs) == 2, f"2 sync records expected (stream, context), got {len(syncs)}")
    # durations from the model
    for k in kernels[:10]:
        check(k["name"] == "k_big", f"kernel name {k['name']}")
        check(k["end"] - k["start"] == kernel_ns(264), f"k_big lasted {k['end'] - k['start']}")
        check((k["grid_x"], k["block_x"]) == (264, 128), "grid/block of k_big")
    for k in kernels[10:]:
        check(k["name"] == "k_small", f"kernel name {k['name']}")
        check(k["end"] - k["start"] == kernel_ns(1), f"k_small lasted {k['end'] - k['start']}")
    for c in copies:
        check(c["bytes"] == MB and c["end"] - c["start"] == copy_ns(MB, PCIE_GBPS),
              f"copy of {c['bytes']} B lasted {c['end'] - c['start']}")
    check(sets[0]["end"] - sets[0]["start"] == copy_ns(MB, HBM_GBPS), "memset duration")
    # stream FIFO: each kernel starts when the previous one on the stream ends,
    # or when it was issued if the stream was idle
    by_corr = {c["corr"]: c for c in calls if c["corr"]}
    for prev, k in zip(kernels, kernels[1:]):
        issued = by_corr[k["corr"]]
        check(k["start"] >= prev["end"], "kernels on one stream overlap")
        check(k["start"] == prev["end"] or issued["start"] <= k["start"] <= issued["end"],
              "kernel started neither at the previous end nor at its issue")
    # every device record is linked to exactly one call of the right family
    family = {"kernel": "cudaLaunchKernel", "memset": "cudaMemsetAsync",
              "memcpy": ("cudaMemcpy", "cudaMemcpyAsync"),
              "sync": ("cudaStreamSynchronize", "cudaDeviceSynchronize")}
    corrs = [c["corr"] for c in calls if c["corr"]]
    check(len(corrs) == len(set(corrs)), "correlation ids repeat across calls")
    for kind, fns in family.items():
        for r in by_kind(recs, kind):
            c = by_corr.get(r["corr"])
            check(c is not None, f"{kind} record corr={r['corr']} has no API call")
            check(c["fn"] in (fns if isinstance(fns, tuple) else (fns,)),
                  f"{kind} linked to {c['fn']}")
            check(r["start"] >= c["start"], f"{kind} started before its call")
    # the synchronous pageable copy returns at its completion
    sync_copy = [c for c in calls if c["fn"] == "cudaMemcpy"][0]
    dev_copy = [c for c in copies if c["corr"] == sync_copy["corr"]][0]
    check(sync_copy["end"] >= dev_copy["end"], "cudaMemcpy returned before the copy ended")
    check(dev_copy["src_mem"] == 1 and dev_copy["dst_mem"] == 3, "H2D copy: pageable -> device")
    # allocations carry size and address; frees the address
    mallocs = [c for c in calls if c["fn"] == "cudaMalloc" and c["ret"] == 0]
    frees = [c for c in calls if c["fn"] == "cudaFree"]
    check([m["bytes"] for m in mallocs] == [MB, MB], "allocation sizes")
    check(sorted(m["ptr"] for m in mallocs) == sorted(f["ptr"] for f in frees),
          "freed addresses are the allocated ones")
    devs = by_kind(recs, "device")
    check(len(devs) == 1 and devs[0]["name"] == "gpuphase-sim" and devs[0]["sms"] == 132
          and devs[0]["mem_total"] == 141000000000 and devs[0]["cc_major"] == 9,
          f"device record {devs}")
    check(len(by_kind(recs, "thread")) == 1, "one thread expected")
    check(len(by_kind(recs, "summary")) == 1, "summary frame missing")
    s = by_kind(recs, "summary")[0]
    check(s["lost"] == 0, "events lost")
    check(s["events"] >= 26 + 20, f"summary counts {s['events']} events")
    check(not by_kind(recs, "state"), "trace unexpectedly degraded")


def t_ordered():
    """Each source of the trace is in start order, so the time-ordered
    report never has to clip a record (a stream synchronisation starts
    before the work queued ahead of it: it must not share that stream's
    source)."""
    import json
    d = workdir()
    p = run([prog("e2e-prog-basic")], d)
    check(p.returncode == 0, "program failed")
    r = subprocess.run([REPORT, "--format", "json", traces(d)[0]], capture_output=True,
                       text=True, env=env(preload=False), timeout=60)
    check(r.returncode == 0, f"report failed: {r.stderr}")
    diag = json.loads(r.stdout)["diagnostics"]
    check(diag["late_records"] == 0 and diag["late_records_dropped"] == 0,
          f"records out of order in the trace: {diag}")


def t_fork():
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "fork"], d)
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    child = int(re.search(r"child (\d+)", p.stdout).group(1))
    files = traces(d)
    check(len(files) == 2, f"two traces expected, got {files}")
    mine = [f for f in files if f"-{child}." in os.path.basename(f)]
    check(len(mine) == 1, f"no trace named after the child pid {child}: {files}")
    parent = [f for f in files if f not in mine][0]
    crecs, _ = dump(mine[0])
    precs, _ = dump(parent)
    # parent: 3 launches + sync before, 2 launches + sync after; child: 5 + sync
    check(len(by_kind(precs, "kernel")) == 5, f"parent kernels {len(by_kind(precs, 'kernel'))}")
    check(len(by_kind(crecs, "kernel")) == 5, f"child kernels {len(by_kind(crecs, 'kernel'))}")
    check(len(api_calls(crecs)) == 6, "child API calls")
    ppid = re.search(r"ppid\W+(\d+)", info(mine[0]).stdout)
    ppid_parent = re.search(r"\bpid\W+(\d+)", info(parent).stdout)
    check(ppid and ppid_parent and ppid.group(1) == ppid_parent.group(1),
          "child header must name the parent pid")


def t_forkchain():
    """Forks while the shim's writer thread is busy: a chain of 30
    processes, each forking the next right after its first CUDA call, when
    its writer thread writes its first records (and allocates for them).
    Before the writer's fork handler, a child under GCC 12's ASan (whose
    allocator does not take its locks at fork) inherited an allocator lock
    held by the parent's writer thread and hung at its first allocation of
    that size. Each process waits for its child a bounded time (the
    program's "hung" line names the deepest hung one), the first at most
    25 s, so the test ends in about 30 s at most. Every process writes a
    complete trace: 2 launches, and 1 more after its child returned (all
    but the last)."""
    n = 30
    d = workdir()
    # its own process group, so that nothing of a hung chain outlives the
    # test; output to files, which a hung process left behind cannot hold open
    with open(os.path.join(d, "out"), "w+") as fo, open(os.path.join(d, "err"), "w+") as fe:
        p = subprocess.Popen([prog("e2e-prog-lifecycle"), "forkchain", str(n), "5", "0.3"],
                             cwd=d, env=env(), stdout=fo, stderr=fe, start_new_session=True)
        try:
            p.wait(timeout=25)
        except subprocess.TimeoutExpired:
            fe.write("the chain's first process did not end in 25 s\n")
        finally:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()
        fo.seek(0)
        fe.seek(0)
        out, err = fo.read(), fe.read()
    hung = [line for line in err.splitlines() if line.startswith("hung:")]
    check(p.returncode == 0 and f"chain {n}" in out,
          f"chain failed {p.returncode}: {hung[0] if hung else err.strip()[-400:]}")
    files = traces(d)
    check(len(files) == n, f"{n} traces expected, got {len(files)}")
    recs = [dump(f)[0] for f in files]
    kernels = sorted(len(by_kind(r, "kernel")) for r in recs)
    check(kernels == [2] + [3] * (n - 1), f"kernels per trace {kernels}")
    check(all(len(by_kind(r, "summary")) == 1 for r in recs), "a trace without its summary")


def t_forknocuda():
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "forknocuda"], d)
    check(p.returncode == 0, f"program failed: {p.stderr}")
    check(len(traces(d)) == 1, f"only the parent writes a trace: {traces(d)}")


def t_exit_codes():
    """exit, _exit and quick_exit (which ends through the C library's own
    _exit: before, the trace had no records and no summary) keep the exit
    status and complete the trace."""
    for mode, code in (("exit", 7), ("_exit", 9), ("quick_exit", 5)):
        d = workdir()
        p = run([prog("e2e-prog-lifecycle"), mode, str(code)], d)
        check(p.returncode == code, f"{mode}({code}) returned {p.returncode}")
        files = traces(d)
        check(len(files) == 1, f"{mode}: traces {files}")
        recs, _ = dump(files[0])
        check(len(by_kind(recs, "kernel")) == 4, f"{mode}: kernels lost")
        check(len(by_kind(recs, "summary")) == 1, f"{mode}: no summary")


def t_abort():
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "abort"], d)
    check(p.returncode == -signal.SIGABRT, f"abort gave {p.returncode}")
    files = traces(d)
    check(len(files) == 1, "abort: trace missing")
    recs, _ = dump(files[0])
    check(len(by_kind(recs, "api")) == 5, f"abort: {len(by_kind(recs, 'api'))} API records")


def t_sigkill():
    d = workdir()
    flush_ms = 100
    e = env({"GPUPHASE_FLUSH_MS": str(flush_ms)})
    pr = subprocess.Popen([prog("e2e-prog-lifecycle"), "sleep", "50"], cwd=d, env=e,
                          stdout=subprocess.PIPE, text=True)
    line = pr.stdout.readline()
    check(line.strip() == "ready", "program did not start")
    time.sleep(3 * flush_ms / 1000)  # three flush intervals after the work
    pr.kill()
    pr.wait()
    files = traces(d)
    check(len(files) == 1, "SIGKILL: trace missing")
    recs, p = dump(files[0])
    check(len(by_kind(recs, "kernel")) == 50, f"SIGKILL: {len(by_kind(recs, 'kernel'))} kernels")
    check(len(by_kind(recs, "api")) == 51, "SIGKILL: API records")
    check(not by_kind(recs, "summary"), "a killed process cannot have written a summary")


def t_ctypes():
    d = workdir()
    cudart = os.path.join(SIMDIR, "libcudart.so.13")
    p = run([sys.executable, os.path.join(os.path.dirname(__file__), "prog_ctypes.py"),
             cudart, "4", "5"], d)
    check(p.returncode == 5, f"os._exit(5) returned {p.returncode}: {p.stderr}")
    files = traces(d)
    check(len(files) == 1, f"traces {files}")
    recs, _ = dump(files[0])
    names = [c["fn"] for c in api_calls(recs)]
    check(names == ["cudaMalloc"] + ["cudaMemcpy"] * 4 + ["cudaDeviceSynchronize", "cudaFree"],
          f"calls {names}")
    check(len(by_kind(recs, "memcpy")) == 4, "copies")
    check(len(by_kind(recs, "summary")) == 1, "os._exit must leave a complete trace")


def t_cupti_busy():
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "exit", "3"], d, {"GPUSIM_CUPTI": "busy"})
    check(p.returncode == 3, f"exit code changed: {p.returncode}")
    lines = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
    check(len(lines) == 1 and "degraded" in lines[0], f"stderr: {p.stderr!r}")
    recs, _ = dump(traces(d)[0])
    states = by_kind(recs, "state")
    check(len(states) == 1 and states[0]["state"] == 1, "degraded state record")
    check(len(by_kind(recs, "api")) == 5 and not by_kind(recs, "kernel"), "host calls only")
    s = by_kind(recs, "summary")[0]
    check(s["flags"] & 1, "summary must carry the degraded flag")


def t_disable():
    """GPUPHASE_DISABLE: 1 (true, yes, on) records nothing; 0 (false, no,
    off) records; another value is ignored with one warning, and records."""
    for v, records, warns in (("1", False, False), ("TRUE", False, False), ("on", False, False),
                              ("0", True, False), ("false", True, False), ("no", True, False),
                              ("bogus", True, True), ("2", True, True)):
        d = workdir()
        p = run([prog("e2e-prog-basic")], d, {"GPUPHASE_DISABLE": v})
        check(p.returncode == 0 and bool(traces(d)) == records,
              f"GPUPHASE_DISABLE={v}: traces {traces(d)}")
        said = f"ignoring GPUPHASE_DISABLE={v}" in p.stderr
        check(said == warns, f"GPUPHASE_DISABLE={v}: stderr {p.stderr!r}")
    d = workdir()
    p = run([RUN, "run", "--", prog("e2e-prog-basic")], d, {"GPUPHASE_DISABLE": "1"},
            preload=False)
    check(p.returncode == 0 and "no trace written (GPUPHASE_DISABLE=1)" in p.stderr,
          f"gpuphase run, disabled: {p.stderr!r}")


def t_switches():
    """The on/off settings take the same words as GPUPHASE_DISABLE, in any
    case: GPUPHASE_CUPTI and GPUPHASE_NVML off (no device records, no
    counters), GPUPHASE_STACKS off (no frames) or on (its default mode),
    GPUPHASE_QUIET on (not even the warning for a value it ignores);
    another word is ignored with one warning naming it."""
    cases = (({"GPUPHASE_CUPTI": "Off", "GPUPHASE_NVML": "FALSE"}, 0, 0, None, ""),
             ({"GPUPHASE_CUPTI": "yes", "GPUPHASE_NVML": "On"}, 15, None, None, ""),
             ({"GPUPHASE_STACKS": "OFF"}, 15, None, 0, ""),
             ({"GPUPHASE_STACKS": "Yes"}, 15, None, -1, ""),
             ({"GPUPHASE_CUPTI": "maybe"}, 15, None, None,
              "ignoring GPUPHASE_CUPTI=maybe (expected 1 or 0)"),
             ({"GPUPHASE_QUIET": "TRUE", "GPUPHASE_CUPTI": "maybe"}, 15, None, None, None))
    for extra, kernels, samples, frames, said in cases:
        d = workdir()
        p = run([prog("e2e-prog-basic")], d, extra)
        check(p.returncode == 0, f"{extra}: returned {p.returncode}: {p.stderr}")
        recs, dp = dump(traces(d)[0])
        check(len(by_kind(recs, "kernel")) == kernels,
              f"{extra}: {len(by_kind(recs, 'kernel'))} kernels, want {kernels}")
        # (a frame record's own `kind` field hides its record kind in recs)
        nframes = sum(line.startswith("frame ") for line in dp.stdout.splitlines())
        if samples is not None:
            check(len(by_kind(recs, "sample")) == samples, f"{extra}: samples recorded")
        if frames == -1:
            check(nframes > 0, f"{extra}: no frames")
        elif frames is not None:
            check(nframes == frames, f"{extra}: {nframes} frames recorded")
        if said is None:
            check(p.stderr == "", f"{extra}: stderr {p.stderr!r}")
        elif said:
            check(p.stderr.count("ignoring") == 1 and said in p.stderr, f"{extra}: stderr {p.stderr!r}")
        else:
            check("ignoring" not in p.stderr, f"{extra}: stderr {p.stderr!r}")
    d = workdir()
    p = run([RUN, "run", "--", prog("e2e-prog-basic")], d, {"GPUPHASE_DISABLE": "Yes"},
            preload=False)
    check("no trace written (GPUPHASE_DISABLE=Yes)" in p.stderr, f"gpuphase run: {p.stderr!r}")
    # GPUPHASE_QUIET silences the launcher's own lines too, as -q does
    d = workdir()
    p = run([RUN, "run", "--", prog("e2e-prog-basic")], d, {"GPUPHASE_QUIET": "1"},
            preload=False)
    check(p.returncode == 0 and p.stderr == "" and len(traces(d)) == 1,
          f"gpuphase run, GPUPHASE_QUIET=1: {p.stderr!r}")


def t_run_tool():
    d = workdir()
    p = run([RUN, "run", "-o", "out-%p.gph", "--", prog("e2e-prog-lifecycle"), "exit", "7"], d,
            preload=False)
    check(p.returncode == 7, f"gpuphase run returned {p.returncode}")
    files = traces(d)
    check(len(files) == 1 and re.fullmatch(r"out-\d+\.gph", os.path.basename(files[0])),
          f"files {files}")
    check(f"trace written to {files[0]}" in p.stderr, f"stderr {p.stderr!r}")
    p = run([RUN, "run", "--", prog("e2e-prog-lifecycle"), "none"], d, preload=False)
    check(p.returncode == 0 and "no trace written" in p.stderr, f"no-CUDA run: {p.stderr!r}")
    check(len(traces(d)) == 1, "a process without CUDA must write nothing")
    p = run([RUN, "run", "--", "/nonexistent/program"], d, preload=False)
    check(p.returncode == 127 and "cannot run" in p.stderr, f"missing program: {p.returncode}")
    p = run([RUN, "run"], d, preload=False)
    check(p.returncode == 2, "usage error must exit 2")
    p = run([RUN, "run", "--", prog("e2e-prog-lifecycle"), "abort"], d, preload=False)
    check(p.returncode == -signal.SIGABRT, f"signal must pass through: {p.returncode}")


def t_run_lib_space():
    """A library whose path holds a space and a colon (a venv in "My
    Projects"): LD_PRELOAD splits its list there, so `gpuphase run`
    preloads it through a link in a private directory, removed at the end.
    Before, ld.so could not preload it, no trace was written, and the
    launcher exited 0."""
    d = workdir()
    odd = os.path.join(d, "my dir:x")
    os.makedirs(odd)
    lib = os.path.join(odd, "libgpuphase.so")
    shutil.copy(LIB, lib)
    tmp = os.path.join(d, "tmp")
    os.makedirs(tmp)
    p = run([RUN, "run", "-o", "out-%p.gph", "--", prog("e2e-prog-lifecycle"), "exit", "7"], d,
            extra={"GPUPHASE_LIB": lib, "TMPDIR": tmp}, preload=False)
    check(p.returncode == 7, f"exit {p.returncode}: {p.stderr!r}")
    check(len(traces(d)) == 1 and "preloaded" not in p.stderr, f"{traces(d)} {p.stderr!r}")
    check(os.listdir(tmp) == [], f"left in TMPDIR: {os.listdir(tmp)}")
    # the same path relative to the working directory: the link names the
    # library by its absolute path (it dangled)
    p = run([RUN, "run", "-o", "rel-%p.gph", "--", prog("e2e-prog-lifecycle"), "exit", "7"], d,
            extra={"GPUPHASE_LIB": os.path.join("my dir:x", "libgpuphase.so"), "TMPDIR": tmp},
            preload=False)
    check(p.returncode == 7 and "preloaded" not in p.stderr and
          glob.glob(os.path.join(d, "rel-*.gph")), f"relative: {p.returncode} {p.stderr!r}")


def t_run_ignored():
    """`nohup gpuphase run -- cmd`: SIGHUP (and SIGTERM) ignored when the
    launcher starts stay ignored in the program, as without the launcher
    (before, the program got them back at their default and died when the
    terminal closed); left at their default, the program has them at the
    default too."""
    def ignore_hup_term():
        default_dispositions()
        signal.signal(signal.SIGHUP, signal.SIG_IGN)
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
    cmd = [RUN, "run", "-q", "--", "sh", "-c", "grep SigIgn /proc/$$/status"]
    for pre, want in ((ignore_hup_term, True), (default_dispositions, False)):
        d = workdir()
        p = run(cmd, d, preload=False, preexec_fn=pre)
        check(p.returncode == 0, f"launcher returned {p.returncode}: {p.stderr}")
        mask = int(p.stdout.split()[1], 16)
        for sig in (signal.SIGHUP, signal.SIGTERM):
            got = bool(mask & (1 << (sig - 1)))
            check(got == want, f"{signal.Signals(sig).name} ignored in the program: {got}, want {want}")
    # SIGHUP sent to a launcher that ignores it: the program goes on
    d = workdir()
    pr = subprocess.Popen([RUN, "run", "-q", "--", "sh", "-c", "sleep 1; echo survived"], cwd=d,
                          env=env(preload=False), stdout=subprocess.PIPE, text=True,
                          preexec_fn=ignore_hup_term)
    time.sleep(0.3)
    pr.send_signal(signal.SIGHUP)
    out, _ = pr.communicate(timeout=30)
    check(pr.returncode == 0 and out.strip() == "survived", f"nohup'd run: {pr.returncode} {out!r}")


def t_run_signals():
    """`gpuphase run` passes on what people send a program, and ends as it
    would: each signal sent to the launcher's pid ends the program as it
    ends it sent to the program itself; a program killed by SIGKILL kills
    the launcher with SIGKILL (it returned 137); the launcher killed
    outright takes the program with it (it ran on, orphaned); an ignored
    SIGCHLD inherited keeps the exit status (it was 1: the kernel reaped
    the program); a reader of the launcher's lines gone leaves the status
    alone (it died of SIGPIPE)."""
    sigs = (signal.SIGINT, signal.SIGQUIT, signal.SIGTERM, signal.SIGHUP, signal.SIGUSR1,
            signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE, signal.SIGKILL)
    runs = []  # (signal, with the launcher, process, flag file), all at once
    for sig in sigs:
        for launcher in (False, True):
            d = workdir()
            flag = os.path.join(d, "ran-on")
            cmd = ([RUN, "run", "-q", "--"] if launcher else []) + \
                ["sh", "-c", f"sleep 1; echo x > {flag}"]
            runs.append((sig, launcher, subprocess.Popen(
                cmd, cwd=d, env=env(preload=False), stderr=subprocess.DEVNULL,
                preexec_fn=default_dispositions), flag))
    time.sleep(0.4)
    for sig, _, pr, _ in runs:
        os.kill(pr.pid, sig)
    got = {}
    for sig, launcher, pr, flag in runs:
        try:
            rc = pr.wait(timeout=20)
        except subprocess.TimeoutExpired:
            pr.kill()
            rc = "running 20 s on"
        got[sig, launcher] = rc
    time.sleep(1.1)
    for sig, launcher, _, flag in runs:
        got[sig, launcher] = (got[sig, launcher], os.path.exists(flag))
    for sig in sigs:
        name = signal.Signals(sig).name
        plain, gp = got[sig, False], got[sig, True]
        check(plain == (-sig, False), f"{name} without the launcher: {plain}")
        check(gp == plain, f"{name} to the launcher: returned {gp[0]}, the program "
              f"{'ran on' if gp[1] else 'ended'}; without it {plain[0]}")
    p = run([RUN, "run", "-q", "--", "sh", "-c", "kill -KILL $$"], workdir(), preload=False)
    check(p.returncode == -signal.SIGKILL, f"program killed by SIGKILL: launcher returned {p.returncode}")
    def ignore_chld():
        default_dispositions()
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)
    probe = ("import sys; print([l for l in open('/proc/self/status') "
             "if l.startswith('SigIgn')][0]); sys.exit(3)")  # sh resets SIGCHLD
    p = run([RUN, "run", "-q", "--", sys.executable, "-c", probe],
            workdir(), preload=False, preexec_fn=ignore_chld)
    mask = int(p.stdout.split()[1], 16) if p.stdout.split()[1:] else 0
    check(p.returncode == 3 and mask & (1 << (signal.SIGCHLD - 1)),
          f"SIGCHLD ignored: returned {p.returncode} {p.stderr!r}, program's SigIgn {mask:x}")
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run([RUN, "run", "--", "sh", "-c", "exit 3"], cwd=workdir(),
                       env=env(preload=False), stderr=w, preexec_fn=default_dispositions,
                       timeout=60)
    os.close(w)
    check(p.returncode == 3, f"standard error a pipe without reader: returned {p.returncode}")


def t_run_stop():
    """In a terminal's foreground (an interactive shell on a pseudo-terminal):
    a program under `gpuphase run` that stops itself is a stopped job, as
    without the launcher (the shell hung), and `fg` continues it."""
    import pty
    import select

    if not shutil.which("bash") or not os.path.exists("/dev/ptmx"):
        print("skipped: no bash or no pseudo-terminals here")
        sys.exit(77)

    def session(cmdline):
        pid, fd = pty.fork()
        if pid == 0:
            os.environ.update(env(preload=False))
            os.execvp("bash", ["bash", "--norc", "--noprofile", "-i"])

        def until(what, secs):
            out, end = b"", time.time() + secs
            while time.time() < end and what not in out:
                r, _, _ = select.select([fd], [], [], 0.1)
                if r:
                    try:
                        out += os.read(fd, 4096)
                    except OSError:
                        break
            return out.decode(errors="replace")
        try:
            os.write(fd, b"PS1='PROMPT> '; echo ready\n")
            until(b"ready", 10)
            os.write(fd, (cmdline + "\n").encode())
            stop = until(b"Stopped", 20)
            os.write(fd, b"fg\n")
            cont = until(b"resumed", 20)
            return stop, cont
        finally:
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    prog_ = "sh -c 'kill -TSTP $$; echo resumed'"
    for cmdline in (prog_, f"{RUN} run -q -- {prog_}"):
        stop, cont = session(cmdline)
        check("Stopped" in stop, f"{cmdline}: no stopped job: {stop!r}")
        check("resumed" in cont, f"{cmdline}: fg did not continue it: {cont!r}")


def t_exec():
    """exec completes the current image's trace; the new image (same pid)
    keeps the preload and the output pattern although its environment was
    replaced, and writes a second file instead of overwriting."""
    exec_pair("exec", 3)


def exec_pair(mode, kernels_before):
    """Runs prog_lifecycle MODE, which launches kernels_before kernels,
    replaces its image, and launches 2 more: two traces, the first complete
    (its summary), the second of the new image."""
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), mode], d, {"GPUPHASE_OUTPUT": "t-%p.gph"})
    check(p.returncode == 0, f"{mode} program returned {p.returncode}: {p.stderr}")
    files = traces(d)
    check(len(files) == 2, f"{mode}: two traces expected (before and after exec): {files}")
    first = [f for f in files if not f.endswith(".1.gph")]
    second = [f for f in files if f.endswith(".1.gph")]
    check(len(first) == 1 and len(second) == 1, f"{mode}: names {files}")
    if len(first) != 1 or len(second) != 1:
        return
    a, _ = dump(first[0])
    b, _ = dump(second[0])
    check(len(by_kind(a, "kernel")) == kernels_before and len(by_kind(a, "summary")) == 1,
          f"{mode}: the pre-exec trace must be complete "
          f"({len(by_kind(a, 'kernel'))} kernels, {len(by_kind(a, 'summary'))} summaries)")
    i = info(first[0])
    check(re.search(r"^status:\s+complete$", i.stdout, re.M), f"{mode}: info {i.stdout!r}")
    check(len(by_kind(b, "kernel")) == 2, f"{mode}: the post-exec image must be profiled")


def t_exec_fd():
    """fexecve and execveat complete the current image's trace as execve
    does (before, the first file had no records and no summary), and the
    new image keeps the preload and the settings."""
    for mode in ("fexecve", "execveat"):
        exec_pair(mode, 5)


def t_spawn():
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "spawn"], d, {"GPUPHASE_OUTPUT": "s-%p.gph"})
    check(p.returncode == 0, f"spawn program returned {p.returncode}: {p.stderr}")
    child = int(re.search(r"child (\d+)", p.stdout).group(1))
    files = traces(d)
    check(len(files) == 2, f"two traces expected: {files}")
    mine = [f for f in files if os.path.basename(f) == f"s-{child}.gph"]
    check(len(mine) == 1, f"spawned child's trace missing: {files}")
    b, _ = dump(mine[0])
    check(len(by_kind(b, "kernel")) == 2, "the spawned program must be profiled")


def t_nvtx():
    """NVTX ranges from the nvtx3 headers arrive through the injection
    library as RANGE records, with domains and registered strings."""
    d = workdir()
    p = run([prog("e2e-prog-nvtx")], d, {"NVTX_INJECTION64_PATH": LIB})
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    # NVTX's documented return values: push gives the level it opened,
    # pop the level it closed, an unbalanced pop a negative number
    # (a stack per domain: A and DOM_B each open level 0 of their own)
    check(p.stdout.split() == ["0", "1", "1", "0", "-1", "0", "0", "0", "0"],
          f"NVTX returns {p.stdout!r}")
    recs, _ = dump(traces(d)[0])
    ranges = [(r["op"], r.get("name", ""), r.get("domain", ""))
              for r in sorted(by_kind(recs, "range"), key=lambda r: r["start"])]
    PUSH, POP, START, END = 1, 2, 3, 4
    # the unbalanced pop is recorded too: the report counts it
    check([r[0] for r in ranges] == [PUSH, PUSH, POP, POP, POP, PUSH, POP,
                                     PUSH, PUSH, POP, POP, START, END],
          f"range ops {ranges}")
    check(ranges[0][1] == "outer" and ranges[1][1].startswith("inn"), f"names {ranges}")
    check(ranges[5][1:] == ("registered step", "mydomain") and ranges[6][2] == "mydomain",
          f"domain range {ranges}")
    check(ranges[11][1] == "crossing", f"start/end range {ranges}")
    j = json.loads(subprocess.run([REPORT, "--format", "json", traces(d)[0]],
                                  capture_output=True, text=True, timeout=60,
                                  env=env(preload=False)).stdout)
    ph = {x["name"]: x for x in j["phases"]}
    k = [x for x in by_kind(recs, "kernel")]
    check(j["diagnostics"]["unmatched_range_ends"] == 1,
          f"unmatched ends {j['diagnostics']}")
    # the default domain's pop closed A, not DOM_B: the last kernel ran in
    # DOM_B only
    last = max(x["end"] - x["start"] for x in k[-1:])
    check(ph["DOM_B"]["total_ns"] >= last and ph["A"]["total_ns"] < last,
          f"A {ph['A']['total_ns']} ns, DOM_B {ph['DOM_B']['total_ns']} ns, kernel {last}")
    ids = [r["id"] for r in by_kind(recs, "range") if r["op"] in (3, 4)]
    check(len(ids) == 2 and ids[0] == ids[1] and ids[0] != 0, f"start/end ids {ids}")
    threads = {r["thread"] for r in by_kind(recs, "range") if r["op"] in (3, 4)}
    check(len(threads) == 2, "start and end were on different threads")


def t_othertool():
    """A tool subscribing to CUPTI inside our process (cuptiSubscribe, or
    cuptiSubscribe_v2 as CUPTI 13 recommends) gets it; we keep the
    host-side record, mark the interval degraded and come back when the
    tool leaves; neither loses records."""
    for mode in ([], ["v2"]):
        othertool_once(mode)


def othertool_once(mode):
    d = workdir()
    p = run([prog("e2e-prog-othertool")] + mode, d)
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    check(p.stdout.strip() == "4", f"the other tool got {p.stdout.strip()} of its 4 kernels")
    recs, _ = dump(traces(d)[0])
    names = [k["name"] for k in sorted(by_kind(recs, "kernel"), key=lambda k: k["start"])]
    check(names == ["k_before"] * 3 + ["k_after"] * 2, f"our kernel records {names}")
    launches = [c for c in api_calls(recs) if c["fn"] == "cudaLaunchKernel"]
    check(len(launches) == 9, f"host-side launches {len(launches)}")
    states = sorted(by_kind(recs, "state"), key=lambda r: r["start"])
    check([s["state"] for s in states] == [1, 0], f"degraded interval {states}")
    during = [c for c in launches if states[0]["start"] <= c["start"] <= states[1]["start"]]
    check(len(during) == 4, "the 4 launches of the other tool's interval are inside it")


def t_othertool_activity():
    """A tool that uses only CUPTI's activity API (no cuptiSubscribe: its
    buffer callbacks registered, kernel records enabled, flushed, disabled)
    gets its own records and only those: we step aside when it registers,
    and come back when it has disabled what it enabled, and again for each
    of its cycles (it enables again without registering again). Before, its
    completion callback was handed our buffers and freed them (the program
    died of SIGSEGV), or got our kernel records (7 of its 4) while we kept
    none. A tool that enabled its records before the first CUDA call holds
    CUPTI from the start: the trace is degraded from there, and stays so
    (CUPTI takes no clock of ours once activity is enabled)."""
    for cycles in (1, 3):
        d = workdir()
        p = run([prog("e2e-prog-othertool"), "activity", str(cycles)], d)
        check(p.returncode == 0, f"{cycles} cycles: exit {p.returncode}: {p.stderr}")
        check(p.stdout.strip() == str(4 * cycles),
              f"the other tool got {p.stdout.strip()} of its {4 * cycles} kernels")
        recs, _ = dump(traces(d)[0])
        names = [k["name"] for k in sorted(by_kind(recs, "kernel"), key=lambda k: k["start"])]
        check(names == ["k_before"] * 3 + ["k_after"] * 2 * cycles,
              f"{cycles} cycles: our kernel records {names}")
        launches = [c for c in api_calls(recs) if c["fn"] == "cudaLaunchKernel"]
        check(len(launches) == 3 + 6 * cycles, f"host-side launches {len(launches)}")
        states = sorted(by_kind(recs, "state"), key=lambda r: r["start"])
        check([s["state"] for s in states] == [1, 0] * cycles, f"degraded intervals {states}")
        for i in range(cycles):
            during = [c for c in launches
                      if states[2 * i]["start"] <= c["start"] <= states[2 * i + 1]["start"]]
            check(len(during) == 4, f"cycle {i}: {len(during)} launches in the tool's interval")
    d = workdir()
    p = run([prog("e2e-prog-othertool"), "early"], d)
    check(p.returncode == 0 and p.stdout.strip() == "4",
          f"tool enabled first: exit {p.returncode}, it got {p.stdout.strip()!r}: {p.stderr}")
    check("held by another tool" in p.stderr, f"stderr {p.stderr!r}")
    recs, _ = dump(traces(d)[0])
    check(not by_kind(recs, "kernel"), "kernel records with the tool's clock")
    states = by_kind(recs, "state")
    check([s["state"] for s in states] == [1], f"degraded {states}")
    launches = [c for c in api_calls(recs) if c["fn"] == "cudaLaunchKernel"]
    check(len(launches) == 6, f"host-side launches {len(launches)}")
    # CUPTI torn down by the tool (cuptiFinalize), after its cycle or while
    # we hold CUPTI: we attach again and record on (before, the kernels
    # after it were lost without a word); a kind of ours that the tool
    # disables without having enabled it stays on for us
    # a tool that registers its callbacks and enables nothing takes nothing
    # (before, we stepped aside for good); one that enables its kind in two
    # contexts and disables it in one keeps it (before, we came back and
    # took its other context's records); one whose completion callback
    # calls CUPTI again while we flush its last buffers (before, a deadlock)
    for mode, after, states_want in (("finalize", 4, [1, 0]), ("finalize_held", 2, []),
                                     ("disable_ours", 2, []), ("register_only", 5, []),
                                     ("contexts", 2, [1, 0]), ("reenter", 2, [1, 0])):
        d = workdir()
        p = run([prog("e2e-prog-othertool"), mode], d)
        tool_want = "4" if mode in ("finalize", "contexts", "reenter") else "0"
        check(p.returncode == 0 and p.stdout.strip() == tool_want,
              f"{mode}: exit {p.returncode}, the tool got {p.stdout.strip()!r}: {p.stderr}")
        recs, _ = dump(traces(d)[0])
        names = [k["name"] for k in sorted(by_kind(recs, "kernel"), key=lambda k: k["start"])]
        check(names == ["k_before"] * 3 + ["k_after"] * after, f"{mode}: our kernels {names}")
        states = sorted(by_kind(recs, "state"), key=lambda r: r["start"])
        check([s["state"] for s in states] == states_want, f"{mode}: states {states}")


def t_cupti_loaded():
    """A CUPTI the program loaded itself, from elsewhere than beside the
    runtime, is the one gpuphase uses: one libcupti in the process, and
    every kernel recorded through it."""
    d = workdir()
    other = os.path.join(d, "other")
    os.mkdir(other)
    copy = os.path.join(other, "libcupti.so.13")
    shutil.copy(os.path.join(SIMDIR, "libcupti.so.13"), copy)
    p = run([prog("e2e-prog-cuptifirst"), copy], d)
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    check(p.stdout.strip() == "cupti_objects=1", f"CUPTI objects: {p.stdout.strip()}")
    recs, _ = dump(traces(d)[0])
    check(not by_kind(recs, "state"), "trace degraded")
    ks = by_kind(recs, "kernel")
    check(len(ks) == 5 and all(k["name"] == "k_first" for k in ks), f"kernels {ks}")


def t_driver_cupti():
    """A program that uses only the driver API (no libcudart to say where
    CUDA lives) gets the CUPTI the dynamic loader would load for it, not
    the toolkit's (which, beside the simulated driver, cannot subscribe:
    the trace would be degraded): from LD_LIBRARY_PATH, and from the
    program's own RUNPATH ($ORIGIN/drvlib, in a copy of the program with
    the simulated libraries there and no LD_LIBRARY_PATH at all). Four
    1 MiB host-to-device copies are recorded through it."""
    n = 4
    for how in ("LD_LIBRARY_PATH", "RUNPATH"):
        d = workdir()
        exe, extra = prog("e2e-prog-driver"), {}
        if how == "RUNPATH":
            os.mkdir(os.path.join(d, "drvlib"))
            for lib in ("libcuda.so.1", "libcupti.so.13"):
                shutil.copy(os.path.join(SIMDIR, lib), os.path.join(d, "drvlib", lib))
            exe = shutil.copy(exe, os.path.join(d, "e2e-prog-driver"))
            extra = {"LD_LIBRARY_PATH": None}
        p = run([exe, str(n)], d, extra)
        check(p.returncode == 0 and p.stdout.strip() == f"copies={n}",
              f"{how}: program failed {p.returncode}: {p.stdout!r} {p.stderr}")
        check("CUPTI" not in p.stderr, f"{how}: {p.stderr.strip()}")
        recs, _ = dump(traces(d)[0])
        check(not by_kind(recs, "state"), f"{how}: trace degraded")
        cps = by_kind(recs, "memcpy")
        check(len(cps) == n and all(c["bytes"] == 1 << 20 for c in cps),
              f"{how}: copies {cps}")


def t_ctx_device():
    """A thread whose context comes from cuCtxCreate (and, the older way,
    cuCtxCreate_v2) on device 1 of two: its allocation, its four copies,
    its cuCtxSynchronize and the cuCtxDestroy are recorded on device 1, the
    copies ran there, and device 0, which did nothing, is not in the
    report."""
    n = 4
    for how in ("ctx", "ctx2"):
        d = workdir()
        p = run([prog("e2e-prog-driver"), str(n), how, "1"], d, {"GPUSIM_DEVICES": "2"})
        check(p.returncode == 0 and p.stdout.strip() == f"copies={n}",
              f"{how}: program failed {p.returncode}: {p.stdout!r} {p.stderr}")
        recs, _ = dump(traces(d)[0])
        calls = [(a["fn"], a["device"]) for a in api_calls(recs)]
        after = [c for c in calls if c[0].startswith(("cuMem", "cuCtxSynchronize", "cuCtxDestroy"))]
        check(len(after) == n + 4 and all(dev == 1 for _, dev in after),
              f"{how}: calls after cuCtxCreate {after}")
        cps = by_kind(recs, "memcpy")
        check(len(cps) == n and all(c["device"] == 1 for c in cps), f"{how}: copies {cps}")
        j = json.loads(subprocess.run([REPORT, "--format", "json", traces(d)[0]],
                                      capture_output=True, text=True, timeout=60,
                                      env=env(preload=False)).stdout)
        # device 0, which did nothing, is not a GPU of the report (cuInit,
        # made before any context, is about no device)
        check([dev["id"] for dev in j["devices"]] == [1],
              f"{how}: report devices {[dev['id'] for dev in j['devices']]}")
        check([a["device"] for a in api_calls(recs) if a["fn"] == "cuInit"] == [-1],
              f"{how}: cuInit records")
    # a context destroyed while another device's is current: the call is
    # about the device of the context destroyed
    d = workdir()
    p = run([prog("e2e-prog-driver"), "2", "ctxpop", "0"], d, {"GPUSIM_DEVICES": "2"})
    check(p.returncode == 0, f"ctxpop: {p.returncode} {p.stderr}")
    recs, _ = dump(traces(d)[0])
    dest = [a["device"] for a in api_calls(recs) if a["fn"].startswith("cuCtxDestroy")]
    check(dest == [0], f"cuCtxDestroy on devices {dest}")
    # device 1's primary context pushed onto an empty stack and popped: no
    # context is current, and the thread's calls are on the runtime's
    # device again (cudaSetDevice's, 0 here), which the runtime's next
    # call binds; not on device 1, whose context is gone from the thread
    d = workdir()
    p = run([prog("e2e-prog-driver"), "0", "popnone", "1"], d, {"GPUSIM_DEVICES": "2"})
    check(p.returncode == 0, f"popnone: {p.returncode} {p.stderr}")
    recs, _ = dump(traces(d)[0])
    ctx = [(a["fn"], a["device"]) for a in api_calls(recs) if a["fn"].startswith("cuCtx")]
    check(ctx == [("cuCtxPushCurrent_v2", 1), ("cuCtxPopCurrent_v2", 0)],
          f"popnone: context calls {ctx}")


def t_driver_managed():
    """The driver's stream-ordered calls that are not kernels or copies are
    recorded, like their runtime forms: cuMemPrefetchAsync_v2 (with its
    bytes, stream and pointer, and linked by its correlation id to the one
    1 MiB MANAGED copy it made), cuStreamAttachMemAsync and cuGraphUpload
    (prog_driver.c "managed")."""
    d = workdir()
    p = run([prog("e2e-prog-driver"), "1", "managed"], d)
    check(p.returncode == 0, f"managed: {p.returncode} {p.stderr}")
    recs, _ = dump(traces(d)[0])
    calls = api_calls(recs)
    by_fn = {}
    for a in calls:
        by_fn.setdefault(a["fn"], []).append(a)
    for fn in ("cuMemPrefetchAsync_v2", "cuStreamAttachMemAsync", "cuGraphUpload"):
        check(len(by_fn.get(fn, [])) == 1, f"{fn}: {len(by_fn.get(fn, []))} records")
    pf = by_fn["cuMemPrefetchAsync_v2"][0]
    att = by_fn["cuStreamAttachMemAsync"][0]
    check(pf["bytes"] == 1 << 20 and pf["stream"] != 0 and pf["ptr"] != 0
          and att["stream"] == pf["stream"] and att["ptr"] == pf["ptr"],
          f"prefetch {pf}, attach {att}")
    managed = [c for c in by_kind(recs, "memcpy") if c["src_mem"] == 4 and c["dst_mem"] == 4]
    check(len(managed) == 1 and managed[0]["bytes"] == 1 << 20
          and managed[0]["corr"] == pf["corr"] and pf["corr"] != 0,
          f"managed copies {managed}, prefetch corr {pf['corr']}")


def t_thread_names():
    """Names are taken in the thread: 16 threads named cb-0..cb-15 that exit
    right after one call keep their names (read later from /proc they were
    gone); a thread renamed by prctl and then by pthread_setname_np from
    another thread is announced again after each rename (it pauses 200 ms
    between them, the writer drains every 10 ms): w-first, w-second,
    w-third."""
    d = workdir()
    p = run([prog("e2e-prog-names")], d, {"GPUPHASE_FLUSH_MS": "10"})
    check(p.returncode == 0 and p.stdout.strip() == "ok", f"program: {p.stdout} {p.stderr}")
    recs, _ = dump(traces(d)[0])
    names = {}
    for r in by_kind(recs, "thread"):
        names.setdefault(r["thread"], []).append(r["name"])
    got = sorted(n[-1] for n in names.values() if n[-1].startswith("cb-"))
    check(got == sorted(f"cb-{i}" for i in range(16)), f"short-lived threads named {got}")
    w = [n for n in names.values() if any(x.startswith("w-") for x in n)]
    check(len(w) == 1 and w[0] == ["w-first", "w-second", "w-third"],
          f"renamed thread announced as {w}")


def t_abi12():
    """CUDA 12.8's batch copies have a failIdx before the stream; CUDA 13's
    do not, under the same names. Against a CUDA 12 runtime (a stand-in
    libcudart.so.12), the wrapper passes every argument on unchanged, the
    callee's failIdx comes back, and the record has the right stream and
    bytes (1000 + 24). cudaMemPrefetchAsync changed the same way (a
    location and flags before the stream): called the CUDA 12 way through
    a pointer from dlsym, its record has stream 0x5353 and 4096 bytes."""
    d = workdir()
    p = run([os.path.join(PROGDIR, "abi12", "e2e-prog-abi12")], d,
            extra={"GPUPHASE_CUPTI": "0", "GPUPHASE_QUIET": "1"})
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    check(p.stdout.splitlines() == ["batch ok rc=0 fail=7", "batch3d ok rc=0 fail=3",
                                    "prefetch ok rc=0"],
          f"callee saw {p.stdout!r}")
    recs, _ = dump(traces(d)[0])
    calls = {c["fn"]: c for c in api_calls(recs)}
    b = calls.get("cudaMemcpyBatchAsync")
    check(b and b["stream"] == 0x5151 and b["bytes"] == 1024 and b["ret"] == 0,
          f"batch record {b}")
    b3 = calls.get("cudaMemcpy3DBatchAsync")
    check(b3 and b3["stream"] == 0x5252 and b3["bytes"] == 0, f"3D batch record {b3}")
    pf = calls.get("cudaMemPrefetchAsync")
    check(pf and pf["stream"] == 0x5353 and pf["bytes"] == 4096 and pf["ret"] == 0,
          f"prefetch record {pf}")


def t_output():
    """GPUPHASE_OUTPUT: %h host, %r rank (RANK, else SLURM_PROCID, ...),
    %q{VAR} a variable, %% a percent sign, %p the pid; an existing file is
    never overwritten (.1, .2 before .gph); the header has the rank; `info`
    shows a command line's control characters as '?' (no escape sequence
    reaches the terminal)."""
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "exit", "0", "\n\x1b[31mFAKE\x07"], d)
    check(p.returncode == 0, f"program failed: {p.stderr}")
    i = info(traces(d)[0]).stdout
    cmd = [l for l in i.splitlines() if l.startswith("command:")]
    check(len(cmd) == 1 and cmd[0].endswith("exit 0 ??[31mFAKE?") and
          "\x1b" not in i and "\x07" not in i, f"info: {i!r}")
    d = workdir()
    host = socket.gethostname()
    p = run([prog("e2e-prog-basic")], d, {"GPUPHASE_OUTPUT": "o-%h-r%r-%q{JOBNAME}-%%-%p.gph",
                                          "RANK": "3", "JOBNAME": "train"})
    check(p.returncode == 0, f"program failed: {p.stderr}")
    names = [os.path.basename(f) for f in traces(d)]
    want = re.compile(r"^o-" + re.escape(host) + r"-r3-train-%-(\d+)\.gph$")
    check(len(names) == 1 and want.match(names[0]), f"trace names {names}")
    i = info(traces(d)[0])
    check(re.search(r"rank:\s+3\b", i.stdout), f"rank in the header: {i.stdout}")
    e = {"GPUPHASE_OUTPUT": "fixed.gph", "RANK": None, "SLURM_PROCID": "5"}
    for _ in range(3):
        p = run([prog("e2e-prog-basic")], d, e)
        check(p.returncode == 0, f"program failed: {p.stderr}")
    got = sorted(n for n in os.listdir(d) if n.startswith("fixed"))
    check(got == ["fixed.1.gph", "fixed.2.gph", "fixed.gph"], f"repeated runs wrote {got}")
    i = info(os.path.join(d, "fixed.gph"))
    check(re.search(r"rank:\s+5\b", i.stdout), f"rank from SLURM_PROCID: {i.stdout}")
    # a directory (existing, or any path ending in '/') gets the default
    # name inside it; before, an existing one became "DIR.1"
    sub = os.path.join(d, "traces")
    os.mkdir(sub)
    for pattern in (sub, sub + "/"):
        p = run([prog("e2e-prog-basic")], d, {"GPUPHASE_OUTPUT": pattern})
        check(p.returncode == 0, f"program failed: {p.stderr}")
    names = sorted(os.listdir(sub))
    want = re.compile(r"^gpuphase-" + re.escape(host) + r"-(\d+)\.gph$")
    check(len(names) == 2 and all(want.match(n) for n in names), f"in the directory: {names}")
    check(not [n for n in os.listdir(d) if n.startswith("traces.")],
          f"beside it: {sorted(os.listdir(d))}")
    p = run([prog("e2e-prog-basic")], d, {"GPUPHASE_OUTPUT": os.path.join(d, "none") + "/"})
    check(p.returncode == 0 and "cannot create trace file" in p.stderr and
          "none/gpuphase-" in p.stderr, f"a missing directory: {p.returncode} {p.stderr!r}")


def t_lost():
    """A burst of 100000 launches into a 64 KiB ring (1024 events) while the
    writer is starved (prog_scenarios.c "burst": the writer thread moved onto
    the launching thread's CPU at SCHED_IDLE, so it runs only when that
    thread sleeps, in the final synchronisation): the ring fills within the
    first thousand calls and what does not fit must be counted, never waited
    for. Drained a few rings' worth at most, the writer leaves most calls
    lost: losses are required. Every call is either recorded or counted
    lost (against a run of the same calls whose 64 MiB ring holds them all,
    the writer not starved), kernels likewise, and the summary, the LOST
    records and the report agree on the number."""
    n = 100000
    counts = {}
    for kb, mode in (("65536", "launch"), ("64", "burst")):
        d = workdir()
        # no launch queue: a launch that waits for the device lets the
        # writer run, and the burst would not starve it
        p = run([prog("e2e-prog-scenarios"), mode, str(n)], d,
                {"GPUPHASE_BUFFER_KB": kb, "MALLOC_PERTURB_": None,
                 "GPUSIM_LAUNCH_QUEUE": "0"}, timeout=100)
        check(p.returncode == 0, f"program failed with a {kb} KiB ring: {p.stderr}")
        if mode == "burst":
            starved = [ln for ln in p.stdout.splitlines() if ln.startswith("starved ")]
            check(starved and int(starved[0].split()[1]) >= 1,
                  f"the writer thread was not starved: {p.stdout!r}")
        recs, _ = dump(traces(d)[0])
        lost = {0: 0, 1: 0}
        for r in by_kind(recs, "lost"):
            lost[r["source"]] = lost.get(r["source"], 0) + r["count"]
        summ = by_kind(recs, "summary")
        check(summ and summ[0]["lost"] == lost[0] + lost[1],
              f"{kb} KiB: summary {summ} vs LOST records {lost}")
        counts[kb] = (len(by_kind(recs, "api")), lost, len(by_kind(recs, "kernel")))
        if kb == "64":
            check(lost[0] > 0, f"nothing counted lost in a 64 KiB ring with the writer "
                  f"starved ({len(by_kind(recs, 'api'))} calls recorded)")
            j = json.loads(subprocess.run([REPORT, "--format", "json", traces(d)[0]],
                                          capture_output=True, text=True,
                                          env=env(preload=False)).stdout)
            check(j["lost_events"] == summ[0]["lost"], "report's lost_events")
            check(any("lost" in x for x in j["notes"]), f"no note of the loss: {j['notes']}")
    calls, lost_big, kernels_big = counts["65536"]
    check(lost_big == {0: 0, 1: 0} and kernels_big == n, f"64 MiB ring lost {lost_big}")
    check(calls > n, f"{calls} calls recorded in the 64 MiB ring, {n} launches made")
    api, lost, kernels = counts["64"]
    print(f"64 KiB ring, writer starved: {api} of {calls} calls recorded, "
          f"{lost[0]} counted lost")
    check(lost[0] >= calls // 2,
          f"{lost[0]} of {calls} calls counted lost with the writer starved; want half or more")
    check(api + lost[0] == calls, f"{api} recorded + {lost[0]} lost != {calls} calls")
    check(kernels + lost[1] == n, f"{kernels} kernels + {lost[1]} lost != {n}")


def t_start_race():
    """8 threads leave a barrier together and make the process's first CUDA
    calls, 50 launches each (prog_harden.c "startrace"): the calls of the
    others while the first starts recording (CUPTI's initialisation) are
    not waited for, but made unrecorded and counted lost (LOST source 3),
    so that every launch is recorded or counted, the summary and `info`
    say so, and no call the program did not make is recorded (the driver
    calls an unrecorded launch makes, once recording runs)."""
    n, racers = 50, 8
    seen_lost = 0
    for _ in range(4):
        d = workdir()
        p = run([prog("e2e-prog-harden"), "startrace", str(n)], d)
        check(p.returncode == 0 and f"launches={n * racers}" in p.stdout,
              f"program: {p.returncode} {p.stdout!r} {p.stderr!r}")
        recs, _ = dump(traces(d)[0])
        calls = api_calls(recs)
        fns = {c["fn"] for c in calls}
        check(fns <= {"cudaLaunchKernel", "cudaDeviceSynchronize"},
              f"calls the program did not make recorded: {sorted(fns)}")
        launches = sum(1 for c in calls if c["fn"] == "cudaLaunchKernel")
        lost = sum(r["count"] for r in by_kind(recs, "lost"))
        check(all(r["source"] == 3 for r in by_kind(recs, "lost")),
              f"LOST records: {by_kind(recs, 'lost')}")
        syncs = len(calls) - launches
        check(syncs <= 1 and launches + syncs + lost == n * racers + 1,
              f"{launches} launches recorded + {lost} lost != {n * racers} made "
              f"(+{syncs} of 1 synchronise)")
        summ = by_kind(recs, "summary")
        check(summ and summ[0]["lost"] == lost, f"summary {summ} vs LOST {lost}")
        inf = info(traces(d)[0]).stdout
        check(re.search(r"lost events:\s+%d in LOST records" % lost, inf),
              f"info: {inf}")
        seen_lost += lost
    print(f"{seen_lost} calls counted lost while recording started, 4 runs")


def t_threads():
    """Two waves of 8 threads, 2000 launches each on its own stream, the
    second wave reusing the first's released rings: every call recorded once
    on its own thread (a reused ring gets a new thread index), every kernel
    linked to its launch and on its thread's stream, nothing lost."""
    threads, launches = 16, 2000
    d = workdir()
    p = run([prog("e2e-prog-threads")], d, {"GPUPHASE_FLUSH_MS": "10"}, timeout=100)
    check(p.returncode == 0 and p.stdout.strip() == "ok", f"program: {p.stdout} {p.stderr}")
    recs, _ = dump(traces(d)[0])
    check(by_kind(recs, "summary")[0]["lost"] == 0, "events lost")
    calls = api_calls(recs)
    per = {}
    for c in calls:
        per.setdefault(c["thread"], []).append(c["fn"])
    workers = {t: fns for t, fns in per.items() if "cudaLaunchKernel" in fns}
    check(len(workers) == threads, f"{len(workers)} threads launched, want {threads}")
    for t, fns in workers.items():
        check(fns.count("cudaLaunchKernel") == launches and
              fns.count("cudaStreamSynchronize") == 1, f"thread {t}: {len(fns)} calls")
    check(len({r["thread"] for r in by_kind(recs, "thread")}) >= threads,
          "thread records")
    launch_of = {c["corr"]: c for c in calls if c["fn"] == "cudaLaunchKernel"}
    check(len(launch_of) == threads * launches, "launch correlation ids not unique")
    ks = by_kind(recs, "kernel")
    check(len(ks) == threads * launches, f"{len(ks)} kernels")
    streams = {}
    for k in ks:
        c = launch_of.get(k["corr"])
        check(c is not None, f"kernel corr {k['corr']} has no launch")
        if c:
            streams.setdefault(c["thread"], set()).add(k["stream"])
    check(all(len(s) == 1 for s in streams.values()) and
          len({next(iter(s)) for s in streams.values()}) == threads,
          "each thread's kernels on its own stream")


def t_errno():
    """Each call is made with a distinctive errno (prog_lifecycle.c): the
    first (the shim's slow path: it starts the profiler, and CUPTI when on)
    and later ones (the fast path) leave it as it was; a failing
    cudaMallocHost whose calloc sets ENOMEM passes that on, and a call made
    with errno 0 leaves 0. Without the shim the program prints the same,
    so these are the simulated runtime's own effects."""
    want = ["first 0 4201", "launch 0 4202", "sync 0 4203",
            "malloc 2 4204",  # cudaErrorMemoryAllocation; errno untouched
            f"mallochost 2 {errno.ENOMEM}", "free 0 0"]
    # a sanitizer's calloc must fail as glibc's does (NULL and ENOMEM)
    asan = ":".join(filter(None, [os.environ.get("ASAN_OPTIONS"),
                                  "allocator_may_return_null=1"]))
    plain = run([prog("e2e-prog-lifecycle"), "errno"], workdir(), {"ASAN_OPTIONS": asan},
                preload=False)
    check(plain.returncode == 0 and plain.stdout.splitlines() == want,
          f"without the shim: {plain.stdout!r} ({plain.returncode}), want {want}")
    for cupti in ("1", "0"):
        # Calls that fail inside the shim's start set errno there: the
        # trace's name is taken (EEXIST, then t.1.gph), the manifest is
        # missing (ENOENT). None of that may reach the program.
        d = workdir()
        open(os.path.join(d, "t.gph"), "w").close()
        p = run([prog("e2e-prog-lifecycle"), "errno"], d,
                {"ASAN_OPTIONS": asan, "GPUPHASE_CUPTI": cupti,
                 "GPUPHASE_OUTPUT": os.path.join(d, "t.gph"),
                 "GPUPHASE_MANIFEST": os.path.join(d, "no", "manifest")})
        check(p.returncode == 0 and p.stdout.splitlines() == want,
              f"GPUPHASE_CUPTI={cupti}: {p.stdout!r} ({p.returncode}), want {want}")
        files = traces(d)
        check(files == [os.path.join(d, n) for n in ("t.1.gph", "t.gph")],
              f"GPUPHASE_CUPTI={cupti}: traces {files}")
        recs, _ = dump(files[0])
        rets = {c["fn"]: c["ret"] for c in api_calls(recs)}
        check(rets.get("cudaLaunchKernel") == 0 and rets.get("cudaMallocHost") == 2,
              f"GPUPHASE_CUPTI={cupti}: calls not recorded as made: {rets}")


def t_items():
    """gpuphase_step_items, 3 calls per step of 5 (prog_scenarios.c
    "items"): one ITEMS record per call, in call order, with its count, on
    the calling thread and inside its step's range; a call before the first
    CUDA call is not recorded; without the profiler the stub returns 1."""
    steps = 5
    want = [c for i in range(steps) for c in (i + 1, 100, 1000 * (i + 1))]
    d = workdir()
    p = run([prog("e2e-prog-scenarios"), "items", str(steps)], d)
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    check("before cuda: 1" in p.stdout, f"a call before CUDA was recorded: {p.stdout!r}")
    check(f"items recorded {len(want)}" in p.stdout, f"returns: {p.stdout!r}")
    recs, _ = dump(traces(d)[0])
    items = sorted(by_kind(recs, "items"), key=lambda r: r["start"])
    check([r["count"] for r in items] == want,
          f"ITEMS counts {[r['count'] for r in items]}, want {want}")
    main_thread = {c["thread"] for c in api_calls(recs)}
    check(len(main_thread) == 1 and {r["thread"] for r in items} == main_thread,
          f"ITEMS threads {[r['thread'] for r in items]}, API threads {main_thread}")
    ranges = sorted(by_kind(recs, "range"), key=lambda r: r["start"])
    check([r["op"] for r in ranges] == [1, 2] * steps, f"step ranges {ranges}")
    for i in range(steps):
        push, pop = ranges[2 * i]["start"], ranges[2 * i + 1]["start"]
        inside = [r["count"] for r in items if push <= r["start"] <= pop]
        check(inside == want[3 * i:3 * i + 3], f"step {i}: items {inside} inside its range")
    check(by_kind(recs, "summary")[0]["lost"] == 0, "events lost")
    p = run([prog("e2e-prog-scenarios"), "items", str(steps)], d, preload=False)
    check(p.returncode == 0 and "before cuda: 1" in p.stdout and "items recorded 0" in p.stdout,
          f"without the profiler: {p.returncode} {p.stdout!r}")


def t_prerange_start():
    """A range kept from before the first CUDA call and closed while another
    thread starts recording (a CUPTI slow to load, 1 s) is dropped with its
    pop, not recorded open to the end (prog_harden.c "prerangestart"; the
    pop was ignored then, and the push flushed later stayed open): the
    thread's later range is a phase of its own, nothing is open at the
    end."""
    slow = os.path.join(PROGDIR, "libe2e-slowcupti.so")
    d = workdir()
    p = run([prog("e2e-prog-harden"), "prerangestart"], d,
            extra={"GPUPHASE_CUPTI_LIB": slow, "GP_SLOWCUPTI_MS": "1000"})
    check(p.returncode == 0 and "pops=0 0" in p.stdout, f"{p.returncode} {p.stdout!r} {p.stderr!r}")
    j = json.loads(subprocess.run([REPORT, "--format", "json", traces(d)[0]],
                                  capture_output=True, text=True, timeout=60,
                                  env=env(preload=False)).stdout)
    ph = {x["name"]: x for x in j["phases"]}
    check("after" in ph and "load" not in ph, f"phases {sorted(ph)}")
    check(j["diagnostics"]["ranges_open_at_end"] == 0 and
          j["diagnostics"]["unmatched_range_ends"] == 0, f"{j['diagnostics']}")


def t_prerange_mem():
    """Ranges kept from before the first CUDA call hold bounded memory: a
    thread that ends with ranges kept frees them (200 threads one after
    another, each with 8 names of 250 bytes: 425 KiB kept for ever before),
    and the names kept by live threads are capped for the process (64 KiB
    of names with 16 bytes each for the count; 552 KiB for 200 threads
    before). A push past the cap is not kept, and its pop, made once the
    thread records, is absorbed (before, recorded as unmatched); a child
    forked meanwhile has a cap of its own (before, it counted the parent's
    threads' names and could keep none). Once those threads have ended,
    the main thread's range is recorded (prog_harden.c "prerangemem")."""
    d = workdir()
    p = run([prog("e2e-prog-harden"), "prerangemem", "200"], d,
            extra={"MALLOC_ARENA_MAX": "1"})
    m = dict(kv.split("=") for kv in p.stdout.split())
    check(p.returncode == 0 and m.get("pop") == "0", f"{p.returncode} {p.stdout!r} {p.stderr!r}")
    churn, live = int(m["churn_kb"]), int(m["live_kb"])
    check(churn < 32, f"heap after 200 threads ended with their ranges: {churn} KiB")
    # 64 KiB of names and counts, with the C library's own cache (about
    # 0.6 KiB) for each of the 31 threads that got names kept: 84 KiB
    check(live < 100, f"heap held by 200 live threads' ranges: {live} KiB (cap 64)")
    check(m.get("held") == "1" and m.get("push") == "0" and m.get("heldpop") == "1",
          f"the push past the cap: {p.stdout!r}")
    check(m.get("child") == "0", f"the forked child's push and pop: {p.stdout!r}")
    files = traces(d)
    check(len(files) == 2, f"traces {files}")
    phases = {}
    for f in files:
        j = json.loads(subprocess.run([REPORT, "--format", "json", f],
                                      capture_output=True, text=True, timeout=60,
                                      env=env(preload=False)).stdout)
        check(j["diagnostics"]["unmatched_range_ends"] == 0 and
              j["diagnostics"]["ranges_open_at_end"] == 0, f"{f}: {j['diagnostics']}")
        phases[f] = sorted(x["name"] for x in j["phases"])
    check(sorted(phases.values()) == [["c" * 250], ["main"]], f"phases {phases}")


def t_quiet_io():
    """The library's own writes on the program's thread never end or stop
    it: its one-line warning into a standard error whose reader is gone
    (the program died of SIGPIPE), into a full pipe nobody reads (the first
    CUDA call never returned), and the trace's header under RLIMIT_FSIZE 0
    (the program died of SIGXFSZ). Each run exits 7, as without the
    library."""
    import fcntl
    import resource
    d = workdir()
    args = [prog("e2e-prog-lifecycle"), "exit", "7"]
    bad = {"GPUPHASE_OUTPUT": "/nonexistent/dir/t-%p.gph"}
    # standard error a pipe whose reader is gone
    r, w = os.pipe()
    os.close(r)
    p = subprocess.run(args, cwd=d, env=env(bad), stdout=subprocess.DEVNULL, stderr=w,
                       timeout=60)
    os.close(w)
    check(p.returncode == 7, f"stderr with no reader: exit {p.returncode}")
    # standard error a full pipe: the line is lost, the call returns
    r, w = os.pipe()
    fl = fcntl.fcntl(w, fcntl.F_GETFL)
    fcntl.fcntl(w, fcntl.F_SETFL, fl | os.O_NONBLOCK)
    try:
        while True:
            os.write(w, b"x" * 4096)
    except BlockingIOError:
        pass
    fcntl.fcntl(w, fcntl.F_SETFL, fl)
    try:
        p = subprocess.run(args, cwd=d, env=env(bad), stdout=subprocess.DEVNULL, stderr=w,
                           timeout=30)
        rc = p.returncode
    except subprocess.TimeoutExpired:
        rc = "hung"
    os.close(w)
    os.close(r)
    check(rc == 7, f"stderr a full pipe: exit {rc}")
    # no file may grow: the header cannot be written, one line says so

    def no_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (0, 0))
    p = subprocess.run(args, cwd=d, env=env({"GPUPHASE_OUTPUT": os.path.join(d, "u-%p.gph")}),
                       capture_output=True, text=True, timeout=60, preexec_fn=no_files)
    check(p.returncode == 7 and "File too large" in p.stderr,
          f"RLIMIT_FSIZE 0: exit {p.returncode}, {p.stderr!r}")


def t_prerange():
    """A range pushed before the process's first CUDA call and still open
    at it (an outer "train" range around the model's setup) is recorded,
    at its own time, and is a phase of the report; one pushed and popped
    before it is not recorded at all (prog_scenarios.c "prerange"). Before,
    the push was lost and its pop counted as unmatched."""
    d = workdir()
    p = run([prog("e2e-prog-scenarios"), "prerange", "5"], d)
    check(p.returncode == 0 and "pre: 0 0 0" in p.stdout, f"{p.returncode} {p.stdout!r}")
    recs, _ = dump(traces(d)[0])
    ranges = sorted(by_kind(recs, "range"), key=lambda r: r["start"])
    calls = sorted(api_calls(recs), key=lambda r: r["start"])
    check([r["op"] for r in ranges] == [1, 2], f"ranges {ranges}")
    if len(ranges) == 2:
        check(ranges[0].get("name") == "train", f"names {ranges}")
        # pushed, then 2 ms slept, then the first CUDA call
        gap = calls[0]["start"] - ranges[0]["start"]
        check(2_000_000 <= gap < 2_000_000_000, f"push {gap} ns before the first call")
        syncs = [c for c in calls if c["fn"] == "cudaStreamSynchronize"]
        check(len(syncs) == 5 and ranges[1]["start"] >= syncs[-1]["end"],
              "popped after the last synchronisation")
    j = json.loads(subprocess.run([REPORT, "--format", "json", traces(d)[0]],
                                  capture_output=True, text=True, timeout=60,
                                  env=env(preload=False)).stdout)
    ph = {x["name"]: x for x in j["phases"]}
    check("train" in ph and ph["train"]["count"] == 1 and "gone" not in ph,
          f"phases {sorted(ph)}")
    check(j["diagnostics"]["unmatched_range_ends"] == 0, f"{j['diagnostics']}")


def header_field(path, label):
    m = re.search(r"^" + re.escape(label) + r":\s+(.*)$", info(path).stdout, re.M)
    return m.group(1) if m else None


def t_run_id():
    """One run id per run, in every trace header: `gpuphase run` makes a
    fresh one for each invocation, and the library makes one where none is
    set and hands it to forked and exec'd children; a GPUPHASE_RUN_ID given
    is kept. GPUPHASE_STEP_ITEMS shows in the header."""
    fresh = re.compile(r"[0-9a-f]{16}")
    none = {"GPUPHASE_RUN_ID": None, "GPUPHASE_STEP_ITEMS": None}

    def ids(d):
        files = traces(d)
        check(len(files) == 2, f"two traces (parent, child) expected: {files}")
        return [header_field(f, "run id") for f in files]

    seen = []
    for _ in range(2):
        d = workdir()
        p = run([RUN, "run", "-q", "--", prog("e2e-prog-scenarios"), "fork", "3"], d, none,
                preload=False)
        check(p.returncode == 0, f"gpuphase run failed {p.returncode}: {p.stderr}")
        a, b = ids(d)
        check(a and fresh.fullmatch(a) and a == b, f"parent and child run ids {a!r} {b!r}")
        seen.append(a)
    check(seen[0] != seen[1], f"two runs share the id {seen[0]}")
    # plain LD_PRELOAD: the library makes the id; fork and exec keep it
    # (the exec'd image checks that its rebuilt environment got
    # GPUPHASE_OUTPUT back, so one is set)
    for args in (["e2e-prog-scenarios", "fork", "3"], ["e2e-prog-lifecycle", "exec"]):
        d = workdir()
        p = run([prog(args[0])] + args[1:], d, dict(none, GPUPHASE_OUTPUT="r-%p.gph"))
        check(p.returncode == 0, f"{args} failed {p.returncode}: {p.stderr}")
        a, b = ids(d)
        check(a and fresh.fullmatch(a) and a == b, f"{args}: run ids {a!r} {b!r}")
        check(a not in seen, f"{args}: the id {a} of an earlier run")
    d = workdir()
    given = {"GPUPHASE_RUN_ID": "job-4711.a", "GPUPHASE_STEP_ITEMS": "32"}
    p = run([RUN, "run", "-q", "--", prog("e2e-prog-scenarios"), "fork", "3"], d, given,
            preload=False)
    check(p.returncode == 0, f"gpuphase run failed {p.returncode}: {p.stderr}")
    check(ids(d) == ["job-4711.a"] * 2, f"given run id not kept: {ids(d)}")
    for f in traces(d):
        items = header_field(f, "step items")
        check(items and items.split()[0] == "32", f"step items in {f}: {items!r}")
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "exit", "0"], d, dict(none, GPUPHASE_STEP_ITEMS="x12"))
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    check("ignoring GPUPHASE_STEP_ITEMS=x12" in p.stderr, f"stderr {p.stderr!r}")
    check(header_field(traces(d)[0], "step items") is None, "an invalid value was recorded")


# ---- Hostile lifecycles (prog_harden.c): signals, full disk, long
# warnings, `gpuphase run` with a bad output, thread churn, exit() from a
# thread.

HARDEN = "e2e-prog-harden"
# Every signal whose default action ends the process (signal(7)).
TERMINATING = [signal.SIGINT, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1,
               signal.SIGUSR2, signal.SIGALRM, signal.SIGPIPE, signal.SIGXCPU,
               signal.SIGXFSZ, signal.SIGVTALRM, signal.SIGPROF, signal.SIGTERM,
               signal.SIGSEGV, signal.SIGBUS, signal.SIGFPE, signal.SIGILL,
               signal.SIGABRT, signal.SIGSYS, signal.SIGTRAP, signal.SIGPWR,
               signal.SIGSTKFLT, signal.SIGIO, signal.SIGRTMIN + 5, signal.SIGRTMAX]


def default_dispositions():
    """In the child before exec: every signal back to its default action (a
    shell's background job, and so maybe this test, ignores SIGINT and
    SIGQUIT, which exec keeps), and no core files."""
    import resource
    for s in TERMINATING:
        signal.signal(s, signal.SIG_DFL)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))


# Under ASan its own handlers would take the faults and aborts first.
NO_SAN_HANDLERS = {"ASAN_OPTIONS": os.environ.get("ASAN_OPTIONS", "") +
                   ":handle_segv=0:handle_sigbus=0:handle_sigfpe=0:handle_sigill=0:handle_abort=0"}


def start_ready(args, d, extra=None):
    extra = dict(NO_SAN_HANDLERS, **(extra or {}))
    pr = subprocess.Popen(args, cwd=d, env=env(extra), stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, text=True, restore_signals=True,
                          preexec_fn=default_dispositions)
    line = pr.stdout.readline()
    check(line.strip() == "ready", f"{args}: did not start ({line!r})")
    return pr


def complete_trace(d, what, kernels):
    files = traces(d)
    check(len(files) == 1, f"{what}: traces {files}")
    recs, _ = dump(files[0])
    check(len(by_kind(recs, "summary")) == 1, f"{what}: no summary (trace not completed)")
    check(len(by_kind(recs, "kernel")) == kernels,
          f"{what}: {len(by_kind(recs, 'kernel'))} kernels, want {kernels}")
    return recs


def t_signals():
    """Each terminating signal, sent to a program that kept its default
    disposition, ends it as it would without the profiler (killed by that
    signal) after the trace was completed (summary, every kernel); a real
    fault too."""
    for sig in TERMINATING:
        d = workdir()
        pr = start_ready([prog("e2e-prog-lifecycle"), "sleep", "5"], d)
        pr.send_signal(sig)
        pr.communicate(timeout=30)
        name = signal.Signals(sig).name if sig in signal.Signals.__members__.values() else str(sig)
        check(pr.returncode == -sig, f"{name}: returned {pr.returncode}, want {-sig}")
        complete_trace(d, name, 5)
    d = workdir()
    p = run([prog(HARDEN), "segv"], d, NO_SAN_HANDLERS, preexec_fn=default_dispositions)
    check(p.returncode == -signal.SIGSEGV, f"a real fault returned {p.returncode}")
    complete_trace(d, "real SIGSEGV", 3)
    # SIGTERM while the program is inside a CUDA call (it launches without
    # end): the trace is still completed, every kernel with its launch
    for _ in range(3):
        d = workdir()
        pr = subprocess.Popen([prog(HARDEN), "spin"], cwd=d, env=env(NO_SAN_HANDLERS),
                              restore_signals=True,
                              preexec_fn=default_dispositions)
        time.sleep(0.3)
        t0 = time.monotonic()
        pr.send_signal(signal.SIGTERM)
        pr.wait(timeout=30)
        check(pr.returncode == -signal.SIGTERM, f"spin: returned {pr.returncode}")
        check(time.monotonic() - t0 < 2, f"spin: took {time.monotonic() - t0:.1f} s to end")
        recs, _ = dump(traces(d)[0])
        summ = by_kind(recs, "summary")
        check(summ, "spin: no summary (trace not completed)")
        corrs = {c["corr"] for c in by_kind(recs, "api")}
        orphans = [k for k in by_kind(recs, "kernel") if k["corr"] not in corrs]
        check(len(orphans) <= summ[0]["lost"], f"spin: {len(orphans)} kernels without their call")
    # Two terminating signals back to back (a process group signalled
    # reaches the program directly and through `gpuphase run`, which passes
    # SIGTERM on): the second, within the grace period, waits for the
    # completion instead of killing the threaded program on another thread
    # first; the program dies by the first delivered (pending signals are
    # delivered lowest number first).
    for sigs in ((signal.SIGTERM, signal.SIGTERM), (signal.SIGTERM, signal.SIGINT)):
        d = workdir()
        pr = subprocess.Popen([prog(HARDEN), "spin"], cwd=d, env=env(NO_SAN_HANDLERS),
                              restore_signals=True, preexec_fn=default_dispositions)
        time.sleep(0.15)
        for sg in sigs:
            pr.send_signal(sg)
        pr.wait(timeout=30)
        what = "+".join(signal.Signals(x).name for x in sigs)
        check(pr.returncode in [-x for x in sigs], f"{what}: returned {pr.returncode}")
        st = info(traces(d)[0]).stdout  # not dump: spin's traces are large
        check("status:       complete" in st, f"{what}: trace not completed: {st}")
    # the process group of `gpuphase run` signalled, as `timeout` or a
    # closed terminal does
    for sg in (signal.SIGTERM, signal.SIGHUP):
        d = workdir()
        pr = subprocess.Popen([RUN, "run", "-q", "-o", os.path.join(d, "g-%p.gph"), "--",
                               prog(HARDEN), "spin"], cwd=d, env=env(NO_SAN_HANDLERS, preload=False),
                              restore_signals=True, preexec_fn=default_dispositions,
                              start_new_session=True)
        time.sleep(0.3)
        os.killpg(pr.pid, sg)
        pr.wait(timeout=30)
        name = signal.Signals(sg).name
        check(pr.returncode in (-sg, 128 + sg), f"group {name}: returned {pr.returncode}")
        files = traces(d)
        check(len(files) == 1 and "status:       complete" in info(files[0]).stdout,
              f"group {name}: no complete trace in {files}")


def t_altstack():
    """A program with a small alternate signal stack (2 KiB is the least
    sigaltstack takes) dies by SIGTERM as it would without the profiler,
    with the trace complete; before, our handler ran on that stack for
    every signal, overflowed it, and the program died by SIGSEGV or with
    its heap overwritten ("realloc(): invalid pointer"). A stack overflow
    still reaches the handler on the alternate stack: complete when that
    stack holds the completion, and the program dies by SIGSEGV either
    way."""
    for size in (2048, 4096, 65536):
        d = workdir()
        p = run([prog(HARDEN), "altstack", str(int(signal.SIGTERM)), str(size)], d,
                NO_SAN_HANDLERS, preexec_fn=default_dispositions, timeout=30)
        check(p.returncode == -signal.SIGTERM,
              f"SIGTERM, alternate stack of {size} bytes: returned {p.returncode} {p.stderr!r}")
        complete_trace(d, f"SIGTERM, alternate stack of {size}", 3)
    for size in (2048, 65536):
        d = workdir()
        p = run([prog(HARDEN), "altstack", "0", str(size)], d, NO_SAN_HANDLERS,
                preexec_fn=default_dispositions, timeout=30)
        check(p.returncode == -signal.SIGSEGV,
              f"overflow, alternate stack of {size} bytes: returned {p.returncode} {p.stderr!r}")
        if size >= 16384:
            complete_trace(d, f"overflow, alternate stack of {size}", 3)


def sigterm_starting(args, e):
    """Runs prog_harden with args under env e, sends SIGTERM 0.2 s after
    its trace file appears, and checks that the program died by it; the
    work directory and the program's stderr."""
    d = workdir()
    pr = subprocess.Popen([prog("e2e-prog-harden")] + args, cwd=d, env=e,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                          restore_signals=True, preexec_fn=default_dispositions)
    t0 = time.monotonic()
    while not traces(d) and time.monotonic() - t0 < 10:
        time.sleep(0.005)
    check(traces(d), f"{args}: no trace file after 10 s")
    time.sleep(0.2)  # within the slowed start
    check(pr.poll() is None, f"{args}: ended before the signal")
    pr.send_signal(signal.SIGTERM)
    try:
        out, err = pr.communicate(timeout=30)
    except subprocess.TimeoutExpired:
        pr.kill()
        raise Fail(f"{args}: still running 30 s after SIGTERM")
    check(pr.returncode == -signal.SIGTERM,
          f"{args}: ended with {pr.returncode}, want -SIGTERM: {err!r}")
    return d, err


def t_signal_starting():
    """SIGTERM while recording starts (the trace file made, CUPTI still
    loading: a CUPTI library whose loading takes 2 s, slowcupti.c): the
    program dies by it, as without the profiler, and the trace is complete
    (its summary), not a header alone. Single-threaded, the signal lands on
    the thread that is starting recording, inside the program's first CUDA
    call; with "startrace", 8 threads make their first calls together."""
    slow = os.path.join(PROGDIR, "libe2e-slowcupti.so")
    for args in (["spin"], ["startrace", "50"]):
        d, _ = sigterm_starting(args, env(dict(NO_SAN_HANDLERS, GPUPHASE_CUPTI_LIB=slow)))
        recs = complete_trace(d, f"SIGTERM while starting ({args[0]})", 0)
        check(not by_kind(recs, "api"), f"{args}: calls recorded before CUPTI ran")


def t_signal_opening():
    """SIGTERM after the trace file is made and before the writer thread
    runs (a window of microseconds, made a second long by preloading
    slowreserve.c ahead of the shim; before, about one start in 75 of the
    soak's children, signalled at once, left a file with its header
    only): the program dies by it and the trace is complete. Single-
    threaded, the signal lands on the thread starting the writer, which
    sends it on once the writer runs; with "startrace", on another thread,
    which waits for the writer."""
    slow = os.path.join(PROGDIR, "libe2e-slowreserve.so")
    for args in (["spin"], ["startrace", "50"]):
        e = env(dict(NO_SAN_HANDLERS, GP_SLOWRESERVE_MS="1000"))
        e["LD_PRELOAD"] = e["LD_PRELOAD"].replace(LIB, slow + ":" + LIB)
        d, err = sigterm_starting(args, e)
        check("slowreserve: sleeping" in err,
              f"{args}: the reserve was not slowed (not preloaded?): {err!r}")
        what = f"SIGTERM before the writer ran ({args[0]})"
        if args[0] == "spin":
            recs = complete_trace(d, what, 0)
            check(not by_kind(recs, "api"), f"{what}: calls recorded")
            continue
        # the other threads go on while the signalled one waits for the
        # writer: what they launched meanwhile may be in the trace
        files = traces(d)
        check(len(files) == 1, f"{what}: traces {files}")
        recs, _ = dump(files[0])
        check(len(by_kind(recs, "summary")) == 1, f"{what}: no summary (trace not completed)")


def t_signal_setters():
    """sigset, bsd_signal, sysv_signal, __sysv_signal (signal() in a program
    built for strict ISO C, -std=c11: before, it read back our handler and
    the trace was lost) and ssignal, like signal: the program reads
    back SIG_DFL where it set nothing (before, our handler), puts it back
    with the same call, and the signal then ends the program by it, with
    the trace completed (before, our handler came back without SA_SIGINFO
    and a fault could be swallowed)."""
    for fn in ("sigset", "bsd_signal", "sysv_signal", "__sysv_signal", "ssignal"):
        for sig in (signal.SIGSEGV, signal.SIGBUS, signal.SIGTERM):
            d = workdir()
            p = run([prog(HARDEN), "restore", str(int(sig)), fn], d, NO_SAN_HANDLERS,
                    preexec_fn=default_dispositions)
            what = f"{fn} {signal.Signals(sig).name}"
            check(p.stdout.strip() == "dfl", f"{what}: read back {p.stdout!r}")
            check(p.returncode == -sig, f"{what}: returned {p.returncode}")
            complete_trace(d, what, 3)


def t_signal_oneshot():
    """A handler set to run once (SA_RESETHAND, with sigaction, with
    sysv_signal, before the first CUDA call, or a crash handler as
    backward-cpp sets one) runs once, the program then reads back SIG_DFL,
    and the signal coming again ends the program by it with the trace
    completed. Before, the kernel put back SIG_DFL without ours: the
    program died by the signal with no summary and no records."""
    for how in ("sigaction", "sysv_signal", "early"):
        for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGUSR1):
            d = workdir()
            p = run([prog(HARDEN), "oneshot", str(int(sig)), how], d, NO_SAN_HANDLERS,
                    preexec_fn=default_dispositions)
            what = f"{how} {signal.Signals(sig).name}"
            check(p.stdout.strip() == "handled 1 dfl", f"{what}: {p.stdout!r}")
            check(p.returncode == -sig, f"{what}: returned {p.returncode}")
            complete_trace(d, what, 5)
    d = workdir()
    p = run([prog(HARDEN), "oneshot", str(int(signal.SIGSEGV)), "crash"], d, NO_SAN_HANDLERS,
            preexec_fn=default_dispositions)
    check(p.stdout.strip() == "crash handler", f"crash: {p.stdout!r}")
    check(p.returncode == -signal.SIGSEGV, f"crash: returned {p.returncode}")
    complete_trace(d, "crash handler", 3)


def t_warn_one_line():
    """A warning is one line whatever the value it quotes holds: a setting
    with a newline in it (before, two lines)."""
    d = workdir()
    p = run([prog("e2e-prog-lifecycle"), "exit", "0"], d, {"GPUPHASE_CLOCK": "bo\ngus"})
    check(p.returncode == 0, f"exit {p.returncode}")
    lines = [l for l in p.stderr.splitlines() if "GPUPHASE_CLOCK" in l or "gus" in l]
    check(len(lines) == 1 and "GPUPHASE_CLOCK=bo?gus" in lines[0], f"stderr {p.stderr!r}")


def t_signal_inside_call():
    """SIGTERM that lands inside a CUDA call (a long synchronise) is
    delivered once the trace is complete; meanwhile the thread does no more
    of the program's work (before, it went on for several iterations, each
    with its side effect). At most the iteration under way when the signal
    was sent completes: the program prints how many had completed just
    after sending it ("sent N")."""
    for _ in range(3):
        d = workdir()
        p = run([prog(HARDEN), "sidefx"], d, dict(NO_SAN_HANDLERS, GPUSIM_WAVE_NS="100000"),
                preexec_fn=default_dispositions)
        check(p.returncode == -signal.SIGTERM, f"returned {p.returncode}: {p.stderr}")
        sent = re.search(r"^sent (\d+)$", p.stdout, re.M)
        check(sent is not None, f"stdout {p.stdout[-200:]!r}")
        total = p.stdout.count("it\n")
        check(total - int(sent.group(1)) <= 1,
              f"{total - int(sent.group(1))} iterations after the signal")
        recs, _ = dump(traces(d)[0])
        check(by_kind(recs, "summary"), "no summary (trace not completed)")


def t_handlers():
    """Handlers the program installs after the profiler started are the
    ones that run; SIG_IGN set later is kept; a program that sets SIG_DFL
    again still gets a completed trace; the program sees the dispositions
    it set (SIG_DFL where it set none)."""
    for mode, sig in (("handler", signal.SIGINT), ("handler", signal.SIGTERM),
                      ("handler", signal.SIGUSR1), ("signal", signal.SIGHUP),
                      ("signal", signal.SIGINT)):
        d = workdir()
        pr = start_ready([prog(HARDEN), mode, str(int(sig))], d)
        pr.send_signal(sig)
        out, err = pr.communicate(timeout=30)
        check(pr.returncode == 0 and out.strip() == "handled",
              f"{mode} {sig}: {pr.returncode} {out!r} {err!r}")
        complete_trace(d, f"{mode} {sig}", 4)
    d = workdir()
    pr = start_ready([prog(HARDEN), "ignore", str(int(signal.SIGINT))], d)
    pr.send_signal(signal.SIGINT)
    out, err = pr.communicate(timeout=30)
    check(pr.returncode == 0 and out.strip() == "survived", f"SIG_IGN: {pr.returncode} {out!r}")
    complete_trace(d, "ignore", 4)
    d = workdir()
    pr = start_ready([prog(HARDEN), "default", str(int(signal.SIGTERM))], d)
    pr.send_signal(signal.SIGTERM)
    pr.communicate(timeout=30)
    check(pr.returncode == -signal.SIGTERM, f"SIG_DFL again: returned {pr.returncode}")
    complete_trace(d, "SIG_DFL again", 5)
    # the default set with SA_SIGINFO and a null sa_sigaction, which the
    # kernel takes as SIG_DFL
    d = workdir()
    pr = start_ready([prog(HARDEN), "defaultinfo", str(int(signal.SIGTERM))], d)
    pr.send_signal(signal.SIGTERM)
    pr.communicate(timeout=30)
    check(pr.returncode == -signal.SIGTERM,
          f"SIG_DFL as a null sa_sigaction: returned {pr.returncode}")
    complete_trace(d, "SIG_DFL as a null sa_sigaction", 5)
    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGSEGV, signal.SIGUSR2):
        d = workdir()
        a = run([prog(HARDEN), "query", str(int(sig))], d, preexec_fn=default_dispositions)
        b = run([prog(HARDEN), "query", str(int(sig))], d, preload=False,
                preexec_fn=default_dispositions)
        want = b.stdout if PRELOAD_PREFIX else "dfl dfl\n"  # ASan handles SEGV
        check(a.returncode == 0 and a.stdout == b.stdout == want,
              f"disposition of {sig} seen by the program: {a.stdout!r} (without: {b.stdout!r})")


def mount_small_fs(d, size):
    mnt = os.path.join(d, "small")
    os.mkdir(mnt)
    p = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", mnt],
                       capture_output=True, text=True)
    if p.returncode != 0:
        print(f"SKIP: cannot mount a small tmpfs ({p.stderr.strip() or p.returncode})")
        sys.exit(77)
    return mnt


def events(recs):
    """Records the summary counts as events, but the trace file's own LOST
    record (source 2)."""
    return sum(1 for r in recs if r["kind"] not in ("string", "summary")
               and not (r["kind"] == "lost" and r.get("source") == 2))


def t_disk_full():
    """The disk fills while recording: the program is untouched, one line on
    stderr says so with the reason, the file ends with its summary (space
    was reserved for it), every event not written is counted lost, and the
    report says the writes failed instead of 'process killed or file cut'."""
    n = 400000
    # 2 us per call: the disk fills after some flushes (10 ms apart) worked
    # (no counter sampling: its records depend on timing, and the two runs
    # must hand the writer the same events)
    extra = {"GPUPHASE_BUFFER_KB": "131072", "MALLOC_PERTURB_": None,
             "GPUSIM_API_NS": "2000", "GPUPHASE_FLUSH_MS": "10", "GPUPHASE_NVML": "0"}
    ref = workdir()
    p = run([prog("e2e-prog-scenarios"), "launch", str(n)], ref, extra, timeout=100)
    check(p.returncode == 0, f"reference run failed: {p.stderr}")
    recs, _ = dump(traces(ref)[0])
    check(by_kind(recs, "summary")[0]["lost"] == 0, "reference run lost events")
    total = events(recs)
    size = os.path.getsize(traces(ref)[0])
    d = workdir()
    mnt = mount_small_fs(d, "256k")
    try:
        check(size > 512 << 10, f"the trace ({size} B) must not fit in 256 KiB")
        p = run([prog("e2e-prog-scenarios"), "launch", str(n)], mnt,
                dict(extra, GPUPHASE_OUTPUT="full.gph"), timeout=100)
        check(p.returncode == 0, f"program failed on a full disk: {p.returncode} {p.stderr}")
        lines = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
        check(len(lines) == 1 and "No space left on device" in lines[0],
              f"stderr must say it once, with the reason: {p.stderr!r}")
        f = os.path.join(mnt, "full.gph")
        recs, _ = dump(f)
        summ = by_kind(recs, "summary")
        check(summ, "the file must end with its summary")
        lost = summ[0]["lost"]
        got = events(recs)
        check(lost > 0 and got > 0 and got + lost == total,
              f"{got} written + {lost} lost != {total} events")
        print(f"full disk: {got} of {total} events written, {lost} counted lost")
        check(sum(r["count"] for r in by_kind(recs, "lost") if r["source"] == 2) == lost,
              "LOST records of the trace file (source 2) must count them")
        i = info(f)
        check(re.search(r"status:\s+complete", i.stdout) and "writes failed" in i.stdout,
              f"info: {i.stdout}")
        r = subprocess.run([REPORT, f], capture_output=True, text=True, env=env(preload=False))
        check(r.returncode == 0 and "killed or file cut" not in r.stdout + r.stderr
              and "could not be written" in r.stdout, f"report: {r.stdout[-800:]} {r.stderr}")
        # full before the first byte: the same reason, and no recording
        # unbuffered: a buffered file would flush its rest at close, and
        # fail there, outside the try
        with open(os.path.join(mnt, "fill"), "wb", buffering=0) as fill:
            try:
                while True:
                    fill.write(b"\0" * 65536)
            except OSError:
                pass
        p = run([prog("e2e-prog-lifecycle"), "exit", "0"], mnt,
                dict(extra, GPUPHASE_OUTPUT="full2.gph"))
        lines = [l for l in p.stderr.splitlines() if l.startswith("gpuphase:")]
        check(p.returncode == 0 and len(lines) == 1 and
              "No space left on device; not recording" in lines[0],
              f"a full disk at the start: {p.returncode} {p.stderr!r}")
    finally:
        subprocess.run(["umount", mnt])


def t_warn_long():
    """A warning with a long variable part is still one whole line: the
    reason kept, the newline kept, the program's next line on its own."""
    d = workdir()
    long_dir = "/nonexistent" + ("/" + "d" * 100) * 7  # ENOENT, not ENAMETOOLONG
    cases = [({"GPUPHASE_OUTPUT": long_dir + "/t.gph"},
              ["cannot create trace file", "No such file or directory", "not recording"]),
             ({"GPUPHASE_BUFFER_KB": "9" * 900}, ["ignoring GPUPHASE_BUFFER_KB", "(expected 64..1048576)"]),
             ({"GPUPHASE_CLOCK": "bogus"}, ["ignoring GPUPHASE_CLOCK=bogus", "monotonic or tsc"])]
    for extra, parts in cases:
        p = run([prog("e2e-prog-lifecycle"), "exit", "0"], d, extra)
        check(p.returncode == 0, f"program failed: {p.stderr!r}")
        ours = [l for l in p.stderr.split("\n") if l.startswith("gpuphase:")]
        check(len(ours) == 1 and p.stderr.endswith("\n"), f"stderr: {p.stderr!r}")
        check(all(x in ours[0] for x in parts) and len(ours[0]) < 512,
              f"the line lost its reason or is too long ({len(ours[0])}): {ours[0]!r}")


def t_run_badout():
    """`gpuphase run -o` into a folder that does not exist: the library's
    error, and no second line claiming no process used CUDA."""
    d = workdir()
    p = run([RUN, "run", "-o", "/nonexistent/x.gph", "--", prog("e2e-prog-lifecycle"), "exit", "0"],
            d, preload=False)
    check(p.returncode == 0, f"gpuphase run returned {p.returncode}")
    check("cannot create trace file /nonexistent/x.gph" in p.stderr, f"stderr {p.stderr!r}")
    check("no process made a CUDA call" not in p.stderr, f"false second line: {p.stderr!r}")


def t_churn():
    """20,000 threads started and joined one after another, each launching
    once: every launch recorded, and the process stays under 64 MB (about
    9 MB alone; the rings of exited threads wait for the writer thread,
    which lags when the machine is loaded: 40 MB was seen once under the
    test suite's parallel load; unbounded, 20,000 threads took 102 MB)."""
    n = 20000
    d = workdir()
    p = run([prog(HARDEN), "churn", str(n)], d, timeout=200)
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    m = re.search(r"hwm_kb=(\d+)", p.stdout)
    check(m, f"output {p.stdout!r}")
    hwm = int(m.group(1))
    print(f"{n} threads: peak RSS {hwm} kB")
    # a sanitizer's shadow memory and quarantine are not ours to bound
    check(hwm <= 64 * 1024 or PRELOAD_PREFIX, f"peak RSS {hwm} kB over 64 MB")
    recs, _ = dump(traces(d)[0])
    launches = [c for c in api_calls(recs) if c["fn"] == "cudaLaunchKernel"]
    check(len(launches) == n + 1 and len(by_kind(recs, "kernel")) == n + 1,
          f"{len(launches)} launches, {len(by_kind(recs, 'kernel'))} kernels of {n + 1}")
    check(len({c["thread"] for c in launches}) == n + 1, "each thread its own index")
    check(by_kind(recs, "summary")[0]["lost"] == 0, "events lost")


def t_exit_thread():
    """exit() from another thread while the main thread launches: each
    kernel record is written with its call, or that call is counted lost."""
    for ms in (30, 100, 100):
        d = workdir()
        p = run([prog(HARDEN), "exitthread", str(ms)], d)
        check(p.returncode == 0, f"program returned {p.returncode}: {p.stderr}")
        recs, _ = dump(traces(d)[0])
        summ = by_kind(recs, "summary")
        check(summ, "no summary")
        corrs = {c["corr"] for c in by_kind(recs, "api")}
        orphans = [k for k in by_kind(recs, "kernel") if k["corr"] not in corrs]
        check(len(orphans) <= summ[0]["lost"],
              f"{len(orphans)} kernels without their call, {summ[0]['lost']} counted lost")
        print(f"exit after {ms} ms: {len(by_kind(recs, 'kernel'))} kernels, "
              f"{len(orphans)} without their call, {summ[0]['lost']} lost")


def t_main_exit():
    """The main thread leaves by pthread_exit: glibc ends the process with
    exit(0) when the last thread ends, after the atexit handlers. Our
    writer and sampler threads kept it alive for ever before; now it ends
    as it does without the profiler, with the trace complete (every kernel
    of the thread that went on), with and without the counter sampler's
    thread, and when main was the last thread."""
    for extra in ({}, {"GPUPHASE_NVML": "0"}):
        for n, kernels in ((50, 51), (-1, 1)):
            d = workdir()
            args = [prog(HARDEN), "mainexit", str(n)]
            p = run(args, d, extra, timeout=30)
            check(p.returncode == 0, f"mainexit {n} {extra}: returned {p.returncode} {p.stderr!r}")
            want = (f"launches={n + 1}\n" if n >= 0 else "") + "atexit\n"
            check(p.stdout == want, f"mainexit {n} {extra}: stdout {p.stdout!r}")
            complete_trace(d, f"mainexit {n}", kernels)
    # the same program without the profiler, for its exit and output
    p = run(args[:2] + ["50"], workdir(), preload=False, timeout=30)
    check(p.returncode == 0 and p.stdout == "launches=51\natexit\n",
          f"without the profiler: {p.returncode} {p.stdout!r}")


def t_closed_fd():
    """A program that closes every descriptor it did not open (as a daemon
    does) and then opens its own file under the numbers ours had: its file
    holds only what it wrote (before the fix, the rest of the trace went
    into it), and the trace, opened again by its name, is complete with
    every kernel. When the trace file was removed as well, it cannot be
    opened again: one line says so, nothing goes into the program's file,
    and the program's exit is unchanged. libunwind's pipe the same."""
    d = workdir()
    app = os.path.join(d, "app.dat")
    p = run([prog(HARDEN), "closefds", app], d)
    check(p.returncode == 0, f"program returned {p.returncode}: {p.stderr}")
    with open(app, "rb") as f:
        check(f.read() == b"application data\n", "the trace was written into the program's file")
    launches = int(p.stdout.split("launches=")[1].split()[0])
    complete_trace(d, "closed descriptor", launches)
    d = workdir()
    app = os.path.join(d, "app.dat")
    p = run([prog(HARDEN), "closefds", app, "rm"], d)
    check(p.returncode == 0, f"program returned {p.returncode}: {p.stderr}")
    with open(app, "rb") as f:
        check(f.read() == b"application data\n", "the trace was written into the program's file")
    lines = [l for l in p.stderr.splitlines() if "cannot be opened again" in l]
    check(len(lines) == 1 and "the trace ends here" in lines[0], f"stderr {p.stderr!r}")
    check(traces(d) == [], f"traces {traces(d)}")

    # libunwind's own pipe (it checks memory through it when a frame has
    # no unwind tables): the program's files under its numbers are left
    # alone (before, libunwind read 4 bytes of the input and wrote into the
    # output); call sites stop, said once
    d = workdir()
    with open(os.path.join(d, "input.txt"), "w") as f:
        f.write("ABCDEFGHIJ\n")
    p = run([prog(HARDEN), "unwfds", d], d, {"GPUPHASE_STACKS": "all"})
    check(p.returncode == 0, f"unwfds returned {p.returncode}: {p.stderr}")
    check(p.stdout == "read=ABCDEFGHIJ\n", f"the program read {p.stdout!r}")
    with open(os.path.join(d, "output.txt"), "rb") as f:
        check(f.read() == b"app data\n", "libunwind wrote into the program's file")
    said = [l for l in p.stderr.splitlines() if "libunwind's pipe" in l]
    check(len(said) <= 1, f"stderr {p.stderr!r}")
    complete_trace(d, "unwfds", 2003)


def t_closed_std():
    """A program that closed its standard input, output and error before its
    first CUDA call: none of our descriptors (the trace file, libunwind's
    pipe) takes 0, 1 or 2, so its read and writes there fail (EBADF) as
    they do without the profiler (before, it read libunwind's pipe and
    wrote its output into the pipe and the trace file), and the trace is
    complete. With call sites on and off (libunwind is set up either way),
    with NVML's set-up allowed, and with a CUPTI library that opens three
    descriptors of its own while it loads and keeps them (slowcupti.c):
    before, they took 0, 1 and 2, and the program read /dev/zero and
    wrote into it."""
    slow = os.path.join(PROGDIR, "libe2e-slowcupti.so")
    cupti_fds = {"GPUPHASE_CUPTI_LIB": slow, "GP_SLOWCUPTI_MS": "0",
                 "GP_SLOWCUPTI_FDS": "3"}
    for extra in ({}, {"GPUPHASE_STACKS": "off"}, {"GPUPHASE_NVML": "0"},
                  cupti_fds):
        base = run([prog(HARDEN), "closestd", "4"], workdir(), extra, preload=False)
        check(base.returncode == 0, f"without the profiler: returned {base.returncode}")
        d = workdir()
        p = run([prog(HARDEN), "closestd", "4"], d, extra)
        check(p.returncode == 0, f"{extra}: returned {p.returncode} (10 + 1: read 0, "
              f"2: wrote 1, 4: wrote 2)")
        complete_trace(d, f"closed 0-2 {extra}", 8)
        i = info(traces(d)[0])
        check(i.returncode == 0 and re.search(r"^status:\s+complete$", i.stdout, re.M),
              f"{extra}: info {i.stdout!r} {i.stderr!r}")


def t_vfork():
    """vfork children (Python's subprocess uses vfork) run in the parent's
    memory: their exec, _exit, and a failed exec leave the parent's trace
    alone. The parent's trace is one file, complete, with every kernel,
    and nothing is said on stderr; the children close every descriptor
    first (as Python's subprocess does), and the parent's call sites go
    on. An execl of 5000 arguments goes through whole."""
    d = workdir()
    p = run([prog(HARDEN), "vfork", "50"], d, {"GPUPHASE_STACKS": "all"})
    check(p.returncode == 0, f"program returned {p.returncode}: {p.stderr}")
    check(p.stdout.strip() == "launches=203", f"stdout {p.stdout!r}")
    check(p.stderr == "", f"stderr {p.stderr!r}")
    recs = complete_trace(d, "vfork", 203)
    # call sites went on after the children closed their descriptors
    apis = by_kind(recs, "api")
    with_stack = [int(a["corr"]) for a in apis if a.get("stack")]
    check(with_stack and max(with_stack) >= max(int(a["corr"]) for a in apis) - 5,
          "call sites stopped after a child closed its descriptors")
    # execl with more arguments than the wrapper once gathered (4096)
    d = workdir()
    p = run([prog(HARDEN), "execl"], d)
    check(p.returncode == 0, f"execl of 5000 arguments: {p.returncode} {p.stderr!r}")
    complete_trace(d, "execl", 3)
    # _exit from a signal handler while exit() completes the trace on the
    # same thread: before, it waited for ever on the shutdown lock
    for _ in range(5):
        d = workdir()
        p = run([prog(HARDEN), "exitsig"], d, timeout=20)
        check(p.returncode in (0, 7), f"exitsig: returned {p.returncode} {p.stderr!r}")


def t_launch_dims():
    """Every dim3 launch function, with grids and blocks whose totals are
    worked out here from the call's index i (prog_launch.c, which passes i
    as the dynamic shared memory): grid = x*y*z modulo 2^64, saturated at
    2^32 - 1, block the same saturated at 65535, the result of the call
    (cudaErrorInvalidConfiguration, 9, for the rejected ones), each call once
    on the same stream. A launch takes two ring slots: in a 64 KiB ring
    (1024 slots) that wraps many times, with one-slot calls in between,
    every launch recorded is still whole (any lost are counted); in the
    default ring none is lost, with either raw clock (the TSC where the
    kernel trusts it, and CLOCK_MONOTONIC)."""
    n = 3000
    fns = ["cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchCooperativeKernel",
           "cudaLaunchCooperativeKernel_ptsz", "__cudaLaunchKernel", "__cudaLaunchKernel_ptsz"]

    def dims(i):
        if i % 8 == 5:
            return (65536, 65536, 2), (2048, 1, 1)
        if i % 8 == 6:
            return (1 << 31, 1 << 31, 4), (32, 1, 1)
        if i % 8 == 7:
            return (1, 1, 1), (1024, 1024, 1)
        return (1 + i % 5, 1 + i % 3, 1 + i // 3 % 2), (32, 1 + i % 4, 1 + i // 5 % 2)

    def total(d, cap):
        return min(d[0] * d[1] * d[2] % (1 << 64), (1 << 32) - 1, cap)

    for kb, clock in (("64", None), (None, None), (None, "monotonic")):
        d = workdir()
        extra = {"GPUPHASE_FLUSH_MS": "10"}
        if kb:
            extra["GPUPHASE_BUFFER_KB"] = kb
        if clock:
            extra["GPUPHASE_CLOCK"] = clock
        p = run([prog("e2e-prog-launch"), str(n)], d, extra, timeout=100)
        want = f"launches {n} rejected {sum(1 for i in range(n) if i % 8 >= 5)}"
        check(p.returncode == 0 and p.stdout.strip() == want,
              f"program ({kb} KiB): {p.stdout!r} {p.stderr!r}")
        recs, _ = dump(traces(d)[0])
        ls = [c for c in api_calls(recs) if "Launch" in c["fn"]]
        seen = set()
        for c in ls:
            i = c["bytes"]
            check(0 <= i < n and i not in seen, f"launch with bytes {i}: not one of the calls")
            seen.add(i)
            g, b = dims(i)
            check(0 < c["start"] <= c["end"], f"launch {i}: start {c['start']} end {c['end']}")
            got = (c["fn"], c["grid"], c["block"], c["ret"])
            exp = (fns[i % 6], total(g, 1 << 32), total(b, 65535), 9 if i % 8 >= 5 else 0)
            check(got == exp, f"launch {i}: (fn, grid, block, ret) {got}, want {exp}")
        check(len({c["stream"] for c in ls}) == 1 and ls[0]["stream"] != 0, "launch streams")
        check(len({c["func"] for c in ls if c["bytes"] % 6 < 4}) == 1 and
              len({c["func"] for c in ls if c["bytes"] % 6 >= 4}) == 1 and
              all(c["func"] for c in ls), "launch functions")
        lost = by_kind(recs, "summary")[0]["lost"]
        if kb:
            check(len(ls) >= n // 10, f"{len(ls)} launches recorded of {n} in a 64 KiB ring")
            print(f"64 KiB ring: {len(ls)} of {n} launches recorded, {lost} events counted lost")
        else:
            check(len(ls) == n and lost == 0, f"{len(ls)} launches recorded of {n}, {lost} lost")


def t_repeats():
    """A launch loop whose calls mostly repeat the one before but for their
    times and corr (the recorder writes those as repeat records, straight
    from the ring event), now and then a call with other dimensions of the
    same total, another stream, shared memory or function (prog_repeat.c):
    every call's record has the fields of its own call, worked out here from
    its index, corr increasing (one more in most calls), each kernel linked
    to its call; with
    short flushes (many runs and frames) and CUPTI, and without CUPTI."""
    n = 5000
    for extra in ({"GPUPHASE_FLUSH_MS": "5"},
                  {"GPUPHASE_CUPTI": "0", "GPUPHASE_QUIET": "1"}):
        d = workdir()
        p = run([prog("e2e-prog-repeat"), str(n)], d, extra, timeout=100)
        check(p.returncode == 0 and p.stdout.strip() == f"launches {n}",
              f"program: {p.stdout!r} {p.stderr!r}")
        recs, _ = dump(traces(d)[0])
        lost = sum(r["count"] for r in by_kind(recs, "lost"))
        ls = [c for c in api_calls(recs) if c["fn"] == "cudaLaunchKernel"]
        check(len(ls) == n and lost == 0, f"{len(ls)} launches recorded, {lost} lost, of {n}")
        cupti = "GPUPHASE_CUPTI" not in extra
        # the calls in order: i from the position where none is lost
        func = {}
        streams = {}
        prev = None
        steps = 0
        for i, c in enumerate(ls):
            check(c["grid"] == (2 if i % 10 in (4, 5) else 1) and c["block"] == 32,
                  f"call {i}: grid {c['grid']} block {c['block']}")
            check(c["bytes"] == (64 if i % 17 == 3 else 0), f"call {i}: bytes {c['bytes']}")
            fk = i % 19 == 11
            check(func.setdefault(fk, c["func"]) == c["func"], f"call {i}: func {c['func']}")
            sk = i % 13 == 7
            check(streams.setdefault(sk, c["stream"]) == c["stream"],
                  f"call {i}: stream {c['stream']}")
            check(c["ret"] == 0 and c["end"] >= c["start"], f"call {i}: {c}")
            if prev is not None:
                check(c["start"] >= prev["end"], f"call {i} starts before call {i - 1} ended")
                if cupti:
                    check(c["corr"] > prev["corr"], f"call {i}: corr {c['corr']} after {prev['corr']}")
                    steps += c["corr"] == prev["corr"] + 1
            prev = c
        check(len(func) == 2 and func[True] != func[False], f"functions {func}")
        check(len(streams) == 2 and streams[True] != streams[False], f"streams {streams}")
        if cupti:
            check(steps > n // 2, f"corr one more in {steps} of {n} calls")
            kernels = by_kind(recs, "kernel")
            corrs = {c["corr"] for c in ls}
            check(len(kernels) == n, f"{len(kernels)} kernels")
            bad = [k for k in kernels if k["corr"] not in corrs]
            check(not bad, f"{len(bad)} kernels without their call, e.g. {bad[:1]}")


TESTS = {"basic": t_basic, "ordered": t_ordered, "fork": t_fork, "forknocuda": t_forknocuda,
         "forkchain": t_forkchain,
         "exit_codes": t_exit_codes, "abort": t_abort, "sigkill": t_sigkill,
         "ctypes": t_ctypes, "cupti_busy": t_cupti_busy, "disable": t_disable, "switches": t_switches,
         "run_tool": t_run_tool, "run_ignored": t_run_ignored,
         "run_signals": t_run_signals, "run_lib_space": t_run_lib_space, "run_stop": t_run_stop, "errno": t_errno, "signal_oneshot": t_signal_oneshot, "warn_one_line": t_warn_one_line, "exec": t_exec, "exec_fd": t_exec_fd, "nvtx": t_nvtx, "othertool": t_othertool, "othertool_activity": t_othertool_activity,
         "spawn": t_spawn, "cupti_loaded": t_cupti_loaded,
         "abi12": t_abi12, "output": t_output,
         "lost": t_lost, "start_race": t_start_race, "threads": t_threads, "items": t_items, "prerange": t_prerange, "prerange_start": t_prerange_start, "prerange_mem": t_prerange_mem,
         "quiet_io": t_quiet_io, "run_id": t_run_id,
         "signals": t_signals, "signal_starting": t_signal_starting,
         "signal_opening": t_signal_opening,
         "signal_setters": t_signal_setters,
         "signal_inside_call": t_signal_inside_call, "handlers": t_handlers, "disk_full": t_disk_full,
         "warn_long": t_warn_long, "run_badout": t_run_badout, "churn": t_churn,
         "exit_thread": t_exit_thread, "launch_dims": t_launch_dims, "repeats": t_repeats,
         "driver_cupti": t_driver_cupti, "ctx_device": t_ctx_device,
         "driver_managed": t_driver_managed,
         "thread_names": t_thread_names, "closed_fd": t_closed_fd,
         "closed_std": t_closed_std,
         "vfork": t_vfork, "main_exit": t_main_exit, "altstack": t_altstack}

if __name__ == "__main__":
    sys.exit(main(TESTS))

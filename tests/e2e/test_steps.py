"""Steps on the simulated GPU: prog_steps.c runs a loop whose per-step
composition is known from the model (tests/simcuda/README.md): K kernels
of BLOCKS blocks take K x ceil(BLOCKS / 132) x 10 us; a pageable H2D copy of
B bytes 2000 + B / 25 ns. Host time (the sleep, the calls) is real time:
bounds add what the program measured (its "slept" line) and a margin."""
import json
import subprocess
import sys

from gptest import (REPORT, RUN, check, env, kernel_ns, copy_ns, PCIE_GBPS,
                    main, prog, run, traces, workdir)

STEPS = 12
SLACK_NS = 20_000_000  # calls, wake-ups and a loaded machine, per step


def steps_run(args, extra=None, tool=True):
    """Runs prog_steps under `gpuphase run` (which also injects NVTX);
    returns (trace files, slept ns per step)."""
    d = workdir()
    extra = dict(extra or {}, MALLOC_PERTURB_=None)
    cmd = [prog("e2e-prog-steps")] + [str(a) for a in args]
    if tool:
        p = run([RUN, "run", "-o", d + "/t-%p.gph", "--"] + cmd, d, extra, preload=False,
                timeout=100)
    else:
        p = run(cmd, d, extra, timeout=100)
    check(p.returncode == 0, f"{args}: failed ({p.returncode}): {p.stderr.strip()}")
    last = p.stdout.splitlines()[-1].split()
    vals = dict(f.split("=") for f in last)
    n = int(vals["steps"])
    files = traces(d)
    check(len(files) == 1, f"{args}: one trace expected, got {files}")
    return files, int(vals["slept"]) / max(n, 1)


def report(files, *opts):
    p = subprocess.run([REPORT, "--format", "json", *opts] + files,
                       capture_output=True, text=True, timeout=60,
                       env=env(preload=False))
    check(p.returncode == 0, f"report failed ({p.returncode}): {p.stderr.strip()}")
    return json.loads(p.stdout)["steps"]


def within(what, v, lo, hi):
    check(lo <= v <= hi, f"{what} = {v}, expected in [{lo}, {hi}]")


def counters(s):
    return {k: v["median"] for k, v in s["per_step"]["counters"].items()}


def t_named():
    """--step with a range: 12 steps, 3 warm-up, each 2 ms sleep + 2 x 1 ms
    kernels + a synchronisation; the kernels run inside the step."""
    files, slept = steps_run(["-n", STEPS, "-s", 2, "-k", 2, "-b", 13200, "-m", "range"])
    s = report(files, "--step", "st?p")
    check(s["source"] == "named" and s["name"] == "st?p", f"source {s['source']} {s['name']}")
    check(s["found"] == STEPS and s["warmup"] == 3 and s["count"] == STEPS - 3,
          f"found {s['found']} warmup {s['warmup']} count {s['count']}")
    kern = 2 * kernel_ns(13200)
    within("median step", s["median_ns"], kern + 2_000_000, kern + slept + SLACK_NS)
    br = s["per_step"]["breakdown"]
    check(br["kernel"]["median_ns"] == kern, f"kernel per step {br['kernel']}")
    check(br["transfer"]["median_ns"] == 0, f"transfer per step {br['transfer']}")
    within("host wait per step", br["host_wait"]["median_ns"], 2_000_000,
           slept + SLACK_NS)
    c = counters(s)
    want = {"launches": 2, "kernels": 2, "kernel_ns": kern, "syncs": 1,
            "distinct_kernels": 1, "pageable_copies": 0, "h2d_copies": 0}
    for k, v in want.items():
        check(c[k] == v, f"per-step {k} = {c[k]}, expected {v}")
    check(s["p95_ns"] >= s["median_ns"] and s["max_ns"] >= s["p95_ns"], "distribution order")
    check(abs(s["per_s"] - s["count"] / (s["span_ns"] / 1e9)) < 1e-3 * s["per_s"], "per_s")
    check(s["items_per_s"] is None, "items without items")
    # 9 measured steps x 2 ms of kernel: 4.5 steps per busy second... per
    # second of busy time = count / (count x kern / 1e9)
    check(abs(s["per_busy_s"] - 1e9 / kern) < 1e-6 * s["per_busy_s"], f"per_busy_s {s['per_busy_s']}")
    # --warmup 0 counts them all
    s0 = report(files, "--step", "step", "--warmup", "0")
    check(s0["count"] == STEPS and s0["warmup"] == 0, f"--warmup 0: {s0['count']}")


def t_repeated():
    """Without --step: the step range found alone (NVTX ranges too)."""
    files, _ = steps_run(["-n", STEPS, "-k", 1, "-b", 1320, "-m", "nvtx"])
    s = report(files)
    check(s["source"] == "repeated_range" and s["name"] == "step", f"{s['source']} {s['name']}")
    check(s["found"] == STEPS, f"found {s['found']}")


def t_profiler():
    """PyTorch profiler's names ProfilerStep#0, #1, ... are one sequence."""
    files, _ = steps_run(["-n", STEPS, "-k", 1, "-b", 1320, "-m", "profiler"])
    s = report(files)
    check(s["source"] == "profiler_step", f"source {s['source']}")
    check(s["found"] == STEPS, f"found {s['found']}")


def t_two():
    """Two top-level ranges a step: the one that covers most (the 5 ms
    "data" sleep against 1 ms of kernels) is the step."""
    files, _ = steps_run(["-n", STEPS, "-s", 5, "-k", 1, "-b", 13200, "-m", "two"])
    s = report(files)
    check(s["source"] == "repeated_range" and s["name"] == "data", f"{s['source']} {s['name']}")
    s = report(files, "--step", "compute")
    c = counters(s)
    check(c["kernels"] == 1 and c["syncs"] == 1, f"compute step counters {c}")


def t_heuristic():
    """No ranges: a step ends at each return of cudaStreamSynchronize (one a
    step), so 24 synchronisations cut 23 steps; too few of them, none. The
    loop (24 x 3 ms) must stretch over half of the window, start-up
    included, however slow the start-up of a loaded machine."""
    n = 2 * STEPS  # more intervals: their quartiles shrug off a loaded machine
    files, slept = steps_run(["-n", n, "-s", 2, "-k", 1, "-b", 13200, "-m", "none"])
    s = report(files)
    check(s["source"] == "heuristic" and s["name"] == "cudaStreamSynchronize",
          f"{s['source']} {s['name']}: {s['how']}")
    check("heuristic" in s["how"], f"how: {s['how']}")
    check(s["found"] == n - 1, f"found {s['found']}")
    within("median step", s["median_ns"], kernel_ns(13200) + 2_000_000,
           kernel_ns(13200) + slept + SLACK_NS)
    files, _ = steps_run(["-n", 4, "-k", 1, "-b", 132, "-m", "none"])
    s = report(files)
    check(s["source"] == "none" and s["count"] == 0 and s["median_ns"] is None,
          f"4 steps: {s['source']} {s['count']}")
    check("no steps found" in s["how"], f"how: {s['how']}")
    # one file: the top-level steps are its own, the reason included
    p = subprocess.run([REPORT, "--format", "json"] + files, capture_output=True,
                       text=True, timeout=60, env=env(preload=False))
    j = json.loads(p.stdout)
    check(j["steps"] == j["processes"][0]["steps"] and j["steps"]["pid"] == j["processes"][0]["pid"],
          f"top-level steps {j['steps']} against the process's {j['processes'][0]['steps']}")


def t_launches():
    """No ranges and no synchronising call in the loop: a step starts at each
    launch of the first kernel of the launches that repeat. k_step and
    k_extra are launched once a step, k_step first: 24 launches cut 23 steps
    of the 2 ms sleep and the two launches. With k_step launched twice a
    step (its intervals alternate microseconds and the sleep: not regular),
    k_extra's launches cut them."""
    n = 2 * STEPS
    files, slept = steps_run(["-n", n, "-s", 2, "-k", 1, "-b", 1320, "-m", "none",
                              "-y", "-x"])
    s = report(files)
    check(s["source"] == "heuristic" and s["name"] == "k_step",
          f"{s['source']} {s['name']}: {s['how']}")
    check("launch of the kernel 'k_step'" in s["how"], f"how: {s['how']}")
    check(s["found"] == n - 1, f"found {s['found']}")
    within("median step", s["median_ns"], 2_000_000, slept + SLACK_NS)
    c = counters(s)
    check(c["launches"] == 2 and c["kernels"] == 2 and c["syncs"] == 0,
          f"launch step counters {c}")
    check(c["kernel_ns"] == kernel_ns(1320) + kernel_ns(1),
          f"kernel_ns {c['kernel_ns']}")
    files, _ = steps_run(["-n", n, "-s", 2, "-k", 2, "-b", 1320, "-m", "none",
                          "-y", "-x"])
    s = report(files)
    check(s["source"] == "heuristic" and s["name"] == "k_extra",
          f"{s['source']} {s['name']}: {s['how']}")
    check(s["found"] == n - 1, f"found {s['found']}")
    check(counters(s)["launches"] == 3, f"launches {counters(s)}")


def t_launch_range():
    """A range around the kernel launches alone, the synchronisation after
    it: the kernels (2 x 1 ms) run after the range ends, so it times the
    launch calls, not the steps, and is not taken; the synchronising call
    is, with the reason said. --step takes the range all the same."""
    n = 2 * STEPS
    files, slept = steps_run(["-n", n, "-s", 2, "-k", 2, "-b", 13200, "-m", "launches"])
    s = report(files)
    check(s["source"] == "heuristic" and s["name"] == "cudaStreamSynchronize",
          f"{s['source']} {s['name']}: {s['how']}")
    check("the top-level range 'step' repeats" in s["how"]
          and "it times the launch calls" in s["how"], f"how: {s['how']}")
    kern = 2 * kernel_ns(13200)
    within("median step", s["median_ns"], kern + 2_000_000, kern + slept + SLACK_NS)
    check(counters(s)["kernel_ns"] == kern, f"kernel_ns {counters(s)}")
    s = report(files, "--step", "step")
    check(s["source"] == "named" and s["median_ns"] < 1_000_000,
          f"--step: {s['source']} {s['median_ns']}")


def t_items():
    """items/s from gpuphase_step_items and from GPUPHASE_STEP_ITEMS."""
    files, _ = steps_run(["-n", STEPS, "-k", 1, "-b", 1320, "-i", 32])
    s = report(files)
    check(counters(s)["items"] == 32, f"items {counters(s)['items']}")
    want = 32 * s["count"] / (s["span_ns"] / 1e9)
    check(abs(s["items_per_s"] - want) < 1e-3 * want, f"items/s {s['items_per_s']} vs {want}")
    files, _ = steps_run(["-n", STEPS, "-k", 1, "-b", 1320],
                         extra={"GPUPHASE_STEP_ITEMS": "16"})
    s = report(files)
    check(s["items_fixed"] == 16 and counters(s)["items"] == 16, f"fixed items {s['items_fixed']}")
    want = 16 * s["count"] / (s["span_ns"] / 1e9)
    check(abs(s["items_per_s"] - want) < 1e-3 * want, f"fixed items/s {s['items_per_s']}")


def t_pageable():
    """One pageable 1 MB H2D copy a step: counted, and its device time by
    correlation is the model's."""
    files, _ = steps_run(["-n", STEPS, "-k", 1, "-b", 1320, "-p", 1, "-B", 1000000])
    s = report(files)
    c = counters(s)
    want = {"h2d_copies": 1, "h2d_bytes": 1000000, "pageable_copies": 1,
            "xfer_ns": copy_ns(1000000, PCIE_GBPS)}
    for k, v in want.items():
        check(c[k] == v, f"per-step {k} = {c[k]}, expected {v}")


def t_text():
    """The text report shows the steps section with the measured median,
    and the warm-up left out, which the HTML page shows the same."""
    files, _ = steps_run(["-n", STEPS, "-k", 1, "-b", 13200, "-i", 8])
    p = subprocess.run([REPORT] + files, capture_output=True, text=True, timeout=60,
                       env=env(preload=False))
    check(p.returncode == 0, f"report failed: {p.stderr}")
    lines = p.stdout.splitlines()
    head = [ln for ln in lines if ln.startswith("Steps ")]
    check(head == [f"Steps {STEPS} 'step'  (repeated_range)"], f"steps line {head}")
    check(any(ln.strip().startswith(f"{STEPS - 3} measured: median") for ln in lines),
          "no measured line")
    check(any("items/s" in ln for ln in lines), "no items/s")
    check(any(ln.strip().startswith("slowest: #") for ln in lines), "no slowest line")
    check(all(len(ln) <= 100 for ln in lines), "a line over 100 columns")
    # the warm-up line, and the HTML page says it too (it once left it out)
    warm = [ln.strip() for ln in lines if ln.strip().startswith("warm-up 3 steps left out")]
    check(len(warm) == 1, f"warm-up line {warm}")
    h = subprocess.run([REPORT, "-f", "html"] + files, capture_output=True, text=True,
                       timeout=60, env=env(preload=False))
    check(h.returncode == 0 and warm and warm[0] in h.stdout,
          f"the HTML lacks the text's {warm}")


TESTS = {"named": t_named, "repeated": t_repeated, "profiler": t_profiler,
         "two": t_two, "heuristic": t_heuristic, "launches": t_launches,
         "launch-range": t_launch_range,
         "items": t_items,
         "pageable": t_pageable, "text": t_text}

if __name__ == "__main__":
    sys.exit(main(TESTS))

"""gpuphase-report compare and check end to end on the simulated GPU:
prog_steps.c runs a loop whose device time per step the model gives
exactly (tests/simcuda/README.md): K kernels of B blocks take
K x ceil(B / 132) x GPUSIM_WAVE_NS, so 2 kernels of 13200 blocks are 2 ms
a step by default and 2.5 ms with GPUSIM_WAVE_NS=12500 (+25%: far enough
above the 5% threshold that three runs a side, on a loaded machine or
under a sanitizer, still tell it from noise). Host time
(the sleep, wake-ups) is real time, so bounds on it leave a margin. Each
run is one `gpuphase run` (its own run id); the sides are run interleaved,
A B A B A B, as docs/ci.md asks of a CI job."""
import json
import os
import re
import subprocess
import sys
import xml.etree.ElementTree as ET

from gptest import (ab_runs, check, kernel_ns, main, prog, profile, report_cmd,
                    traces, workdir)

N = 24            # steps a run; the first 3 are warm-up
MEASURED = N - 3


def steps_cmd(n):
    """prog_steps: n steps of 2 kernels of 13200 blocks (2 ms a step)."""
    return [prog("e2e-prog-steps"), "-n", n, "-k", 2, "-b", 13200]


STEP = steps_cmd(N)
KERNEL_NS = 2 * kernel_ns(13200)  # per step, default model: 2 ms
SLOW_WAVE = {"GPUSIM_WAVE_NS": "12500"}
SLOW_KERNEL_NS = KERNEL_NS * 5 // 4


def compare(a, b, *opts, extra=None):
    return report_cmd(["compare", *opts] + a + ["--vs"] + b, extra)


def runs(cmd, n, extra=None):
    """N runs of one side only."""
    d = workdir()
    for _ in range(n):
        profile(cmd, d, extra)
    return traces(d)


def as_json(p, rc=None):
    """The JSON output; rc None: any verdict's exit code."""
    ok = p.returncode in (0, 1, 3) if rc is None else p.returncode == rc
    if not ok:
        try:  # say why: the verdict's reason and the primary metric
            j = json.loads(p.stdout)
            why = f"{j.get('verdict')}: {j.get('reason')}; {j.get('metrics', [{}])[0]}"
        except (ValueError, IndexError, AttributeError):
            why = p.stdout[-2000:]
        check(False, f"exit {p.returncode}, expected {rc}: {p.stderr.strip()} {why}")
    return json.loads(p.stdout)


def cats(j):
    return {c["name"]: c for c in j["categories"]}


def counters(j):
    return {c["name"]: c for c in j["counters"]}


def t_kernels():
    """Kernels 25% longer: a regression, and the kernel and the kernel
    category carry exactly the model's +500 us a step."""
    a, b = ab_runs(STEP + ["-s", 0.2], STEP + ["-s", 0.2], 3, extra_b=SLOW_WAVE)
    j = as_json(compare(a, b, "--step", "step", "-f", "json"), 1)
    m = j["metrics"][0]
    check(j["verdict"] == "regression" and m["name"] == "step_median" and
          m["verdict"] == "regression", f"verdict {j['verdict']}: {m['reason']}")
    check(m["mode"] == "runs" and len(m["samples"]["base"]) == 3 and
          len(m["samples"]["new"]) == 3, f"samples {m['samples']}")
    # +25% of the kernel time is at most +25% of the step, and well above
    # the 5% threshold since the kernels are most of the step
    check(0.10 <= m["estimate"] <= 0.25 and m["interval"][0] > 0.02,
          f"estimate {m['estimate']} {m['interval']}")
    k = j["kernels"][0]
    check(k["name"] == "k_step" and k["base_ns"] == KERNEL_NS and
          k["new_ns"] == SLOW_KERNEL_NS, f"kernel row {k}")
    c = cats(j)["kernel"]
    check(c["base_ns"] == KERNEL_NS and c["new_ns"] == SLOW_KERNEL_NS, f"kernel category {c}")
    p = compare(a, b, "--step", "step")
    check(p.returncode == 1, f"text: exit {p.returncode}")
    lines = p.stdout.splitlines()
    at = lines.index("Kernels by change per step")
    check(lines[at + 2].split()[0] == "k_step", f"kernel named: {lines[at:at + 3]}")


def t_host_wait():
    """A longer host sleep (data loading): a regression whose change is
    host wait; the kernel time per step is unchanged to the ns."""
    a, b = ab_runs(STEP + ["-s", 0.5], STEP + ["-s", 2], 3)
    j = as_json(compare(a, b, "-f", "json", "--max-slowdown", "host_wait=10%"), 1)
    m = {x["name"]: x for x in j["metrics"]}
    check(m["step_median"]["verdict"] == "regression", m["step_median"]["reason"])
    check(m["host_wait"]["verdict"] == "regression", m["host_wait"]["reason"])
    c = cats(j)
    check(c["kernel"]["base_ns"] == KERNEL_NS == c["kernel"]["new_ns"], f"kernel {c['kernel']}")
    # the new side sleeps 2 ms a step; the base at least 0.5 ms, late by
    # wake-ups: leave it 0.5 ms
    check(c["host_wait"]["new_ns"] >= 2_000_000 and c["host_wait"]["delta_ns"] >= 1_000_000,
          f"host wait {c['host_wait']}")
    top = max(c.values(), key=lambda x: abs(x["delta_ns"]))
    check(top["name"] == "host_wait", f"largest change {top['name']}")
    p = compare(a, b)
    check(p.returncode == 1 and re.search(r"^  host wait .*\+\d", p.stdout, re.M),
          f"text: {p.returncode}\n{p.stdout}")


def t_pageable():
    """One pageable 1 MB H2D copy added a step: the counters say so
    exactly, and gate it with --exact."""
    a, b = ab_runs(STEP, STEP + ["-p", 1, "-B", 1000000], 3)
    p = compare(a, b)
    check(p.returncode in (0, 1, 3), f"exit {p.returncode}: {p.stderr}")
    for want in ["+1 pageable_copies per step (0 -> 1): device copies from or to pageable",
                 "+1 h2d_copies per step (0 -> 1)",
                 "+976.6 KiB h2d_bytes per step (0 B -> 976.6 KiB)",
                 "H2D: 0 -> 1 copies, 0 B -> 976.6 KiB"]:
        check(want in p.stdout, f"'{want}' not in\n{p.stdout}")
    j = as_json(compare(a, b, "-f", "json", "--exact", "pageable_copies"), 1)
    c = counters(j)
    pc = c["pageable_copies"]
    check(pc["base"] == 0 and pc["new"] == 1 and pc["exact"] and pc["gated"] and
          pc["verdict"] == "regression", f"pageable_copies {pc}")
    check(c["h2d_bytes"]["new"] == 1000000 and not c["h2d_bytes"]["gated"], f"{c['h2d_bytes']}")
    check(c["launches"]["base"] == c["launches"]["new"] == 2, f"launches {c['launches']}")
    # fewer pageable copies is no regression of the counter
    j = as_json(compare(b, a, "-f", "json", "--exact", "all", "--max-slowdown", "50%"), 0)
    check(all(x["verdict"] == "pass" for x in j["counters"]), "counters of b vs a")


def t_noise():
    """No false alarms: the same program against itself, 3 runs a side, ten
    times, while a CPU-hog process runs: never a regression. (One hog, as
    on a shared runner: with one per core on top of a loaded machine, the
    simulator's wake-ups from synchronisation come late by whole
    milliseconds, which three runs a side cannot tell from a change.)"""
    hogs = [subprocess.Popen([sys.executable, "-c", "while True: pass"])]
    codes = []
    try:
        for _ in range(10):
            a, b = ab_runs(steps_cmd(16) + ["-s", 0.2], steps_cmd(16) + ["-s", 0.2], 3)
            p = compare(a, b)
            check(p.returncode in (0, 3), f"false alarm: exit {p.returncode}\n{p.stdout}")
            codes.append(p.returncode)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
    print(f"exit codes of 10 self-comparisons under load: {codes}")


def one_line_error(p, what):
    err = p.stderr
    check(p.returncode == 2, f"{what}: exit {p.returncode}, expected 2: {err!r}")
    check(err.count("\n") == 1 and err.startswith("gpuphase-report "), f"{what}: stderr {err!r}")
    check("\x1b" not in err and "Sanitizer" not in err and "runtime error" not in err,
          f"{what}: {err!r}")


def t_exit_codes():
    """0 pass, 1 regression, 2 usage or input error, 3 inconclusive (and
    --inconclusive), different GPUs."""
    a, b = ab_runs(STEP, STEP, 3)
    p = compare(a, b, "--max-slowdown", "50%")
    check(p.returncode == 0, f"same program, 50% threshold: exit {p.returncode}\n{p.stdout}")
    # a slowdown, not a share: above 100% is a threshold like any other
    p = compare(a, b, "--max-slowdown", "500%")
    check(p.returncode == 0 and "500% threshold" in p.stdout,
          f"500% threshold: exit {p.returncode}\n{p.stdout}{p.stderr}")
    # One run a side: the steps are the samples and the result is advisory,
    # so nothing passes. The reason depends on where the interval falls
    # (advisory when it lies under the threshold; "too much variance" when
    # it spans it, as a loaded machine's noise can make it), the mode not.
    p = compare(a[:1], b[:1])
    check(p.returncode == 3 and "inconclusive (steps)" in p.stdout,
          f"1 vs 1: {p.returncode}\n{p.stdout}")
    m = as_json(compare(a[:1], b[:1], "-f", "json"), 3)["metrics"][0]
    check(m["mode"] == "steps" and m["advisory"] is True and
          m["verdict"] == "inconclusive", f"1 vs 1 (JSON): {m}")
    check(compare(a[:1], b[:1], "--inconclusive=pass").returncode == 0, "--inconclusive=pass")
    check(compare(a[:1], b[:1], "--inconclusive", "fail").returncode == 1, "--inconclusive fail")
    slow = runs(STEP + ["-s", 3], 1)
    p = compare(a[:1], slow)  # +140%: large enough to fail from one run a side
    check(p.returncode == 1, f"1 vs 1, +140%: exit {p.returncode}\n{p.stdout}")
    other = runs(STEP, 3, {"GPUSIM_SMS": "66"})
    p = compare(a, other)
    check(p.returncode == 3 and "different GPUs" in p.stdout, f"66 SMs: {p.returncode}\n{p.stdout}")
    # 13200 blocks on 66 SMs: 200 waves, twice the time
    check(compare(a, other, "--allow-different-devices").returncode == 1, "allowed: regression")
    d = workdir()
    empty, junk = os.path.join(d, "empty.gph"), os.path.join(d, "junk.gph")
    open(empty, "wb").close()
    with open(junk, "wb") as f:
        f.write(b"GPHTRACE" + bytes(range(256)) * 4)
    bad_budgets = os.path.join(d, "budgets")
    with open(bad_budgets, "w") as f:
        f.write("# ok\nhost_wait<=20%\nstep_p95<=12\n")
    x = a[0]
    for args in [["compare"], ["compare", x], ["compare", "--vs", x], ["compare", x, "--vs"],
                 ["compare", "--frobnicate", x, "--vs", x], ["compare", "-q", x, "--vs", x],
                 ["compare", "--max-slowdown", "five", x, "--vs", x],
                 ["compare", "--max-slowdown", "2000000%", x, "--vs", x],
                 ["compare", "--max-slowdown", "nosuch=5%", x, "--vs", x],
                 ["compare", "--max-slowdown", "pageable_copies=5%", x, "--vs", x],
                 ["compare", "--min-delta", "5%", x, "--vs", x],
                 ["compare", "--exact", "launches,nosuch", x, "--vs", x],
                 ["compare", "--inconclusive=maybe", x, "--vs", x],
                 ["compare", "-f", "xml", x, "--vs", x], ["compare", x, "--vs", x, "--vs", x],
                 ["compare", "--top", "0", x, "--vs", x], ["compare", "--max-slowdown"],
                 ["compare", "-j", "0", x, "--vs", x], ["compare", "--jobs", "2x", x, "--vs", x],
                 ["check", "--budget", "busy>=1%", "-j", "-1", x],
                 ["compare", "--budget", "bogus\x1b[31m<=1", x, "--vs", x],
                 ["compare", x, "--vs", os.path.join(d, "missing.gph")],
                 ["compare", x, "--vs", empty], ["compare", junk, "--vs", x],
                 ["compare", x, "--vs", d],
                 ["check", x], ["check", "--budget", "x<=1", x],
                 ["check", "--budget", "host_wait<=20", x],
                 ["check", "--budgets", os.path.join(d, "nope"), x],
                 ["check", "--budgets", bad_budgets, x],
                 ["check", "--budget", "busy>=1%", "--vs", x],
                 ["check", "--budget", "busy>=1%", "--max-slowdown", "5%", x],
                 ["check", "--budget", "busy>=1%"]]:
        one_line_error(report_cmd(args), args)
    p = report_cmd(["check", "--budgets", bad_budgets, x])
    check(f"{bad_budgets}:3: step_p95: " in p.stderr, f"file:line in {p.stderr!r}")
    # a duration counter is named as the counter it is (it was called
    # "not a time or a rate")
    p = report_cmd(["compare", "--max-slowdown", "kernel_ns=5%", x, "--vs", x])
    check(p.returncode == 2 and "kernel_ns is a per-step counter: --exact" in p.stderr,
          f"kernel_ns=5%: {p.stderr!r}")
    for sub in ("compare", "check"):
        p = report_cmd([sub, "--help"])
        check(p.returncode == 0 and p.stdout.startswith(f"Usage: gpuphase-report {sub}"),
              f"{sub} --help")


def t_budgets():
    """check on one run (and three): budgets whose values the model fixes."""
    d = workdir()
    run1 = profile(STEP + ["-s", 0.5, "-i", 32], d)
    bud = os.path.join(d, "budgets.txt")
    with open(bud, "w") as f:
        f.write("# 2 kernels of 1 ms a step, exactly\n"
                "kernel>=2ms\n"
                "kernel <= 2 ms   # both ways\n"
                "\n"
                "launches==2\nsyncs==1\npageable_copies==0\nlost_events==0\n"
                "mem_peak<=1MB   # one cudaMalloc of 1e6 B\n"
                "items_per_s>=1\nbusy>=10%\nhost_wait<=99%\nstep_p95<=1s\n")
    j = as_json(report_cmd(["check", "--budgets", bud, "-f", "json"] + run1), 0)
    check(j["kind"] == "check" and j["verdict"] == "pass" and j["base"] is None, "check pass")
    b = {x["expression"]: x for x in j["budgets"]}
    check(len(b) == 11 and all(x["verdict"] == "pass" for x in b.values()), f"budgets {b}")
    check(b["kernel>=2ms"]["value"] == KERNEL_NS and b["mem_peak<=1MB"]["value"] == 1000000,
          f"values {b['kernel>=2ms']} {b['mem_peak<=1MB']}")
    check(b["launches==2"]["where"] == f"{bud}:5", f"where {b['launches==2']['where']}")
    p = report_cmd(["check", "--budget", "mem_peak<1MB", "--budget", "kernel<2ms"] + run1)
    check(p.returncode == 1 and p.stdout.count("exceeded") == 2 and
          p.stdout.startswith("gpuphase check: BUDGET EXCEEDED (exit 1)"), f"exceeded:\n{p.stdout}")
    run2 = profile(STEP, workdir())  # no items
    p = report_cmd(["check", "--budget", "items_per_s>=1"] + run2)
    check(p.returncode == 3 and "no items counted" in p.stdout, f"no items: {p.returncode}")
    check(report_cmd(["check", "--budget", "items_per_s>=1", "--inconclusive=pass"] +
                     run2).returncode == 0, "--inconclusive=pass")
    a, b3 = ab_runs(STEP + ["-s", 0.5], STEP + ["-s", 0.5], 3)
    p = report_cmd(["check", "--budget", "host_wait<=1%"] + b3)
    check(p.returncode == 1 and "(median of 3 runs)" in p.stdout, f"3 runs:\n{p.stdout}")
    p = compare(a, b3, "--max-slowdown", "50%", "--budget", "host_wait<=1%")
    check(p.returncode == 1 and "budget host_wait<=1%" in p.stdout, f"compare budget:\n{p.stdout}")


def norm(s):
    """Numbers become '#', runs of blanks one blank."""
    return re.sub(r"\d+", "#", re.sub(r"[ \t]+", " ", s)).strip()


def t_text():
    """The text output: one screen of at most 100 columns, its sections in
    order, the model's exact figures, other numbers normalised."""
    a, b = ab_runs(STEP + ["-s", 0.2], STEP + ["-s", 0.2], 3, extra_b=SLOW_WAVE)
    p = compare(a, b, "--step", "step")
    check(p.returncode == 1, f"exit {p.returncode}")
    lines = p.stdout.splitlines()
    check(len(lines) <= 50 and all(len(x) <= 100 for x in lines), "more than one screen")
    # the verdict's reason is wrapped to 100 columns: its lines as one
    while len(lines) > 2 and lines[2].startswith("    ") and lines[2][4] != " ":
        lines[1] += " " + lines.pop(2).strip()
    n = [norm(x) for x in lines]
    want = ["gpuphase compare: REGRESSION (exit #)",
            "step_median: +#.#% [+#.#%, +#.#%]: above the #% noise floor and at or over the "
            "#% threshold",
            "Runs", "base new", "runs # runs, # files same",
            "steps step (named), # measured a run same",
            "GPU gpuphase-sim, # SMs, #.# GiB same",
            "Gates", "gate base new change #% interval verdict",
            "Time per step, per GPU", "category base new delta points",
            "Kernels by change per step", "kernel base new delta"]
    at = 0
    for w in want:
        check(w in n[at:], f"'{w}' missing (or out of order) in\n{p.stdout}")
        at = n.index(w, at) if w in n[at:] else at
    check(f"steps step (named), {MEASURED} measured a run same" in
          [re.sub(r"\s+", " ", x).strip() for x in lines], "21 measured steps")
    flat = [re.sub(r"\s+", " ", x).strip() for x in lines]
    check(any(re.fullmatch(r"kernel 2\.0 ms 2\.5 ms \+500\.0 us [+-]\d+\.\d", x) for x in flat),
          "kernel category row")
    check("k_step 2.0 ms 2.5 ms +500.0 us" in flat, "kernel row")
    check(any(re.fullmatch(r"step_median [\d.]+ ms [\d.]+ ms \+\d+\.\d% \[\+\d+\.\d%, \+\d+\.\d%\]"
                           r" regression", x) for x in flat), "gate row")
    # markdown: the same sections as tables, and the step summary
    summary = os.path.join(workdir(), "summary.md")
    p = compare(a, b, "--step", "step", "-f", "markdown", extra={"GITHUB_STEP_SUMMARY": summary})
    check(p.returncode == 1 and p.stdout.startswith("### gpuphase compare: REGRESSION (exit 1)"),
          f"markdown: {p.returncode}")
    markdown_tables(p.stdout)
    check("| k\\_step | 2.0 ms | 2.5 ms | +500.0 us |" in p.stdout, "markdown kernel row")
    with open(summary) as f:
        check(f.read() == p.stdout, "step summary = the markdown")
    compare(a, b, "--step", "step", "-f", "markdown", extra={"GITHUB_STEP_SUMMARY": summary})
    with open(summary) as f:
        check(f.read() == p.stdout * 2, "appended, not overwritten")


def markdown_tables(md):
    """Every table: a header, a separator of as many columns, rows of as
    many cells."""
    lines = md.splitlines()
    titles = [x for x in lines if x.startswith("#### ")]
    check(titles[:3] == ["#### Runs", "#### Gates", "#### Time per step, per GPU"],
          f"titles {titles}")
    cells = lambda x: len(re.split(r"(?<!\\)\|", x)) - 2  # noqa: E731
    for i, x in enumerate(lines):
        if x.startswith("|") and (i == 0 or not lines[i - 1].startswith("|")):
            sep = lines[i + 1]
            check(re.fullmatch(r"(\|-{3}:?)+\|", sep) and cells(sep) == cells(x),
                  f"table at {x!r}: separator {sep!r}")
            for y in lines[i + 2:]:
                if not y.startswith("|"):
                    break
                check(cells(y) == cells(x), f"row {y!r} of {x!r}")


def t_junit():
    """JUnit, parsed: a testcase per gate, failures and skips counted; and
    GitHub annotations."""
    a, b = ab_runs(STEP, STEP, 3, extra_b=SLOW_WAVE)
    out = os.path.join(workdir(), "junit.xml")
    p = compare(a, b, "--exact", "all", "--budget", "lost_events==0", "--budget", "kernel<=2ms",
                "--junit", out, extra={"GITHUB_ACTIONS": "true"})
    check(p.returncode == 1, f"exit {p.returncode}")
    root = ET.parse(out).getroot()
    suite = root.find("testsuite")
    cases = suite.findall("testcase")
    names = {(c.get("classname"), c.get("name")): c for c in cases}
    check(("gpuphase.compare", "step_median") in names and
          names[("gpuphase.compare", "step_median")].find("failure") is not None, "step_median")
    check(names[("gpuphase.budget", "kernel<=2ms")].find("failure") is not None, "kernel budget")
    check(names[("gpuphase.budget", "lost_events==0")].find("failure") is None, "lost_events")
    exact = [c for c in cases if c.get("classname") == "gpuphase.exact"]
    check(len(exact) >= 10 and all(c.find("failure") is None for c in exact), "exact counters")
    fails = sum(c.find("failure") is not None for c in cases)
    skips = sum(c.find("skipped") is not None for c in cases)
    for el in (root, suite):
        check(int(el.get("tests")) == len(cases) and int(el.get("failures")) == fails and
              int(el.get("skipped")) == skips, f"counts of {el.tag}: {el.attrib}")
    ann = [x for x in p.stderr.splitlines() if x.startswith("::")]
    check(any(x.startswith("::error title=gpuphase%3A step_median regression::+") for x in ann) and
          any(x.startswith("::error title=gpuphase%3A kernel<=2ms exceeded::") for x in ann) and
          len(ann) <= 10, f"annotations {ann}")
    # one run a side is advisory, never a pass: inconclusive, whatever a
    # loaded machine does to the two runs of the same program
    p = compare(a[:1], a[1:2], "--junit", out)
    cases = ET.parse(out).getroot().find("testsuite").findall("testcase")
    check(p.returncode == 3 and len(cases) == 1 and cases[0].find("skipped") is not None,
          "inconclusive: skipped")
    # a JUnit file that cannot be written: exit 2 and one line, and no
    # verdict printed before it that says otherwise ("REGRESSION (exit 1)")
    p = compare(a, b, "--junit", os.path.join(workdir(), "no", "such", "j.xml"))
    check(p.returncode == 2 and p.stdout == "" and len(p.stderr.splitlines()) == 1
          and "cannot write" in p.stderr, f"unwritable junit: {p.returncode} {p.stdout[:80]!r} {p.stderr!r}")


TYPES = {"schema": int, "kind": str, "verdict": str, "exit_code": int, "reason": str,
         "primary": str, "options": dict, "metrics": list, "counters": list,
         "explained_per": str, "categories": list, "kernels": list, "api": list,
         "findings": dict, "budgets": list,
         "devices_differ": bool, "notes": list, "base": dict, "new": dict}
NUM = (int, float)
METRIC = {"name": str, "unit": str, "primary": bool, "higher_is_better": bool, "mode": str,
          "advisory": bool, "base": NUM, "new": NUM, "estimate": NUM, "interval": list,
          "delta": NUM, "confidence": NUM, "resamples": int, "samples": dict,
          "threshold": NUM, "noise_floor": NUM, "min_delta": NUM, "verdict": str, "reason": str}
COUNTER = {"name": str, "base": NUM, "new": NUM, "change": NUM, "exact": bool, "gated": bool,
           "verdict": str, "text": (str, type(None))}
ROW = {"name": str, "base_ns": NUM, "new_ns": NUM, "delta_ns": NUM, "new": bool,
       "vanished": bool}
RUN = {"id": str, "file": str, "files": int, "steps": dict, "window_ns": int,
       "lost_events": int, "mem_peak_bytes": int, "device": str, "sms": int,
       "memory_bytes": int, "gpus": int, "driver_version": int, "runtime_version": int,
       "command": str, "host": str, "degraded": bool, "truncated": bool}


def typed(what, obj, spec):
    check(set(obj) == set(spec), f"{what}: keys {sorted(obj)} != {sorted(spec)}")
    for k, t in spec.items():
        check(isinstance(obj[k], t) and not (t is int and isinstance(obj[k], bool)),
              f"{what}.{k} = {obj[k]!r}, expected {t}")


def t_json():
    """The JSON schema (docs/compare.md): keys and types, and what the
    values must satisfy."""
    a, b = ab_runs(STEP + ["-x"], STEP + ["-r"], 3)
    j = as_json(compare(a, b, "-f", "json", "--budget", "busy>=1%",
                        "--max-slowdown", "host_wait=10%"))
    typed("top", j, TYPES)
    check(j["explained_per"] == "step", f"explained_per {j['explained_per']!r}")
    check(j["schema"] == 1 and j["kind"] == "compare" and
          j["verdict"] in ("pass", "regression", "inconclusive"), "schema, kind, verdict")
    check(j["exit_code"] == {"pass": 0, "regression": 1, "inconclusive": 3}[j["verdict"]],
          "exit code of the verdict")
    for m in j["metrics"]:
        typed(f"metric {m['name']}", m, METRIC)
        lo, hi = m["interval"]
        check(lo <= m["estimate"] <= hi, f"{m['name']}: {lo} <= {m['estimate']} <= {hi}")
        check(len(m["samples"]["base"]) == m["samples"]["base_count"] == 3, "samples")
        check(m["verdict"] in ("pass", "regression", "inconclusive"), m["verdict"])
    check([m["name"] for m in j["metrics"]] == ["step_median", "host_wait"], "gated metrics")
    for c in j["counters"]:
        typed(f"counter {c['name']}", c, COUNTER)
    check({c["name"] for c in j["categories"]} ==
          {"kernel", "transfer", "launch", "sync_idle", "host_wait"}, "categories")
    for r in j["kernels"] + j["api"]:
        typed(f"row {r['name']}", r, ROW)
    k = {r["name"]: r for r in j["kernels"]}
    # -x adds k_extra (1 block: 10 us a step) to the base; -r renames k_step
    check(k["k_extra"]["vanished"] and k["k_extra"]["base_ns"] == kernel_ns(1), f"{k}")
    check(k["k_step_renamed"]["new"] and k["k_step"]["vanished"] and
          k["k_step_renamed"]["new_ns"] == KERNEL_NS, f"{k}")
    check(counters(j)["distinct_kernels"]["base"] == 2 and
          counters(j)["distinct_kernels"]["new"] == 1, "distinct kernels")
    typed("budget", j["budgets"][0], {"expression": str, "metric": str, "op": str,
                                      "limit": NUM, "unit": str, "value": NUM, "verdict": str,
                                      "reason": str, "where": str})
    check(set(j["findings"]) == {"appeared", "disappeared"}, "findings")
    for side in ("base", "new"):
        check(j[side]["runs_count"] == 3 and len(j[side]["runs"]) == 3, f"{side} runs")
        for r in j[side]["runs"]:
            typed(f"{side} run", r, RUN)
            check(r["steps"]["measured"] == MEASURED and r["device"] == "gpuphase-sim", "run")
    check(len({r["id"] for r in j["base"]["runs"] + j["new"]["runs"]}) == 6, "run ids")
    c = as_json(report_cmd(["check", "--budget", "busy>=1%", "-f", "json"] + b), 0)
    check(c["kind"] == "check" and c["base"] is None and c["metrics"] == [] and
          c["primary"] is None, "check's JSON")


def t_runs():
    """Two processes a run (one run id): the run is one sample, its value
    the slower process's median."""
    both = ["sh", "-c", " ".join(str(x) for x in STEP + ["-s", 1]) + " & " +
            " ".join(str(x) for x in STEP) + "; wait"]
    a, b = ab_runs(both, both, 3)
    check(len(a) == 6 and len(b) == 6, f"traces {len(a)} {len(b)}")
    j = as_json(compare(a, b, "-f", "json", "--max-slowdown", "50%"), 0)
    for side in ("base", "new"):
        runs = j[side]["runs"]
        check(len(runs) == 3 and all(r["files"] == 2 for r in runs), f"{side}: {runs}")
        # the sleeping process: 1 ms + 2 ms of kernels a step at least
        check(all(r["steps"]["median_ns"] >= 1_000_000 + KERNEL_NS for r in runs),
              f"{side}: medians {[r['steps']['median_ns'] for r in runs]}")
    # -j: the files read at once, the verdict word for word that of one
    # thread, whatever the threads (12 files: fewer, as many, more)
    outs = [compare(a, b, "-f", "json", "--max-slowdown", "50%", "-j", n)
            for n in ("1", "3", "12", "40")]
    check(all(p.returncode == 0 and p.stdout == outs[0].stdout for p in outs),
          f"-j 1, 3, 12, 40: exits {[p.returncode for p in outs]}, "
          f"same output {[p.stdout == outs[0].stdout for p in outs]}")
    outs = [report_cmd(["check", "--budget", "busy>=1%", "-j", n] + b)
            for n in ("1", "4")]
    check(outs[0].returncode == 0 and outs[1].stdout == outs[0].stdout,
          f"check -j 1, 4: exits {[p.returncode for p in outs]}")
    # what is said on stderr is what one thread says: the truncated file's
    # warning, then the first unreadable file (not the later one)
    d = workdir()
    cut, missing = os.path.join(d, "cut.gph"), os.path.join(d, "missing.gph")
    with open(a[1], "rb") as f:
        data = f.read()
    with open(cut, "wb") as f:
        f.write(data[:len(data) * 2 // 3])
    junk = os.path.join(d, "junk.gph")
    with open(junk, "wb") as f:
        f.write(b"GPHTRACE" + bytes(range(256)) * 4)
    files = [a[0], cut, a[2], missing, junk, a[3]]
    errs = [compare(files, b, "-j", n) for n in ("1", "2", "8")]
    check(all(p.returncode == 2 for p in errs), f"exits {[p.returncode for p in errs]}")
    e = errs[0].stderr
    check("cut.gph is truncated" in e and "missing.gph" in e and "junk.gph" not in e,
          f"-j 1 stderr {e!r}")
    check(all(p.stderr == e for p in errs), f"stderr {[p.stderr for p in errs]}")


def t_twice():
    """One process given twice (the same file, or a copy) is said on
    stderr, a line per file after the first: within a side it is counted
    each time; on both sides the run is compared with itself. Distinct
    runs say nothing; -j changes nothing."""
    r0, r1 = runs(steps_cmd(8), 2)
    d = workdir()
    copy = os.path.join(d, "copy.gph")
    with open(r0, "rb") as f, open(copy, "wb") as g:
        g.write(f.read())
    p = compare([r0], [r1])
    check(p.returncode in (0, 1, 3) and "warning" not in p.stderr,
          f"two runs: exit {p.returncode}, stderr {p.stderr!r}")
    p = compare([r0], [r0])
    want = (f"gpuphase-report: warning: {r0} is given more than once: the baseline and "
            "the candidate share it, so that run is compared with itself\n")
    check(p.returncode in (0, 1, 3) and p.stderr == want, f"same file on both sides: {p.stderr!r}")
    errs = [compare([r0, copy], [r1], "-j", n) for n in ("1", "4")]
    want = (f"gpuphase-report: warning: {copy} holds the same process as {r0} (pid ")
    e = errs[0].stderr
    check(e.startswith(want) and e.endswith("its process is counted each time\n") and
          e.count("\n") == 1, f"a copy on one side: {e!r}")
    check(errs[1].stderr == e, f"-j 4: {errs[1].stderr!r}")
    p = report_cmd(["check", "--budget", "busy>=1%", r1, r1])
    check(p.stderr == f"gpuphase-report: warning: {r1} is given more than once: its "
          "process is counted each time\n", f"check: {p.stderr!r}")


TESTS = {"kernels": t_kernels, "host_wait": t_host_wait, "pageable": t_pageable,
         "noise": t_noise, "exit_codes": t_exit_codes, "budgets": t_budgets,
         "text": t_text, "junit": t_junit, "json": t_json, "runs": t_runs,
         "twice": t_twice}

if __name__ == "__main__":
    sys.exit(main(TESTS))

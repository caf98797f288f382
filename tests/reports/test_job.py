#!/usr/bin/env python3
"""The job view end to end on jobs written by mkjob (see mkjob.c for the
schedule). Expected values come from that schedule, by hand:
  X = the slow rank's extra time, T = 100 us transfer, C = 1 ms compute,
  lat_r = (r % 3) x 200 ns. At a collective the last rank L arrives X after
  the others, every rank's collective ends at E + lat_r, so rank r's
  collective lasts (a_L - a_r) + T + lat_r and its wait (its duration less
  the shortest one, L's: T + lat_L) is X + lat_r - lat_L (0 for L).
  Host h's monotonic clock reads G + h x 5 s, its realtime G + 1.7e18 +
  h x 50 us: the header says host 1 is 50 us - 5 s off host 0; the ends
  correct that by lat_0 - lat_f - 50 us (f: host 1's first rank), and the
  residual of rank r on host h is |lat_r - lat_f(h)| (f(0) = rank 0).
Usage: test_job.py GPUPHASE_REPORT MKJOB SUMVER"""
import json
import os
import re
import struct
import subprocess
import sys
import tempfile

REPORT, MKJOB, SUMVER = sys.argv[1], sys.argv[2], sys.argv[3]
TMP = tempfile.mkdtemp(prefix="gp-job-test-")
failures = 0
US, MS = 1000, 1000000
T, C = 100 * US, 1 * MS


def lat(r):
    return (r % 3) * 200


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def job(name, *flags, ranks=4):
    d = os.path.join(TMP, name)
    os.makedirs(d, exist_ok=True)
    subprocess.run([MKJOB, *flags, "--ranks", str(ranks), d], check=True)
    return [os.path.join(d, f"rank-{r}.gph") for r in range(ranks)]


def run(*args):
    p = subprocess.run([REPORT, *args], capture_output=True)
    return p.returncode, p.stdout.decode("utf-8"), p.stderr.decode()


def report(*args):
    rc, out, err = run("--format", "json", "--warmup", "0", *args)
    check(rc == 0, f"report of {args} exits 0 (got {rc}: {err})")
    return json.loads(out)


def by_rank(j):
    return {r["rank"]: r for r in j["job"]["per_rank"]}


def test_slow_kernel():
    X = 2 * MS
    files = job("kernel", "--slow", "3", "--extra", str(X))
    j = report(*files)["job"]
    check(j["ranks"] == 4 and j["hosts"] == 2, "4 ranks on 2 hosts")
    check(j["unit"] == "step" and j["units"] == 20, "20 steps")
    check(j["collectives"] == 20, "20 collectives")
    check(j["per_rank"][0]["rank"] == 3, "the straggler leads the table")
    s = j["stragglers"]
    check(len(s) == 1 and s[0]["rank"] == 3, f"rank 3 the straggler: {s}")
    check(s[0]["last_count"] == 20, "last at every step")
    want = 20 * sum(X + lat(r) - lat(3) for r in (0, 1, 2))
    check(s[0]["others_wait_ns"] == want,
          f"others' wait {s[0]['others_wait_ns']} == {want}")
    check(j["wait_ns"] == want, "all waiting is for rank 3")
    pr = by_rank({"job": j})
    for r in (0, 1, 2):
        check(pr[r]["communication_wait_ns"] == 20 * (X + lat(r)),
              f"rank {r} waits X + lat_r per step")
        check(pr[r]["communication_ns"] == 20 * (X + T + lat(r)),
              f"rank {r} collective time")
        check(pr[r]["per_unit_ns"]["compute"] == C, f"rank {r} compute C")
        check(pr[r]["last_count"] == 0, f"rank {r} never last")
    check(pr[3]["communication_wait_ns"] == 0, "the straggler waits 0")
    check(pr[3]["communication_ns"] == 20 * T, "its collectives: T")
    check(pr[3]["per_unit_ns"]["compute"] == C + X, "its compute: C + X")
    # a step: g .. E + lat_r + 10 us, E - g = 10 us + C + X + T; slowest:
    # rank 2 (lat 400)
    step = 10 * US + C + X + T + 10 * US
    check(pr[0]["step_p50_ns"] == step, "rank 0's step")
    check(j["step_ns"]["p50"] == step + 400 == j["step_ns"]["max"],
          f"the job's step is rank 2's: {j['step_ns']}")
    check(pr[2]["slowest_steps"] == 20, "rank 2 slowest every step")
    f = j["finding"] or ""
    check("rank 3" in f and "compute kernels" in f and "gemm_kernel" in f and
          "+2.00 ms" in f, f"finding names rank 3 and its kernel: {f}")
    c = j["clock"]
    h = {x["host"]: x for x in c["hosts"]}
    check(c["reference_host"] == "node-0", "reference host of rank 0")
    check(h["node-1"]["header_offset_ns"] == 50 * US - 5000 * MS,
          "header offset of node-1")
    check(h["node-1"]["correction_ns"] == lat(0) - lat(2) - 50 * US,
          f"correction from the ends: {h['node-1']}")
    check(h["node-1"]["samples"] == 20, "20 ends")
    check(h["node-0"]["residual_p50_ns"] == 200 == h["node-0"]["residual_max_ns"],
          "node-0 residual |lat_1 - lat_0|")
    check(h["node-1"]["residual_p50_ns"] == 0 and
          h["node-1"]["residual_max_ns"] == 400, "node-1 residual")
    check(pr[2]["clock_offset_ns"] == -5000 * MS + lat(0) - lat(2),
          "rank 2 on rank 0's clock")
    check(c["clamped"] == 0, "no negative lag")
    # text and HTML
    rc, out, err = run("--warmup", "0", *files)
    check(rc == 0, "text exits 0")
    check("=== Job: 4 ranks on 2 hosts ===" in out, "text job section")
    check("Stragglers" in out and "Clocks" in out, "text sections")
    long = [l for l in out.splitlines() if len(l) > 100]
    check(not long, f"text within 100 columns: {long}")
    rc, out, err = run("--format", "html", "--warmup", "0", *files)
    check(rc == 0 and '<section id="job">' in out, "html job section")
    # the job view can be turned off
    j2 = report("--no-job", *files)
    check("job" not in j2, "--no-job")


def test_two_collectives():
    """Two collectives a step, rank 1 late (its kernel X longer) at the
    first and rank 4 (X2) at the second: rank 1 is each step's straggler,
    but rank 4 held the others up in every step too and is listed."""
    X, X2, n = 2 * MS, 1 * MS, 6
    files = job("two", "--per-host", "3", "--slow", "1", "--extra", str(X),
                "--coll2", "4", "--extra2", str(X2), ranks=n)
    j = report(*files)["job"]
    check(j["units"] == 20 and j["collectives"] == 40, "20 steps, 40 collectives")
    s = j["stragglers"]
    check([x["rank"] for x in s] == [1, 4], f"ranks 1 then 4: {s}")
    # first collective: the others wait X + lat_r - lat_1; the second
    # starts when the first ends (E + lat_r), so they arrive lat_r apart
    # and leave lat_r apart: each waits exactly X2 for rank 4
    w1 = 20 * sum(X + lat(r) - lat(1) for r in range(n) if r != 1)
    w4 = 20 * (n - 1) * X2
    if len(s) == 2:
        check(s[0]["last_count"] == 20 and s[0]["held_count"] == 20,
              f"rank 1 last in every step: {s[0]}")
        check(s[1]["last_count"] == 0 and s[1]["held_count"] == 20,
              f"rank 4 never last, held them up in every step: {s[1]}")
        check(s[0]["others_wait_ns"] == w1 and s[1]["others_wait_ns"] == w4,
              f"waits {s[0]['others_wait_ns']} {s[1]['others_wait_ns']}, "
              f"want {w1} {w4}")
    check(j["wait_ns"] == w1 + w4, f"all waiting {j['wait_ns']} == {w1 + w4}")
    pr = by_rank({"job": j})
    check(all(pr[r]["held_count"] == 0 for r in (0, 2, 3, 5)),
          "the others held no one up")
    f = j["finding"] or ""
    check(f.startswith("rank 1 ") and "held" not in f, f"finding: {f}")
    rc, out, err = run("--warmup", "0", *files)
    check(rc == 0 and "last in 0 of 20 steps, held them up in 20" in out,
          f"text names rank 4: {err}")
    # the step's straggler alone, as a collective-by-collective count
    # without steps: rank 1 last at 20 collectives, rank 4 at 20
    files = job("two-nost", "--per-host", "3", "--slow", "1", "--extra",
                str(X), "--coll2", "4", "--no-steps", ranks=n)
    s = report(*files)["job"]["stragglers"]
    check([(x["rank"], x["last_count"], x["held_count"]) for x in s] ==
          [(1, 20, 20), (4, 20, 20)], f"no steps: {s}")


def test_small_lateness():
    """A rank 6 us late: the finding's figures in microseconds (they read
    0.00 ms before)."""
    X = 6 * US
    files = job("small", "--slow", "0", "--extra", str(X), ranks=3)
    j = report(*files)["job"]
    per_step = sum(X + lat(r) - lat(0) for r in (1, 2))  # 12.6 us
    f = j["finding"] or ""
    check(f.startswith("rank 0 ") and
          f"waited {20 * per_step / 1e3:.1f} us for it in all "
          f"({per_step / 1e3:.1f} us per step)" in f and
          "(+6.0 us)" in f, f"finding in microseconds: {f}")


def test_host_late_no_steps():
    X = 2 * MS
    files = job("host", "--slow", "2", "--how", "host", "--no-steps",
                "--extra", str(X))
    j = report(*files)["job"]
    check(j["unit"] == "collective" and j["units"] == 20, "per collective")
    check(j["step_ns"] is None, "no job step")
    s = j["stragglers"]
    check(s and s[0]["rank"] == 2 and s[0]["last_count"] == 20,
          f"rank 2 last: {s}")
    want = 20 * sum(X + lat(r) - lat(2) for r in (0, 1, 3))
    check(s[0]["others_wait_ns"] == want,
          f"others' wait {s[0]['others_wait_ns']} == {want}")
    f = j["finding"] or ""
    check("rank 2" in f and "host wait" in f, f"finding says host wait: {f}")


def test_copy():
    """The slow rank's step waits for a 2 ms host-to-device copy on its
    stream before its compute kernel: the finding says transfer, of
    host-to-device copies."""
    X = 2 * MS
    files = job("copy", "--slow", "1", "--how", "copy", "--extra", str(X))
    j = report(*files)["job"]
    s = j["stragglers"]
    check(s and s[0]["rank"] == 1 and s[0]["last_count"] == 20,
          f"rank 1 last: {s}")
    want = 20 * sum(X + lat(r) - lat(1) for r in (0, 2, 3))
    check(s[0]["others_wait_ns"] == want,
          f"others' wait {s[0]['others_wait_ns']} == {want}")
    pr = by_rank({"job": j})
    check(pr[1]["per_unit_ns"]["transfer"] == X, "its transfer: X per step")
    check(pr[1]["per_unit_ns"]["compute"] == C, "its compute: C")
    f = j["finding"] or ""
    check("rank 1" in f and "transfer (most of it H2D copies)" in f and
          "2.00 ms" in f, f"finding says transfer, and which: {f}")


def test_tie_across_hosts():
    """Ranks 1 (node-0) and 3 (node-1) arrive together: the shorter
    collective (rank 3: T + lat_3 = T) is last; rank 1 waits lat_1 - lat_3
    = 200 ns by the durations, while the aligned clocks (rank 3 is read
    lat_0 - lat_2 = -400 ns off) put rank 1 400 ns after rank 3: a
    negative lag, clamped and counted, never a negative wait."""
    X = 1 * MS
    files = job("tie", "--slow", "1", "--slow2", "3", "--extra", str(X))
    j = report(*files)["job"]
    pr = by_rank({"job": j})
    check(j["stragglers"][0]["rank"] == 3, "rank 3 last")
    check(pr[1]["communication_wait_ns"] == 20 * 200, "rank 1 waits 200/step")
    check(all(r["communication_wait_ns"] >= 0 for r in j["per_rank"]),
          "no negative wait")
    check(j["clock"]["clamped"] == 20 and
          j["clock"]["clamped_max_ns"] == 400,
          f"20 lags clamped, by 400 ns: {j['clock']}")
    check(any("clamp" in n or "count as 0" in n for n in j["notes"]),
          f"a note says so: {j['notes']}")


def test_mismatch_and_options():
    a = job("m20", "--slow", "0", "--steps", "20")
    b = job("m10", "--slow", "0", "--steps", "10")
    j = report(a[0], a[1], b[2], b[3])["job"]
    check(j["collectives"] == 10, "the first 10 matched")
    check(any("different numbers" in n for n in j["notes"]), "noted")
    check(any("10 collectives missing on rank 2" in n for n in j["notes"]) and
          any("10 collectives missing on rank 3" in n for n in j["notes"]),
          f"the ranks that stopped early named: {j['notes']}")
    rc, out, err = run("--comm-kernels", "", a[0])
    check(rc == 2 and len(err.strip().splitlines()) == 1 and
          "--comm-kernels" in err, f"empty glob refused: {rc} {err}")
    j = report("--comm-kernels", "gemm*", *a)["job"]
    check(j["communication_kernels"] == "gemm*", "rule reported")
    check(j["collectives"] == 20, "gemm kernels as collectives")
    j = report("--comm-kernels", "none*", *a)["job"]
    check(j["collectives"] == 0 and j["stragglers"] == [] and
          j["finding"] is None, "no collective: no straggler")
    check(any("no communication kernel" in n for n in j["notes"]), "noted")
    # a rank's trace lacks step 5 (events lost): its collectives are
    # matched by their ends, so only step 5's is left out (matched by
    # position, its later ones were paired with the next steps', and
    # node-1's ranks disagreed by a step); its steps are still matched by
    # index, so the counted steps are the 19 every rank has
    d = job("drop", "--slow", "3", "--per-host", "4", "--drop", "5:5", ranks=8)
    j = report(*d)["job"]
    notes = " ".join(j["notes"])
    check("19 to 20" in notes and
          "1 collective missing on rank 5 (events lost?)" in notes and
          "disagree" not in notes and "not right" not in notes,
          f"notes {j['notes']}")
    check(j["collectives"] == 18 and
          all(h["residual_max_ns"] <= 400 for h in j["clock"]["hosts"]),
          f"steps 0..18 but 5 counted, clocks aligned: {j['collectives']} "
          f"{j['clock']['hosts']}")
    # a single ranked file: no job view unless asked for
    check("job" not in report(a[0]), "one file: no job view")
    check(report("--job", a[0])["job"]["ranks"] == 1, "--job: one rank")


def test_lost_collective():
    """A rank's trace lacks one collective (its kernel record lost: mkjob
    --drop-coll R:S). The collectives are matched by their end times, so
    only that one is left out of the waits and the stragglers, and a note
    names the rank; matched by position, as before, the rank's later
    collectives were paired with the next steps' (its host's correction a
    step off when it is the host's first rank, the waits those of other
    steps). The slow rank 3 is X + i G late at step i, so that the steps
    differ: rank r's collective of step i lasts X + i G + T + lat_r, its
    wait X + i G + lat_r - lat_3."""
    X, G = 2 * MS, 10 * US

    def waits(steps, ranks):
        return sum(X + i * G + lat(r) - lat(3) for i in steps for r in ranks
                   if r != 3)

    # in the middle: rank 4, node-1's first rank (node-1's correction
    # comes from its ends), lacks step 7's collective; 8 ranks, 4 a host
    for flags in ([], ["--no-steps"]):
        files = job("lost-mid" + "".join(flags), "--slow", "3", "--extra",
                    str(X), "--extra-step", str(G), "--per-host", "4",
                    "--drop-coll", "4:7", *flags, ranks=8)
        j = report(*files)["job"]
        what = f"lost in the middle {flags}"
        steps = [i for i in range(20) if i != 7]
        check(j["collectives"] == 19 and
              j["units"] == (19 if flags else 20),
              f"{what}: 19 collectives: {j['collectives']} {j['units']}")
        s = j["stragglers"]
        check(len(s) == 1 and s[0]["rank"] == 3 and s[0]["last_count"] == 19,
              f"{what}: rank 3 last in the 19: {s}")
        check(s and s[0]["others_wait_ns"] == waits(steps, range(8)),
              f"{what}: others' wait {s and s[0]['others_wait_ns']} == "
              f"{waits(steps, range(8))}")
        pr = by_rank({"job": j})
        check(pr[4]["communication_wait_ns"] == waits(steps, [4]) and
              pr[4]["communication_ns"] ==
              sum(X + i * G + T + lat(4) for i in steps),
              f"{what}: rank 4's own collectives: {pr[4]}")
        h = {x["host"]: x for x in j["clock"]["hosts"]}
        check(h["node-1"]["correction_ns"] == lat(0) - lat(4) - 50 * US and
              h["node-1"]["samples"] == 19,
              f"{what}: node-1 corrected by lat_0 - lat_4 - 50 us: "
              f"{h['node-1']}")
        check(h["node-0"]["residual_max_ns"] == 400 and
              h["node-1"]["residual_max_ns"] == 200 and
              j["clock"]["clamped"] == 0,
              f"{what}: residuals the latencies: {j['clock']}")
        check(any("1 collective missing on rank 4 (events lost?)" in n
                  for n in j["notes"]) and
              not any("disagree" in n or "rank 4" not in n and "missing" in n
                      for n in j["notes"]),
              f"{what}: the note names rank 4: {j['notes']}")
        f = j["finding"] or ""
        check(f"last to reach the collective in 19 of {j['units']}" in f,
              f"{what}: finding {f}")
    # at the start and at the end: rank 2, node-1's first rank, lacks its
    # first collective (its ends are one step later than rank 0's: every
    # shift of a step fits them alike, and the header's offset, 50 us off,
    # picks the right one), rank 1 its last; steps 1..18 counted
    files = job("lost-edges", "--slow", "3", "--extra", str(X),
                "--extra-step", str(G), "--drop-coll", "2:0",
                "--drop-coll", "1:19")
    j = report(*files)["job"]
    s = j["stragglers"]
    check(j["collectives"] == 18 and s and s[0]["rank"] == 3 and
          s[0]["last_count"] == 18 and
          s[0]["others_wait_ns"] == waits(range(1, 19), range(4)),
          f"lost at the edges: {j['collectives']} {s}, want "
          f"{waits(range(1, 19), range(4))}")
    h = {x["host"]: x for x in j["clock"]["hosts"]}
    check(h["node-1"]["correction_ns"] == lat(0) - lat(2) - 50 * US and
          h["node-1"]["samples"] == 19 and h["node-1"]["residual_max_ns"] == 400,
          f"lost at the edges: node-1 {h['node-1']}")
    for r in (1, 2):
        check(any(f"1 collective missing on rank {r} (events lost?)" in n
                  for n in j["notes"]), f"rank {r} named: {j['notes']}")
    # the lowest rank, the clocks' reference, lacks step 5's: the others
    # are matched to rank 1's collectives, and node-1 still aligned to
    # rank 0 over the 19 it has
    files = job("lost-ref", "--slow", "3", "--extra", str(X),
                "--extra-step", str(G), "--drop-coll", "0:5")
    j = report(*files)["job"]
    steps = [i for i in range(20) if i != 5]
    s = j["stragglers"]
    check(j["collectives"] == 19 and s and s[0]["rank"] == 3 and
          s[0]["others_wait_ns"] == waits(steps, range(4)),
          f"lost on the reference: {j['collectives']} {s}")
    h = {x["host"]: x for x in j["clock"]["hosts"]}
    check(h["node-1"]["correction_ns"] == lat(0) - lat(2) - 50 * US and
          h["node-1"]["samples"] == 19 and
          any("1 collective missing on rank 0" in n for n in j["notes"]),
          f"lost on the reference: {h['node-1']} {j['notes']}")
    # a rank that lost 6 of its 20 here and there: no one shift fits most
    # of its first collectives, its ends cannot tell which are which, and
    # the first 14 of each rank are matched by position, as before, and
    # said to be
    files = job("lost-many", "--slow", "3", "--extra-step", str(G),
                *[a for s in (1, 4, 7, 10, 13, 16)
                  for a in ("--drop-coll", f"2:{s}")])
    j = report(*files)["job"]
    check(j["collectives"] == 14 and
          any("fit no alignment" in n and "the first 14 of each are matched "
              "by position" in n for n in j["notes"]),
          f"lost here and there: {j['collectives']} {j['notes']}")


def test_balanced():
    """No rank late: the collectives still end lat_r apart (a few hundred
    ns of link latency), which named rank 0 "last in 20 of 20 steps" with a
    finding. Under 5 us of wait per other rank, no rank is last."""
    files = job("balanced", ranks=8)
    j = report(*files)["job"]
    check(j["stragglers"] == [] and j["finding"] is None,
          f"a balanced job has no straggler: {j['stragglers']} {j['finding']}")
    check(all(r["last_count"] == 0 for r in j["per_rank"]), "no rank last")
    # the waits are still what they are: the latency differences
    want = 20 * sum(lat(r) - min(lat(q) for q in range(8)) for r in range(8))
    check(j["wait_ns"] == want, f"waits {j['wait_ns']} == {want}")
    # and a real straggler of 20 us (4 ranks) is one
    files = job("small", "--slow", "1", "--extra", str(20 * US))
    s = report(*files)["job"]["stragglers"]
    check(len(s) == 1 and s[0]["rank"] == 1 and s[0]["last_count"] == 20, f"20 us: {s}")


def test_no_comm_rank():
    """A rank that runs no collective (rank 2) is left out of the matching
    and said to be; before, it left every other rank with 0 collectives
    matched, no straggler and no finding. Rank 3 is 2 ms late: the others
    but rank 2 wait X + lat_r - lat_3 a step."""
    X = 2 * MS
    files = job("nocomm", "--slow", "3", "--extra", str(X), "--no-comm", "2", ranks=8)
    j = report(*files)["job"]
    check(j["collectives"] == 20, f"20 collectives matched: {j['collectives']}")
    s = j["stragglers"]
    want = 20 * sum(X + lat(r) - lat(3) for r in (0, 1, 4, 5, 6, 7))
    check(s and s[0]["rank"] == 3 and s[0]["last_count"] == 20 and
          s[0]["others_wait_ns"] == want, f"rank 3: {s}, want {want}")
    pr = by_rank({"job": j})
    check(pr[2]["communication_ns"] == 0 and pr[2]["communication_wait_ns"] == 0,
          f"rank 2 {pr[2]}")
    check(any("rank 2) ran no communication kernel" in n for n in j["notes"]),
          f"notes {j['notes']}")
    check(j["finding"] and "rank 3" in j["finding"], f"finding {j['finding']}")
    # the reference rank without collectives: rank 0 (host 0) left out
    files = job("nocomm0", "--slow", "3", "--extra", str(X), "--no-comm", "0", ranks=8)
    j = report(*files)["job"]
    s = j["stragglers"]
    want = 20 * sum(X + lat(r) - lat(3) for r in (1, 2, 4, 5, 6, 7))
    check(s and s[0]["rank"] == 3 and s[0]["others_wait_ns"] == want, f"rank 0 out: {s}")
    # host 1 (ranks 4..7 with --per-host 4? here 2 a host) still aligned:
    # its header is 5 s + 50 us off, its residual skew the latencies only
    for h in j["clock"]["hosts"]:
        check(h["residual_max_ns"] <= 400, f"host {h}")


def test_partial_ranks():
    """Rank 3's trace carries no rank: it gets the lowest number no file
    carries (3), whatever the order of the files; the others keep theirs.
    Before, every file was numbered by its place on the command line."""
    X = 2 * MS
    files = job("partial", "--slow", "3", "--extra", str(X), "--unranked", "3", ranks=8)
    j = report(*reversed(files))["job"]
    s = j["stragglers"]
    check(s and s[0]["rank"] == 3, f"the straggler keeps number 3: {s}")
    files2 = job("partial2", "--slow", "5", "--extra", str(X), "--unranked", "1", ranks=8)
    j = report(*reversed(files2))["job"]
    s = j["stragglers"]
    check(s and s[0]["rank"] == 5, f"a ranked straggler keeps its rank: {s}")
    ranks = sorted(r["rank"] for r in j["per_rank"])
    check(ranks == list(range(8)), f"ranks {ranks}")
    check(any("numbered by the order of the files" in n for n in j["notes"]), "noted")
    # ranks with gaps: said (the traces hold no world size, so what is past
    # the highest rank given cannot be)
    j = report(files2[0], files2[3], files2[6], files2[7])["job"]
    check(any(n.startswith("4 ranks of 0 to 7 not given (rank 1 first)")
              for n in j["notes"]), f"gaps noted: {j['notes']}")
    j = report(files2[2], files2[3])["job"]
    check(any(n.startswith("2 ranks of 0 to 3 not given (rank 0 first)")
              for n in j["notes"]), f"from 0: {j['notes']}")
    j = report(*files[:3])["job"]
    check(j["ranks"] == 3 and not any("not given" in n for n in j["notes"]),
          f"ranks 0 to 3: nothing missing: {j['notes']}")


def test_parallel_same_bytes():
    """-j N reads files at once: the output is byte for byte that of -j 1,
    on a 64-rank job of small traces, and so are the errors."""
    files = job("big", "--slow", "17", "--per-host", "8", "--steps", "6",
                ranks=64)
    for fmt in ("text", "json", "html"):
        outs = set()
        for jobs in ("1", "3", "64"):
            rc, out, err = run("-f", fmt, "-j", jobs, *files)
            check(rc == 0, f"-j {jobs} {fmt} exits 0: {err}")
            outs.add(out)
        rc, out, err = run("-f", fmt, *files)  # the default: the CPUs
        outs.add(out)
        check(len(outs) == 1, f"{fmt}: one output for every -j")
    # and with collectives lost (at the start of a host's first rank, in
    # the middle, at the end): the matching is made once all are read
    lost = job("big-lost", "--slow", "17", "--per-host", "8", "--steps", "6",
               "--drop-coll", "8:0", "--drop-coll", "30:3",
               "--drop-coll", "63:5", ranks=64)
    for fmt in ("text", "json"):
        outs = {run("-f", fmt, "-j", jobs, *lost)[1] for jobs in ("1", "3", "64")}
        check(len(outs) == 1 and "missing on rank 30" in outs.pop(),
              f"{fmt}: one output for every -j, collectives lost")
    j = report("-j", "4", *files)["job"]
    check(j["ranks"] == 64 and j["hosts"] == 8, "64 ranks on 8 hosts")
    check(j["stragglers"][0]["rank"] == 17, "rank 17 the straggler")
    bad = os.path.join(TMP, "bad.gph")
    with open(files[5], "rb") as f:
        data = f.read()
    with open(bad, "wb") as f:  # the header whole, a frame cut and spoiled
        f.write(data[:200] + bytes(300))
    args = files[:3] + [bad, "/nonexistent.gph"] + files[3:10]
    got = {run("-j", jobs, *args)[0::2] for jobs in ("1", "2", "8")}
    check(len(got) == 1, f"the same error for every -j: {got}")
    rc, err = got.pop()
    check(rc == 1 and len(err.strip().splitlines()) == 1 and "bad.gph" in err,
          f"one line naming the first bad file: {rc} {err}")
    for v in ("0", "x", "5000"):
        rc, out, err = run("-j", v, files[0])
        check(rc == 2 and "--jobs" in err, f"-j {v} refused: {rc} {err}")


def test_wild_clock():
    """A hostile clock pair in node-1's headers (realtime - monotonic =
    2^63): the offsets wrap, the report neither fails nor overflows
    (the sanitizer build checks), and the waits, from the durations, are
    those of the plain job."""
    X = 2 * MS
    files = job("wild", "--slow", "3", "--extra", str(X), "--wild-clock")
    j = report(*files)["job"]
    s = j["stragglers"]
    check(s and s[0]["rank"] == 3, f"rank 3 last: {s}")
    want = 20 * sum(X + lat(r) - lat(3) for r in (0, 1, 2))
    check(s[0]["others_wait_ns"] == want, "waits as without the wild clock")
    for fmt in ("text", "html"):
        rc, out, err = run("-f", fmt, "--warmup", "0", *files)
        check(rc == 0 and not err, f"{fmt}: exits 0 quietly: {rc} {err}")
    check(any("node-1: its header's realtime clock reads no plausible date"
              in n for n in j["notes"]), f"wild clock noted: {j['notes']}")
    plain = report(*job("tame", "--slow", "3"))["job"]["notes"]
    check(not any("plausible" in n or "disagree" in n for n in plain),
          f"no clock note for a plain job: {plain}")


def test_job_notes():
    """Notes on what a job view cannot check alone: two hosts of one name
    whose clocks differ (node-1's monotonic clock is 5 s ahead, which the
    alignment cannot undo for ranks it takes for one host), and traces of
    two runs whose ranks make one job (two run ids, each shared by two
    ranks); none where every rank has its own run id (a `gpuphase run` per
    rank) or all share one."""
    files = job("one-name", "--slow", "3", "--one-name")
    notes = report(*files)["job"]["notes"]
    check(any("host node-X: its ranks disagree by up to 5.000 s" in n
              for n in notes), f"one name, two clocks: {notes}")
    # without a slow rank, the arrivals those clocks put after the last
    # rank's: the largest lag as a duration, as every other one (it was
    # "5000000000 ns")
    notes = report(*job("one-name-even", "--one-name"))["job"]["notes"]
    check(any("after the last rank's (by up to 5.000 s," in n for n in notes),
          f"the clamped lags' largest: {notes}")
    a = job("run-a", "--run-id", "aaaa1111")
    b = job("run-b", "--run-id", "bbbb2222")
    notes = report(a[0], a[1], b[2], b[3])["job"]["notes"]
    check(any("2 run ids (aaaa1111 from rank 0, bbbb2222 from rank 2)" in n
              for n in notes), f"two runs: {notes}")
    for files in (a, job("run-own", "--run-id", "r%d")):
        notes = report(*files)["job"]["notes"]
        check(not any("run ids" in n for n in notes), f"one run: {notes}")


def strip_timeline(html):
    """The HTML report less its per-process timelines (summaries do not
    carry them)."""
    html = re.sub(r'<h3>Timeline</h3>\n.*?</script>\n', '', html, flags=re.S)
    return re.sub(r'<script>\n.*?</script>\n', '', html, flags=re.S)


def summary(path, *args):
    rc, out, err = run("--format", "summary", "-o", path, *args)
    check(rc == 0 and not out and not err, f"summary {path}: {rc} {err}")
    return path


def test_summaries():
    """merge(summaries of parts) is the report of the whole: text and JSON
    byte for byte, HTML but for the per-process timelines (the merged page
    says once why it has none), whatever the split; with steps and
    without, ranked or not, with collectives lost."""
    X = 2 * MS
    cases = {
        "steps": (job("sum-steps", "--slow", "3", "--extra", str(X)),
                  ["--warmup", "0"]),
        "nosteps": (job("sum-nost", "--slow", "2", "--how", "host",
                        "--no-steps", "--extra", str(X)), []),
        "comm": (job("sum-comm", "--slow", "1"), ["--comm-kernels", "gemm*"]),
        # two collectives a step, a rank late at each
        "two": (job("sum-two", "--slow", "3", "--coll2", "1"),
                ["--warmup", "0"]),
        # collectives lost at the start, in the middle and at the end
        "lost": (job("sum-lost", "--slow", "3", "--extra-step", str(10 * US),
                     "--drop-coll", "2:0", "--drop-coll", "1:9",
                     "--drop-coll", "3:19"), ["--warmup", "0"]),
    }
    for name, (files, opts) in cases.items():
        for split in ([4], [1, 3], [2, 2], [1, 1, 1, 1]):
            parts, at = [], 0
            for k, size in enumerate(split):
                parts.append(summary(os.path.join(TMP, f"{name}-{k}.gps"),
                                     *opts, *files[at:at + size]))
                at += size
            for fmt in ("text", "json", "html"):
                rc, whole, err = run("-f", fmt, *opts, *files)
                rc2, merged, err2 = run("merge", "-f", fmt, *parts)
                check(rc == rc2 == 0, f"{name} {split} {fmt}: {err} {err2}")
                page = merged
                if fmt == "html":
                    whole = strip_timeline(whole)
                    said = re.findall(r'<p class="sub">Merged from summaries, which hold no '
                                      r'events: no interactive timeline\..*?</p>\n', merged)
                    check(len(said) == 1 and "Merged from summaries" not in whole,
                          f"{name} {split}: the merged page says why it has no timeline")
                    merged = merged.replace(said[0], "")
                check(whole == merged,
                      f"{name} {split} {fmt}: merge == the whole")
                if len(parts) > 2:  # the summaries read at once
                    for j in ("1", "3", "8"):
                        rc3, m3, err3 = run("merge", "-j", j, "-f", fmt, *parts)
                        check(rc3 == 0 and m3 == page,
                              f"{name} {split} {fmt}: merge -j {j}: {err3}")
    files = cases["steps"][0]
    a = summary(os.path.join(TMP, "unranked.gps"), files[0])
    rc, whole, _ = run("--job", "-f", "json", files[0], files[0])
    rc, merged, _ = run("merge", "--job", "-f", "json", a, a)
    check(whole == merged and '"job"' in merged, "--job on merge")
    rc, merged, _ = run("merge", "--no-job", "-f", "json",
                        *[summary(os.path.join(TMP, f"nj{r}.gps"), f)
                          for r, f in enumerate(files)])
    check('"job"' not in merged, "--no-job on merge")


def test_summary_versions():
    """Every version the report reads: a summary written again as version
    1, 2 and 3 without the body's checksum (as they were written before
    it) merges; version 3 into the same report, the older ones with the
    same job view (they lack the analysis options, the graph captures,
    the counters and the call sites, not the job's inputs)."""
    files = job("sum-ver", "--slow", "2", "--extra", str(3 * MS))
    good = summary(os.path.join(TMP, "ver-good.gps"), "--warmup", "0", *files)
    rc, ref_text, _ = run("merge", good)
    rc, ref, _ = run("merge", "-f", "json", good)
    ref_job = json.loads(ref)["job"]
    for ver in (1, 2, 3):
        for csum in (True, False):
            path = os.path.join(TMP, f"ver{ver}{'c' if csum else ''}.gps")
            p = subprocess.run([SUMVER, good, path, str(ver)] +
                               ([] if csum else ["--no-checksum"]),
                               capture_output=True)
            check(p.returncode == 0, f"sumver {ver}: {p.stderr!r}")
            with open(path, "rb") as f:
                head = f.read(29)
            check(head[8] == ver and head[12] == (1 if csum else 0) and
                  bool(head[28] & 4) == csum, f"version {ver} head")
            rc, out, err = run("merge", "-f", "json", path)
            check(rc == 0, f"version {ver} read: {err}")
            if rc:
                continue
            if ver == 3:
                check(out == ref, f"version 3 ({csum}): the same report")
                rc, text, _ = run("merge", path)
                check(text == ref_text, "version 3: the same text")
            j = json.loads(out)["job"]
            check(j["stragglers"] == ref_job["stragglers"] and
                  j["per_rank"] == ref_job["per_rank"],
                  f"version {ver}: the same job view")
    p = subprocess.run([SUMVER, good, os.devnull, "9"], capture_output=True)
    check(p.returncode == 2, "sumver: version 9 unknown")


def test_summary_errors():
    files = job("sum-err", "--slow", "3")
    good = summary(os.path.join(TMP, "good.gps"), *files)
    with open(good, "rb") as f:
        data = f.read()

    def bad(name, content, what, rc_want=1):
        path = os.path.join(TMP, name)
        with open(path, "wb") as f:
            f.write(content)
        rc, out, err = run("merge", path)
        lines = err.strip().splitlines()
        check(rc == rc_want and len(lines) == 1 and what in err,
              f"{name}: {rc} {err!r}")

    bad("trace.gps", open(files[0], "rb").read(), "not a gpuphase summary")
    bad("empty.gps", b"", "not a gpuphase summary")
    # a large file that is no summary is refused by its head, not read
    # whole first (a 1 GiB file cost 1 GB of memory): the peak resident
    # memory of merge stays far below the file's 512 MiB of zeros
    large = os.path.join(TMP, "large.bin")
    with open(large, "wb") as f:
        f.truncate(512 << 20)
    probe = ("import resource, subprocess, sys\n"
             "p = subprocess.run(sys.argv[1:], capture_output=True)\n"
             "print(p.returncode, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"
             "sys.stderr.write(p.stderr.decode())\n")
    p = subprocess.run([sys.executable, "-c", probe, REPORT, "merge", large],
                       capture_output=True, text=True)
    rc, rss_kb = map(int, p.stdout.split())
    check(rc == 1 and "not a gpuphase summary" in p.stderr and rss_kb < 200 * 1024,
          f"a 512 MiB non-summary: exit {rc}, peak {rss_kb} kB, {p.stderr!r}")
    os.unlink(large)
    bad("version.gps", data[:8] + b"\x07" + data[9:], "summary version 7")
    bad("cut.gps", data[:len(data) // 2], "corrupt summary")
    bad("size.gps", data[:16] + b"\xff" * 8 + data[24:], "corrupt summary")
    # a forged size: 40 bytes whose header and zstd frame (one RLE block of
    # 1000 bytes) both declare 3 GiB; no frame that short can hold that
    # much (at most 128 KiB a block, 4 bytes or more each), so it is
    # refused as such, before anything of that size is allocated
    big = 3 << 30
    frame = (struct.pack("<IB", 0xFD2FB528, 0xE0) + struct.pack("<Q", big) +
             struct.pack("<I", (1000 << 3) | 3)[:3] + b"\0")
    # (flags 0: a summary without the checksum, as before it)
    bad("forged.gps", data[:12] + b"\0" * 4 + struct.pack("<Q", big) + frame,
        "corrupt summary (its size)")
    # the body's checksum: its flag, and the frame's, are checked
    check(data[12:16] == b"\1\0\0\0" and data[28] & 4,
          "a summary says it has the body's checksum, and has it")
    bad("flags.gps", data[:12] + b"\3\0\0\0" + data[16:],
        "corrupt summary (unknown flags)")
    bad("nosum.gps", data[:28] + bytes([data[28] & ~4]) + data[29:],
        "corrupt summary (its checksum is missing)")
    # damaged bytes inside the compressed body: refused (the checksum),
    # never a crash and never another report (a flip in bytes zstd does
    # not read may leave the report as it was)
    rc, ref, _ = run("merge", "-f", "json", good)
    for k, at in enumerate(range(24, len(data), max(1, len(data) // 97))):
        b = bytearray(data)
        b[at] ^= 0x5a
        path = os.path.join(TMP, f"flip{k}.gps")
        with open(path, "wb") as f:
            f.write(bytes(b))
        rc, out, err = run("merge", "-f", "json", path)
        check((rc == 1 and len(err.strip().splitlines()) == 1 and
               "corrupt summary" in err) or (rc == 0 and out == ref),
              f"flip at {at}: {rc} {err!r}")
    # pipes: standard input as - (once), process substitution; not a
    # terminal, a directory or /dev/null
    rc, ref_text, _ = run("merge", good)
    p = subprocess.run([REPORT, "merge", "-"], stdin=open(good, "rb"),
                       capture_output=True)
    check(p.returncode == 0 and p.stdout.decode() == ref_text,
          f"merge - < file: {p.stderr!r}")
    p = subprocess.run(f"cat '{good}' | '{REPORT}' merge - && "
                       f"'{REPORT}' merge <(cat '{good}')", shell=True,
                       executable="/bin/bash", capture_output=True)
    check(p.returncode == 0 and p.stdout.decode() == 2 * ref_text,
          f"merge of a pipe and <(...): {p.stderr!r}")
    p = subprocess.run(f"'{REPORT}' merge -f summary -o - '{good}' | "
                       f"'{REPORT}' merge -", shell=True, capture_output=True)
    check(p.returncode == 0 and p.stdout.decode() == ref_text,
          f"a summary piped into merge: {p.stderr!r}")
    p = subprocess.run([REPORT, "merge", "-", "-"], stdin=open(good, "rb"),
                       capture_output=True)
    check(p.returncode == 2 and b"more than once" in p.stderr,
          f"- twice: {p.stderr!r}")
    p = subprocess.run(f"head -c 100 '{good}' | '{REPORT}' merge -",
                       shell=True, capture_output=True)
    check(p.returncode == 1 and p.stderr.decode().startswith(
        "gpuphase-report: standard input: corrupt summary"),
          f"a cut pipe: {p.stderr!r}")
    # a pipe longer than its head says the summary can be: refused when
    # that much is read, not read to its end first
    p = subprocess.run(f"(head -c 24 '{good}'; head -c 4000000 /dev/zero) | "
                       f"'{REPORT}' merge -", shell=True, capture_output=True)
    check(p.returncode == 1 and b"corrupt summary (its size)" in p.stderr,
          f"an endless pipe: {p.stderr!r}")
    for path in ("/dev/null", TMP):
        rc, out, err = run("merge", path)
        check(rc == 1 and "not a regular file or a pipe" in err,
              f"merge {path}: {rc} {err!r}")
    p = subprocess.run([REPORT, "merge", "-", "-o", good],
                       stdin=open(good, "rb"), capture_output=True)
    check(p.returncode == 2 and b"it is the input file -" in p.stderr and
          open(good, "rb").read() == data, f"-o the file on stdin: {p.stderr!r}")
    rc, out, err = run("merge", "/nonexistent.gps")
    check(rc == 1 and "nonexistent.gps" in err, "a missing summary")
    other = summary(os.path.join(TMP, "other.gps"), "--comm-kernels",
                    "gemm*", *files)
    rc, out, err = run("merge", good, other)
    check(rc == 1 and "other options" in err, f"mixed options: {err}")
    # read at once, the first failure in the order given is the one said,
    # as when they are read one by one
    cut = os.path.join(TMP, "cut.gps")
    for order, what in (([good, good, cut, other, "/nonexistent.gps"],
                         "cut.gps: corrupt summary"),
                        ([good, other, cut], "other.gps: made with other options"),
                        ([good, "/nonexistent.gps", cut], "nonexistent.gps"),
                        ([cut, other, good], "cut.gps: corrupt summary")):
        errs = [run("merge", "-j", j, *order) for j in ("1", "2", "5")]
        check(all(r[0] == 1 and r[2] == errs[0][2] for r in errs) and
              what in errs[0][2] and len(errs[0][2].strip().splitlines()) == 1,
              f"merge {order}: {[(r[0], r[2]) for r in errs]}")
    for args in (["--warmup", "1"], ["--comm-kernels", "x*"],
                 ["--frames", "all"], ["--window", "1s"]):
        rc, out, err = run("merge", *args, good)
        check(rc == 2 and "summary" in err, f"merge {args} refused: {err}")
    rc, out, err = run("-f", "summary", files[0])
    check(rc == 2 and "-o FILE" in err, f"summary without -o: {err}")
    rc, out, err = run("-f", "summary", "-o", files[0], files[0])
    check(rc == 2 and "refusing" in err, f"summary onto its input: {err}")
    rc, out, err = run("merge", "-o", good, good)
    check(rc == 2 and "refusing" in err, f"merge onto its input: {err}")


def test_summary_options():
    """Summaries keep the analysis options they were made with (version
    3): merge refuses summaries made with another --window, --step,
    --warmup or --frames than the first, naming the option, as reading
    all the traces at once could not give their report. A summary of
    summaries (merge -f summary) keeps them, and merges into the report of
    the whole. --format summary refuses the options of the report, merge
    those that need the traces. A version-2 summary, whose options were
    not recorded, still merges with any."""
    files = job("sum-opt", "--slow", "2")
    base = summary(os.path.join(TMP, "opt-base.gps"), files[0], files[1])
    for name, args in (("--window", ["--window", "1ms"]),
                       ("--step", ["--step", "nomatch*"]),
                       ("--warmup", ["--warmup", "0"]),
                       ("--frames", ["--frames", "all"])):
        other = summary(os.path.join(TMP, f"opt{name}.gps"), *args,
                        files[2], files[3])
        for order in ([base, other], [other, base]):
            rc, out, err = run("merge", *order)
            check(rc == 1 and "other options" in err and name in err and
                  len(err.strip().splitlines()) == 1 and out == "",
                  f"merge {name} {order}: {rc} {err!r}")
        same = summary(os.path.join(TMP, f"opt{name}-same.gps"), *args,
                       files[0], files[1])
        rc, out, err = run("merge", same, other)
        check(rc == 0, f"merge of two {name} summaries: {err}")
    # a value given that is the default's is the default: the report is
    # the same (a --window 100ms summary was refused beside a default one)
    dflt = summary(os.path.join(TMP, "opt-dflt.gps"), "--window", "100ms",
                   "--comm-kernels", "nccl*Kernel*", files[2], files[3])
    rc, out, err = run("merge", "-f", "json", base, dflt)
    rc2, whole, err2 = run("-f", "json", *files)
    check(rc == rc2 == 0 and out == whole, f"merge of default-valued options: {rc} {err}")
    # staged: summaries of one file each, merged in pairs, then the pairs
    one = [summary(os.path.join(TMP, f"opt-one{r}.gps"), f)
           for r, f in enumerate(files)]
    pair = []
    for k in (0, 2):
        out = os.path.join(TMP, f"opt-pair{k}.gps")
        rc, _, err = run("merge", "-f", "summary", "-o", out, one[k], one[k + 1])
        check(rc == 0 and os.path.getsize(out) > 24, f"merge -f summary: {err}")
        pair.append(out)
    top = os.path.join(TMP, "opt-all.gps")
    rc, _, err = run("merge", "-f", "summary", "-o", top, *pair)
    check(rc == 0, f"merge -f summary of summaries of summaries: {err}")
    for fmt in ("text", "json"):
        rc, whole, err = run("-f", fmt, *files)
        for parts in ([top], pair, [pair[0], one[2], one[3]]):
            rc2, merged, err2 = run("merge", "-f", fmt, *parts)
            check(rc == rc2 == 0 and merged == whole,
                  f"staged merge {fmt} of {parts}: {err} {err2}")
    # the options travel with a summary of summaries
    w = [summary(os.path.join(TMP, f"opt-w{k}.gps"), "--window", "10ms",
                 files[k]) for k in (0, 1)]
    ww = os.path.join(TMP, "opt-ww.gps")
    run("merge", "-f", "summary", "-o", ww, *w)
    rc, _, err = run("merge", ww, one[2])
    check(rc == 1 and "--window" in err and "not 10" in err,
          f"staged options kept: {err}")
    rc, whole, _ = run("-f", "json", "--window", "10ms", files[0], files[1])
    rc2, merged, err = run("merge", "-f", "json", ww)
    check(rc == rc2 == 0 and whole == merged, f"staged --window: {err}")
    for args in (["--top", "3"], ["--no-job"], ["--job"], ["--color=never"]):
        rc, _, err = run("-f", "summary", *args, "-o",
                         os.path.join(TMP, "opt-x.gps"), files[0])
        check(rc == 2 and args[0].split("=")[0] in err and "merge" in err,
              f"--format summary {args} refused: {rc} {err}")
    for args in (["--from", "+0"], ["--to", "+1s"], ["--steps", "0..1"],
                 ["--html-budget", "200"], ["-f", "perfetto"]):
        rc, _, err = run("merge", *args, base)
        check(rc == 2 and "needs the traces" in err,
              f"merge {args} refused: {rc} {err}")
    rc, _, err = run("merge", "-f", "summary", base)
    check(rc == 2 and "-o FILE" in err, f"merge -f summary without -o: {err}")
    # a version-2 summary of the corpus (options not recorded)
    v2 = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..",
                      "fuzz", "corpus", "summary", "job-steps.gps")
    with open(v2, "rb") as f:
        check(f.read(12)[8:] == b"\2\0\0\0", "the corpus holds a version 2")
    for order in ([v2, other], [other, v2]):
        rc, out, err = run("merge", "-f", "json", *order)
        check(rc == 0 and '"job"' in out, f"merge of version 2 {order}: {err}")
    vv = os.path.join(TMP, "opt-v2v3.gps")
    rc, _, err = run("merge", "-f", "summary", "-o", vv, v2)
    rc2, out, err2 = run("merge", "-f", "json", vv, base)
    check(rc == rc2 == 0, f"a version 2 summary of summaries: {err} {err2}")
    # a version-2 summary first: the summaries after it that recorded
    # their options are still checked against each other (they merged,
    # whatever the order, when the first had recorded none), at once or
    # one by one, and through a summary of summaries
    w1 = summary(os.path.join(TMP, "opt-w1ms.gps"), "--window", "1ms",
                 files[2], files[3])
    for j in ("1", "2", "5"):
        rc, out, err = run("merge", "-j", j, v2, base, w1)
        check(rc == 1 and "opt-w1ms.gps: made with other options" in err and
              "--window" in err and len(err.strip().splitlines()) == 1,
              f"version 2 first, then differing options (-j {j}): {rc} {err!r}")
    v2b = os.path.join(TMP, "opt-v2base.gps")
    rc, _, err = run("merge", "-f", "summary", "-o", v2b, v2, base)
    rc2, _, err2 = run("merge", v2b, w1)
    check(rc == 0 and rc2 == 1 and "--window" in err2,
          f"staged after a version 2: {err} {rc2} {err2!r}")


def test_sum_phases():
    """The processes' sum: a phase's categories are shares of the time
    each device was counted over, its own process's union of the phase
    (the five categories partition a device's time, so the shares add up
    to 100%), not the sum of the unions times every device of the job."""
    files = job("phsum", "--slow", "1")
    d = report(*files)
    span = {}
    for proc in d["processes"]:
        for ph in proc["phases"]:
            span[ph["name"]] = (span.get(ph["name"], 0) +
                                ph["total_ns"] * len(proc["devices"]))
    check(d["phases"] and set(span) == {p["name"] for p in d["phases"]},
          "the sum holds the processes' phases")
    for ph in d["phases"]:
        bd = ph["breakdown"]
        ns = sum(v["ns"] for v in bd.values())
        check(ns == span[ph["name"]], f"{ph['name']}: {ns} ns in categories, "
              f"{span[ph['name']]} ns of device time")
        pct = sum(v["pct"] for v in bd.values())
        check(abs(pct - 100) < 0.1, f"{ph['name']}: shares add up to {pct}")
        check(abs(ph["utilization"]["device_busy_pct"] -
                  bd["kernel"]["pct"]) < 0.01, "busy is the kernel share")
        for dev in ph["devices"]:
            pct = sum(v["pct"] for v in dev["breakdown"].values())
            check(abs(pct - 100) < 0.1, f"{ph['name']} GPU {dev['id']}: "
                  f"shares add up to {pct}")
    rc, out, err = run(*files)
    rows = re.findall(r"^  train_step\s+(\d+)\s.*?(\d+)%\s+\d+%\s+\d+%\s+"
                      r"\d+%\s+\d+%\s+(\d+)%", out, re.M)
    check(len(rows) == 5 and rows[-1][0] == "80" and
          all(r[1] == rows[0][1] for r in rows), f"text phase rows: {rows}")


def sections(out):
    return re.findall(r"^=== Process \d+ \(parent \d+\) rank (\d+) on ",
                      out, re.M)


def test_large_job_text():
    """The text of a job of many ranks stays short: the sections of the
    job's first 4 ranks (outliers first), the sum and the job view;
    --processes N|all for more; the clocks of the worst-aligned hosts."""
    files = job("text12", "--slow", "7", "--per-host", "1", "--steps", "6",
                ranks=12)
    rc, out, err = run(*files)
    got = sections(out)
    check(rc == 0 and got[:1] == ["7"] and len(got) == 4,
          f"12 ranks: the first 4 in the job's order, the straggler first: "
          f"{got}")
    check("(8 more processes left out: above are the job's first 4 ranks, "
          "outliers first (Job below);" in out and
          "=== All 12 processes together" in out and
          "=== Job: 12 ranks on 12 hosts ===" in out, "the rest said, sum, job")
    check(out.index("more processes left out") <
          out.index("=== All 12 processes"), "the note before the sum")
    # the sum's window is the processes' windows added up: said so, not
    # as if it were one span of time
    check(re.search(r"=== All 12 processes together .*===\n  windows \S+ \S+ "
                    r"added up \(each process's", out) is not None,
          "the sum's windows added up")
    # the sum of the many: --top GPU blocks (one GPU a rank here, on
    # hosts of their own) and findings
    rc, out, err = run("--top", "5", *files)
    total = out[out.index("=== All 12"):out.index("=== Job")]
    gpus = re.findall(r"^GPU 0 on (node-\d+) ", total, re.M)
    check(gpus == [f"node-{h}" for h in range(5)] and
          "(7 more GPUs: --processes all" in total, f"the sum's GPUs: {gpus}")
    nf = len(re.findall(r"^  \* GPU", total, re.M))
    check(nf <= 5 and (nf < 5 or "(the first 5 of" in total),
          f"the sum's findings: {nf}")
    # the sum's findings say whose GPU 0 (12 hosts have one); a process's
    # do not need to
    check(nf and nf == len(re.findall(r"^  \* GPU 0 on node-\d+: ", total,
                                      re.M)), "the sum's findings name the host")
    d = report(*files)
    check(d["findings"] and
          all(f["host"] and f["host"].startswith("node-") for f in d["findings"])
          and all(f["host"] is None for p in d["processes"]
                  for f in p["findings"]), "JSON: findings' host")
    rc, out, err = run("--processes", "all", *files)
    total = out[out.index("=== All 12"):out.index("=== Job")]
    check(len(re.findall(r"^GPU 0 on ", total, re.M)) == 12 and
          "more GPUs" not in total, "--processes all: the sum's every GPU")
    check(sections(out) == [str(r) for r in range(12)] and
          "more processes left out" not in out,
          "--processes all: every one, in file order")
    rc, out, err = run("--processes", "2", *files)
    check(len(sections(out)) == 2 and sections(out)[0] == "7", "--processes 2")
    rc, out, err = run("--no-job", *files)
    check(len(sections(out)) == 12, "no job view: every process")
    rc, out, err = run("--no-job", "--processes", "3", *files)
    check(sections(out) == ["0", "1", "2"] and
          "above are the first 3 files given;" in out,
          "no job view: the first files")
    rc, out, err = run(*job("text4", "--slow", "2"))
    check(len(sections(out)) == 4 and "more processes left out" not in out,
          "4 ranks: all of them")
    for bad in (["--processes", "0"], ["--processes", "x"],
                ["--processes", ""], ["-f", "json", "--processes", "2"],
                ["-f", "summary", "-o", os.path.join(TMP, "p.gps"),
                 "--processes", "2"]):
        rc, out, err = run(*bad, files[0])
        check(rc == 2 and "--processes" in err and
              len(err.strip().splitlines()) == 1, f"{bad} refused: {err}")
    s = summary(os.path.join(TMP, "text12.gps"), *files)
    whole = run(*files)[1]
    check(run("merge", s)[1] == whole, "merge: the same text")
    check(len(sections(run("merge", "--processes", "all", s)[1])) == 12,
          "merge --processes all")
    # Clocks: the reference and the top - 1 worst aligned, the others in
    # one line with their largest skew. Two ranks a host: host h's residual
    # is |lat(2h + 1) - lat(2h)|, 200 400 200 200 400 200 ns for h = 0..5
    pairs = job("clocks6", "--per-host", "2", "--steps", "6", ranks=12)
    rc, out, err = run("--top", "3", *pairs)
    clocks = out[out.index("\nClocks"):]
    hosts = re.findall(r"^  (node-\d+) ", clocks, re.M)
    check(hosts == ["node-0", "node-1", "node-4"],
          f"--top 3: the reference and the worst 2: {hosts}")
    check("(3 more hosts, residual skew at most 200 ns" in clocks,
          "the hosts left out")
    # 512 ranks, rank 77 2 ms late to each of 50 steps (45 measured after
    # the warm-up of max(3, 50 / 10)): per step the other 511 wait
    # 511 x 2 ms + sum of lat_r over r != 77 - 511 x lat_77 = 1,022,000,000
    # + 101,800 - 204,400 ns = 1021.90 ms, in all 45 times that: 45.99 s,
    # said in seconds; the text stays short
    big = job("big512", "--slow", "77", "--per-host", "8", "--steps", "50",
              ranks=512)
    rc, out, err = run(*big)
    check(rc == 0 and "waited 45.99 s for it in all (1021.90 ms per step)"
          in out, "the finding in seconds")
    check(len(out.splitlines()) < 600 and sections(out)[:1] == ["77"],
          f"512 ranks in {len(out.splitlines())} lines")
    check(max(len(line) for line in out.splitlines()) <= 100,
          "512 ranks: lines within 100 columns")
    rc, out, err = run(*pairs)
    clocks = out[out.index("\nClocks"):]
    check(re.findall(r"^  (node-\d+) ", clocks, re.M) ==
          [f"node-{h}" for h in range(6)] and "more hosts" not in clocks,
          "--top 15: every host, in order")


def html_sections(page):
    return re.findall(r"<h2>Process \d+ \(parent \d+\) rank (\d+) on ", page)


def test_large_job_html():
    """The page of a job of many ranks: as the text, the sections (each
    with its timeline) of the job's first 4 ranks, outliers first, the job
    table with every rank, the sum with its first --top GPUs and findings;
    --processes N|all for more. Only the traces shown are read again for
    their timelines: a rank file made unreadable after its summary was
    written is not needed."""
    files = job("html12", "--slow", "7", "--per-host", "1", "--steps", "6",
                ranks=12)
    rc, out, err = run("-f", "html", "--top", "5", *files)
    got = html_sections(out)
    check(rc == 0 and got[:1] == ["7"] and len(got) == 4,
          f"html, 12 ranks: the job's first 4, the straggler first: {got}")
    check(out.count('data-src="gp-tl-') == 4, "html: 4 timelines")
    check("8 more processes left out: above are the job's first 4 ranks, "
          "outliers first" in out, "html: the rest said")
    total = out[out.index("<h2>All 12 processes"):]
    check(len(re.findall(r"<h3>GPU 0 on node-\d+", total)) == 5 and
          "7 more GPUs: --processes all" in total, "html: the sum's GPUs")
    nf = len(re.findall(r"<li>GPU \d+ on node-\d+: ", total))
    check(0 < nf <= 5 and (nf < 5 or "The first 5 of" in total),
          f"html: the sum's findings, with their hosts: {nf}")
    job_part = out[out.index('<section id="job">'):]
    check(all(f"node-{h}" in job_part for h in range(12)),
          "html: the job table has every rank")
    rc, out, err = run("-f", "html", "--processes", "all", *files)
    check(html_sections(out) == [str(r) for r in range(12)] and
          out.count('data-src="gp-tl-') == 12 and
          "more processes left out" not in out and "more GPUs" not in out,
          "html --processes all: every one, in file order")
    rc, out, err = run("-f", "html", "--processes", "2", *files)
    check(len(html_sections(out)) == 2 and html_sections(out)[0] == "7" and
          out.count('data-src="gp-tl-') == 2, "html --processes 2")
    rc, out, err = run("-f", "html", "--no-job", *files)
    check(len(html_sections(out)) == 12, "html, no job view: every process")
    # the traces are read again for the timelines of the sections shown
    # only: the bytes the process read (/proc/PID/io of the exited child,
    # before it is reaped) beyond those of the JSON report (one read of
    # each) are about the 4 shown files', not the 12
    def rchar(*args):
        p = subprocess.Popen([REPORT, *args], stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
        os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
        with open(f"/proc/{p.pid}/io") as f:
            n = int(re.search(r"^rchar: (\d+)", f.read(), re.M).group(1))
        p.wait()
        return n
    if os.path.exists("/proc/self/io"):
        # traces large enough that what is read besides them does not count
        files = job("html12big", "--slow", "7", "--per-host", "1",
                    "--steps", "2000", ranks=12)
        size = sum(os.path.getsize(f) for f in files)
        extra = rchar("-f", "html", *files) - rchar("-f", "json", *files)
        check(0 < extra < size * 6 // 12,
              f"html: {extra} more bytes read than json; all 12 files hold "
              f"{size}: only the 4 shown are read again")
        extra = rchar("-f", "html", "--processes", "all", *files) - \
            rchar("-f", "json", *files)
        check(extra >= size, f"html --processes all: {extra} more bytes "
              f"read, the 12 files hold {size}")


test_slow_kernel()
test_two_collectives()
test_small_lateness()
test_summaries()
test_summary_versions()
test_summary_errors()
test_summary_options()
test_wild_clock()
test_job_notes()
test_parallel_same_bytes()
test_host_late_no_steps()
test_copy()
test_tie_across_hosts()
test_mismatch_and_options()
test_lost_collective()
test_balanced()
test_no_comm_rank()
test_partial_ranks()
test_sum_phases()
test_large_job_text()
test_large_job_html()
if failures:
    print(f"{failures} failure(s)", file=sys.stderr)
    sys.exit(1)
print("ok")

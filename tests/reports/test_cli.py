#!/usr/bin/env python3
"""gpuphase-report end to end on traces written by mktrace, whose timeline
(see mktrace.c) gives, by hand, over the window [1000,1800) = 800 ns:
  launch [1000,1100) 100; host wait [1100,1150) 50; sync idle [1150,1200)
  + [1700,1800) 150; kernel [1200,1700) 500.  SM coverage 5/10 blocks per SM
  x 500 / 800 = 31.25%.  Degraded (no kernel record): the sync call
  [1150,1800) 650 counts as kernel, launch 100, host wait 50.
Usage: test_cli.py GPUPHASE_REPORT MKTRACE"""
import html.parser
import json
import os
import re
import subprocess
import sys
import tempfile

REPORT, MKTRACE = sys.argv[1], sys.argv[2]
TMP = tempfile.mkdtemp(prefix="gp-report-test-")
failures = 0
HOSTILE = 'k<a&b>"q\\\x01\x1b[31m\ufffd\u00e9nd'  # \xff decodes as U+FFFD


def check(cond, what):
    global failures
    if not cond:
        failures += 1
        print("FAIL:", what, file=sys.stderr)


def run(*args, ok=(0,)):
    p = subprocess.run([REPORT, *args], capture_output=True)
    return p.returncode, p.stdout, p.stderr.decode("utf-8", "replace")


def trace(name, *flags):
    path = os.path.join(TMP, name)
    subprocess.run([MKTRACE, *flags, path], check=True)
    return path


def report_json(*args):
    rc, out, err = run("--format", "json", *args)
    check(rc == 0, f"json report of {args} exits 0 (got {rc}: {err})")
    text = out.decode("utf-8")  # must be valid UTF-8
    check(all(c >= " " or c == "\n" for c in text),
          "no raw control characters in JSON")
    return json.loads(text), text


def cats(dev_or_phase):
    return {k: v["ns"] for k, v in dev_or_phase["breakdown"].items()}


def test_json():
    j, text = report_json(trace("a.gph"))
    check(j["schema"] == 1, "schema 1")
    check(j["degraded"] is False, "not degraded")
    check(j["processes_count"] == 1 and len(j["processes"]) == 1, "one process")
    d = j["devices"][0]
    check(d["window_ns"] == 800, "window 800 ns")
    check(cats(d) == {"kernel": 500, "transfer": 0, "launch": 100,
                      "sync_idle": 150, "host_wait": 50}, f"breakdown {cats(d)}")
    check(d["breakdown"]["kernel"]["pct"] == 62.5, "kernel 62.5%")
    check(d["breakdown"]["sync_idle"]["pct"] == 18.75, "sync idle 18.75%")
    u = d["utilization"]
    for key in ("device_busy_pct", "sm_coverage_pct", "mem_peak_bytes",
                "mem_peak_pct"):
        check(key in u, f"utilization has {key}")
    check(u["device_busy_pct"] == 62.5, "busy 62.5%")
    check(u["sm_coverage_pct"] == 31.25, f"coverage {u['sm_coverage_pct']}")
    check(u["mem_peak_bytes"] == 0 and u["mem_peak_pct"] == 0, "no memory")
    ph = j["phases"]
    check(len(ph) == 1 and ph[0]["name"] == "step" and ph[0]["count"] == 1,
          "phase step once")
    check(cats(ph[0])["kernel"] == 500 and ph[0]["total_ns"] == 800,
          "phase breakdown")
    k = j["kernels"]
    check(len(k) == 1 and k[0]["name"] == HOSTILE, f"kernel name {k[0]['name']!r}")
    check(k[0]["count"] == 1 and k[0]["total_ns"] == 500, "kernel totals")
    api = {a["name"]: a for a in j["api"]}
    check(api["cudaLaunchKernel"]["count"] == 1
          and api["cudaLaunchKernel"]["total_ns"] == 100, "launch api")
    check(api["cudaDeviceSynchronize"]["total_ns"] == 650
          and api["cudaDeviceSynchronize"]["blocked_ns"] == 650, "sync api")
    check("<" not in text and "\\u003c" in text, "< escaped")
    check("\\u001b" in text and "\\u0001" in text, "control bytes escaped")


def test_windows():
    j, _ = report_json("--window", "100ns", trace("w.gph"))
    w = j["devices"][0]["windows"]
    check(w["count"] == 8 and w["length_ns"] == 100, "8 windows of 100 ns")
    check(w["series"]["kernel"] == [0, 0, 100, 100, 100, 100, 100, 0],
          f"kernel series {w['series']['kernel']}")
    check(w["busy_pct"]["p5"] == 0 and w["busy_pct"]["p50"] == 100,
          "busy percentiles")
    check(w["longest_idle"] == {"ns": 200, "start_offset_ns": 0}, "idle run")
    check(w["longest_busy_run"]["windows"] == 5
          and w["longest_busy_run"]["start_offset_ns"] == 200, "busy run")


def text_checks(out, what):
    text = out.decode("utf-8")  # valid UTF-8
    for line in text.splitlines():
        check(len(line) <= 100, f"{what}: line over 100 columns: {line!r}")
    return text


def test_text():
    path = trace("t.gph")
    rc, out, _ = run("--color=never", path)
    check(rc == 0, "text report exits 0")
    text = text_checks(out, "text")
    check("\x1b" not in text and "\x01" not in text, "no control bytes in text")
    check("k<a&b>\"q\\??[31m\ufffd\u00e9nd" in text, "kernel name cleaned")
    check("62.5%" in text and "sync idle" in text, "breakdown shown")
    rc, out, _ = run("--color=always", path)
    text = out.decode("utf-8")
    check("\x1b[1m" in text, "colour when asked")
    check("\x1b[31m" not in text, "the kernel name cannot colour the terminal")
    env = dict(os.environ, NO_COLOR="1")
    p = subprocess.run([REPORT, path], capture_output=True, env=env)
    check(b"\x1b" not in p.stdout, "no colour into a pipe")


def test_degraded():
    path = trace("d.gph", "--degraded")
    rc, out, _ = run(path)
    first = out.decode().splitlines()[0]
    check(rc == 0 and first.startswith("DEGRADED"), f"first line {first!r}")
    j, _ = report_json(path)
    check(j["degraded"] is True, "json degraded")
    check(any("DEGRADED" in n and "CUPTI unavailable" in n for n in j["notes"]),
          "degraded note")
    check(cats(j["devices"][0]) == {"kernel": 650, "transfer": 0, "launch": 100,
                                    "sync_idle": 0, "host_wait": 50},
          f"degraded breakdown {cats(j['devices'][0])}")


def test_several():
    a, b = trace("p1.gph"), trace("p2.gph", "--degraded", "--pid", "77")
    j, _ = report_json(a, b)
    check(j["processes_count"] == 2 and len(j["processes"]) == 2, "2 processes")
    check([p["pid"] for p in j["processes"]] == [4242, 77], "pids")
    d = j["devices"][0]
    check(d["window_ns"] == 1600, "summed windows")
    check(cats(d)["kernel"] == 1150 and cats(d)["sync_idle"] == 150,
          f"summed breakdown {cats(d)}")
    check(j["degraded"] is False, "a sum is degraded only if all are")
    rc, out, _ = run("--color=never", a, b)
    text = text_checks(out, "two files")
    check("All 2 processes" in text and "Process 77" in text, "sections")
    check(text.splitlines()[0].startswith("DEGRADED: 1 of 2"), "degraded line")


def test_output_file():
    out = os.path.join(TMP, "out.json")
    rc, stdout, _ = run("-f", "json", "-o", out, trace("o.gph"))
    check(rc == 0 and stdout == b"", "-o leaves stdout empty")
    with open(out) as f:
        check(json.load(f)["schema"] == 1, "-o file is the JSON report")
    rc, _, err = run("-o", os.path.join(TMP, "no", "such", "dir"), trace("o2.gph"))
    check(rc == 1 and err.strip(), "unwritable -o: exit 1 with a message")
    # a write that fails part way (a full disk; here a file size limit of
    # 256 bytes, EFBIG) leaves no truncated file behind, in every format
    import resource
    import signal

    def small_files():
        # as a shell's `ulimit -f` leaves it: SIGXFSZ at its default, which
        # killed the report (exit 153, a partial file) before it ignored it
        signal.signal(signal.SIGXFSZ, signal.SIG_DFL)
        resource.setrlimit(resource.RLIMIT_FSIZE, (256, 256))
    big = trace("o3.gph")
    for fmt in ("text", "json", "html", "chrome", "perfetto", "summary"):
        out = os.path.join(TMP, "partial." + fmt)
        p = subprocess.run([REPORT, "-f", fmt, "-o", out, big], capture_output=True,
                           preexec_fn=small_files)
        err = p.stderr.decode("utf-8", "replace")
        check(p.returncode == 1 and "write error" in err and one_line(err),
              f"-f {fmt} past the size limit: {p.returncode} {err!r}")
        check(not os.path.exists(out), f"-f {fmt}: a partial {out} was left")
    out = os.path.join(TMP, "partial.cmp")
    p = subprocess.run([REPORT, "compare", "-f", "json", "-o", out, big, "--vs",
                        trace("o4.gph", "--pid", "4343")],
                       capture_output=True, preexec_fn=small_files)
    err = p.stderr.decode("utf-8", "replace")
    check(p.returncode == 2 and "write error" in err and one_line(err) and not os.path.exists(out),
          f"compare past the size limit: {p.returncode} {err!r}")


def one_line(err):
    return len(err.strip().splitlines()) == 1


def test_errors():
    good = trace("e.gph")
    missing = os.path.join(TMP, "missing.gph")
    rc, _, err = run(missing)
    check(rc == 1 and one_line(err) and missing in err
          and "No such file" in err, f"missing file: {rc} {err!r}")
    for args in (["--bogus", good], ["--window", "abc", good],
                 ["--window", "0ms", good], ["--window", "10", good],
                 ["--format", "xml", good], ["--color=sometimes", good],
                 ["--top", "0", good], ["--window"], [],
                 ["--frames", "some", good], ["--weight", "idle", good],
                 ["--format", "folded", "--weight", "cpu", good]):
        rc, out, err = run(*args)
        check(rc == 2 and one_line(err) and out == b"",
              f"usage error {args}: {rc} {err!r}")
    rc, _, err = run("--window", "abc", good)
    check("--window" in err and "abc" in err, "bad --window is named")
    # the report's own options change nothing in an export: refused, named
    # (they passed silently before)
    for opt, fmt in ((["--top", "3"], "chrome"), (["--color=never"], "chrome"),
                     (["--job"], "perfetto"), (["--no-job"], "chrome")):
        rc, out, err = run("-f", fmt, "-o", os.path.join(TMP, "x.json"), *opt, good)
        check(rc == 2 and one_line(err) and out == b"" and opt[0].split("=")[0] in err
              and "export" in err, f"{opt} with -f {fmt}: {rc} {err!r}")
    # an abbreviation of two options is ambiguous, and says which (it was
    # called unknown); one of a single option still works
    rc, out, err = run("--co", good)
    check(rc == 2 and one_line(err) and "ambiguous option '--co'" in err
          and "--color" in err and "--comm-kernels" in err
          and "--colour" not in err, f"--co: {rc} {err!r}")
    rc, out, err = run("check", "--bu", "x", good)
    check(rc == 2 and "ambiguous option '--bu'" in err and "--budgets" in err,
          f"check --bu: {rc} {err!r}")
    rc, out, err = run("--help=x", good)
    check(rc == 2 and "'--help' takes no value" in err, f"--help=x: {rc} {err!r}")
    rc, out, err = run("--colo=never", "-o", os.devnull, good)
    check(rc == 0, f"--colo=never: {rc} {err!r}")
    # the renderers take them for every format, as the library does
    rc, _, err = run("-f", "json", "--top", "3", "--no-job", "-o", os.devnull, good)
    check(rc == 0, f"-f json --top 3 --no-job: {rc} {err!r}")
    rc, out, _ = run("--help")
    check(rc == 0 and b"Usage" in out, "--help")
    # "help [COMMAND]" is --help and COMMAND --help (it was a file name)
    check(run("help") == (0, out, ""), "help is --help")
    for cmd in ("info", "dump", "compare", "check", "merge"):
        want = run(cmd, "--help")
        check(want[0] == 0 and run("help", cmd) == want, f"help {cmd} is {cmd} --help")
        check(want[1] != out and want[1].startswith(b"Usage: gpuphase-report " +
                                                    cmd.encode()),
              f"{cmd} --help is its own: {want[1][:60]!r}")
    rc, _, err = run("merge", "--bogus")
    check(rc == 2 and "(see gpuphase-report merge --help)" in err,
          f"merge's errors point to its help: {err!r}")
    rc, o2, err = run("help", "nope")
    check(rc == 2 and o2 == b"" and one_line(err) and "'nope'" in err, f"help nope: {rc} {err!r}")
    rc, o2, err = run("help", "info", "dump")
    check(rc == 2 and one_line(err), f"help info dump: {rc} {err!r}")
    # a count's message gives its range
    rc, _, err = run("--warmup", "1000000001", good)
    check(rc == 2 and "from 0 to 1000000000" in err, f"--warmup past the limit: {err!r}")
    rc, out, _ = run("--window", "2.5ms", good)
    check(rc == 0, "2.5ms is a window")
    # no call-site records: folded output is empty and says why, once
    rc, out, err = run("--format", "folded", "--frames", "all", good)
    check(rc == 0 and out == b"" and one_line(err)
          and "GPUPHASE_STACKS" in err, f"folded without stacks: {err!r}")
    junk = os.path.join(TMP, "junk.gph")
    with open(junk, "w") as f:
        f.write("not a trace at all, just text\n" * 10)
    rc, _, err = run(junk)
    check(rc == 1 and one_line(err) and junk in err, f"not a trace: {err!r}")
    # a FIFO without a writer: refused at once, not waited on for ever
    fifo = os.path.join(TMP, "fifo.gph")
    os.mkfifo(fifo)
    for args in ([fifo], ["info", fifo], ["-f", "chrome", "-o",
                                          os.path.join(TMP, "f.json"), fifo]):
        try:
            p = subprocess.run([REPORT, *args], capture_output=True, timeout=20)
            err = p.stderr.decode()
            check(p.returncode == 1 and one_line(err) and
                  "not a regular file" in err, f"{args}: {p.returncode} {err!r}")
        except subprocess.TimeoutExpired:
            check(False, f"{args}: hangs on a FIFO")


def test_damaged():
    data = open(trace("c.gph"), "rb").read()
    first = data.find(b"GPFR")
    second = data.find(b"GPFR", first + 1)
    check(first > 0 and second > first, "trace has several frames")
    bad = os.path.join(TMP, "corrupt.gph")
    with open(bad, "wb") as f:
        f.write(data[:second] + b"XXXX" + data[second + 4:])
    rc, _, err = run(bad)
    check(rc == 1 and one_line(err) and bad in err and f"byte {second}" in err,
          f"corrupt: {rc} {err!r}")
    cut = os.path.join(TMP, "cut.gph")
    with open(cut, "wb") as f:
        f.write(data[:-7])
    rc, out, err = run("-f", "json", cut)
    check(rc == 0 and "truncated" in err, f"truncated: warning ({err!r})")
    check(json.loads(out)["truncated"] is True, "truncated in JSON")
    # frames that would need more memory at once than the time-ordered
    # reader allows: "out of memory", said once (dump said it twice)
    thrash = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "fuzz",
                          "regress", "reader", "crafted-thrash-small.gph")
    for args in (["dump", "--sorted", thrash], [thrash]):
        rc, _, err = run(*args)
        check(rc == 1 and one_line(err) and err.count("out of memory") == 1,
              f"{args[:-1]}: {rc} {err!r}")


VOID = {"meta", "br", "rect", "img", "hr", "input", "link"}


class Balance(html.parser.HTMLParser):
    """Checks that every element is closed in order, and collects the text
    of table cells and the elements seen."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.stack, self.errors, self.cells, self.tags = [], [], [], set()
        self.cell = None

    def handle_starttag(self, tag, attrs):
        self.tags.add(tag)
        if tag in ("td", "th"):
            self.cell = ""
        if tag not in VOID:
            self.stack.append(tag)

    def handle_startendtag(self, tag, attrs):
        self.tags.add(tag)

    def handle_endtag(self, tag):
        if tag in VOID:
            return
        if not self.stack or self.stack[-1] != tag:
            self.errors.append(f"</{tag}> closes {self.stack[-1:]}")
            return
        self.stack.pop()
        if tag in ("td", "th"):
            self.cells.append(self.cell)
            self.cell = None

    def handle_data(self, data):
        if self.cell is not None:
            self.cell += data


def test_perfetto_utf8():
    """The kernel's name holds a byte that is not UTF-8: the Perfetto export
    (protobuf strings are UTF-8) writes U+FFFD for it, as the Chrome
    export does, and keeps the valid rest."""
    t = trace("u.gph")
    out = os.path.join(TMP, "u.pftrace")
    rc, _, err = run("-f", "perfetto", "-o", out, t)
    check(rc == 0, f"perfetto export: {err}")
    data = open(out, "rb").read()
    check(b"[31m\xff" not in data and b"[31m\xef\xbf\xbd\xc3\xa9nd" in data,
          "an invalid byte in a Perfetto string")


def test_html():
    path = trace("h.gph")
    rc, out, err = run("--format", "html", path)
    check(rc == 0, f"html report exits 0 ({err})")
    text = out.decode("utf-8")  # valid UTF-8
    check(text.startswith("<!DOCTYPE html>"), "a whole HTML document")
    check("\x1b" not in text and "\x01" not in text, "no control bytes in HTML")
    # the hostile kernel name, escaped: <>&" as entities, the control byte
    # and the ESC as U+FFFD, the invalid byte as U+FFFD
    want = "k&lt;a&amp;b&gt;&quot;q\\&#xfffd;&#xfffd;[31m&#xfffd;\u00e9nd"
    check(want in text, "kernel name escaped")
    # two script elements, both ours: the timeline's data (JSON without a
    # markup character) and its code; nothing fetched
    scripts = re.findall(r"<script[^>]*>", text, re.I)
    check(scripts == ['<script type="application/json" id="gp-tl-0">', "<script>"],
          f"script elements {scripts}")
    data = re.findall(r'<script type="application/json" id="gp-tl-0">(.*?)</script>', text,
                      re.S)
    check(len(data) == 1 and not set("<>&") & set(data[0]), "markup characters in the data")
    tl = json.loads(data[0])
    check(HOSTILE.replace("\x01", "\ufffd").replace("\x1b", "\ufffd") in tl["names"],
          "the kernel name in the timeline data, controls replaced")
    check(len(tl["rows"]) == 2 and tl["counts"]["kernel"] == [1, 1], f"timeline {tl['counts']}")
    check("<noscript>" in text, "no word for readers without scripts")
    # one kernel launched once: no "*" in its row, so no footnote for one
    check("grid or block varies" not in text, "the footnote of a '*' no row has")
    check(not re.search(r"(?<![\w-])(src|href)\s*=", text) and "http:" not in text.replace(
        'xmlns="http://www.w3.org/2000/svg"', ""), "nothing fetched")
    b = Balance()
    b.feed(text)
    b.close()
    check(not b.errors and not b.stack, f"elements balanced: {b.errors} {b.stack}")
    check({"table", "svg", "rect", "section"} <= b.tags, f"elements {sorted(b.tags)}")
    cells = b.cells
    # the categories table: name, time, share; values from the timeline above
    for name, t, share in (("kernel", "500 ns", "62.5%"), ("launch", "100 ns", "12.5%"),
                           ("sync idle", "150 ns", "18.8%"), ("host wait", "50 ns", "6.2%"),
                           ("transfer", "0 ns", "0.0%")):
        i = cells.index(name) if name in cells else -1
        check(i >= 0 and cells[i + 1:i + 3] == [t, share],
              f"{name} row {cells[i:i + 3] if i >= 0 else None}")
    shown = HOSTILE.replace("\x01", "\ufffd").replace("\x1b", "\ufffd")
    check(shown in cells, "the kernel row holds the name, controls replaced")
    # ranges opened and never closed: a bounded number followed (64 deep per
    # thread, 4096 start/end), the rest counted as left out; those followed
    # end at the end of the run (1800)
    rc, out, err = run("--format", "html", trace("deep.gph", "--deep", "5000"))
    check(rc == 0, f"html of 5000 open ranges: {rc} {err}")
    tl = json.loads(re.findall(r'<script type="application/json" id="gp-tl-0">(.*?)</script>',
                               out.decode(), re.S)[0])
    check(tl["counts"]["range"] == [1 + 2 * 5000, 64 + 4096], f"ranges {tl['counts']['range']}")
    # 300 more threads of 3 calls: rows thread 1, the kernel's stream, then
    # the threads, 256 in all; 46 threads left out, each counted once (it
    # was once per call), their 3 calls each the events left out
    rc, out, err = run("--format", "html", trace("rows.gph", "--threads", "300"))
    check(rc == 0, f"html of 302 rows: {rc} {err}")
    tl = json.loads(re.findall(r'<script type="application/json" id="gp-tl-0">(.*?)</script>',
                               out.decode(), re.S)[0])
    check(len(tl["rows"]) == 256 and tl["rows_left"] == 46 and tl["rows_left_events"] == 138,
          f"rows {len(tl['rows'])}, left {tl['rows_left']} ({tl['rows_left_events']} events)")
    check("46 rows past the first 256 not shown (138 events)" in out.decode(), "rows left said")
    a, d = trace("h1.gph"), trace("h2.gph", "--degraded", "--pid", "77")
    rc, out, _ = run("-f", "html", "-o", os.path.join(TMP, "r.html"), a, d)
    check(rc == 0 and out == b"", "-o with html")
    text = open(os.path.join(TMP, "r.html"), encoding="utf-8").read()
    check("All 2 processes" in text and "DEGRADED" in text, "sum section and banner")


def test_no_summary():
    """A trace whose process was killed between two flushes ends with whole
    frames but without its summary: the report and compare call it
    truncated, as their docs say of a killed process (before, only a file
    cut inside a frame was)."""
    good = trace("whole.gph")
    with open(good, "rb") as f:
        data = f.read()
    at = data.rfind(b"GPFR")
    check(at > 0 and data[at + 4] == 2, "the last frame is the summary")
    cut = os.path.join(TMP, "nosummary.gph")
    with open(cut, "wb") as f:
        f.write(data[:at])
    rc, out, err = run("-f", "json", cut)
    j = json.loads(out)
    check(rc == 0 and j["truncated"] is True and "is truncated" in err,
          f"no summary: rc {rc}, truncated {j.get('truncated')}, {err!r}")
    check(cats(j["devices"][0])["kernel"] == 500, "the frames before it are read")
    rc, out, err = run(cut)
    check(b"TRUNCATED" in out, "text: TRUNCATED")
    rc, out, err = run(good)
    check(b"TRUNCATED" not in out and err == "", f"the whole trace: {err!r}")
    rc, out, err = run("compare", "-f", "json", good, "--vs", cut)
    j = json.loads(out)
    check(j["new"]["runs"][0]["truncated"] is True and "is truncated" in err
          and any("truncated" in n for n in j["notes"]),
          f"compare: {j['new']['runs'][0].get('truncated')} {j.get('notes')} {err!r}")


def test_twice():
    """One process given twice (the same file, a copy of it, summaries
    that overlap) is counted each time, as any file is, and said once per
    extra input on stderr; distinct processes, even with one pid and host,
    say nothing."""
    a = trace("tw1.gph")
    b = trace("tw2.gph", "--pid", "77")
    rc, _, err = run("-f", "json", a, b)
    check(rc == 0 and err == "", f"distinct processes: rc {rc}, stderr {err!r}")
    j, _ = report_json(a, b, a)
    check(j["processes_count"] == 3, "the file given twice counts twice")
    rc, _, err = run("-f", "json", a, b, a)
    check(rc == 0 and err.count("\n") == 1 and
          f"{a} is given more than once: its process is counted each time" in err,
          f"given twice: {err!r}")
    copy = os.path.join(TMP, "tw1-copy.gph")
    with open(a, "rb") as f, open(copy, "wb") as g:
        g.write(f.read())
    rc, _, err = run("-f", "json", a, copy)
    check(rc == 0 and f"{copy} holds the same process as {a} (pid 4242" in err,
          f"a copy: {err!r}")
    s1, s2 = os.path.join(TMP, "tw-a.sum"), os.path.join(TMP, "tw-b.sum")
    check(run("-f", "summary", "-o", s1, a, b)[0] == 0 and
          run("-f", "summary", "-o", s2, b)[0] == 0, "summaries written")
    rc, out, err = run("merge", "-f", "json", s1, s2)
    check(rc == 0 and json.loads(out)["processes_count"] == 3 and
          f"{b} is in more than one summary" in err, f"merge: {err!r}")
    rc, _, err = run("merge", "-f", "json", s1)
    check(rc == 0 and err == "", f"merge of one summary: {err!r}")


for t in (test_json, test_twice, test_windows, test_text, test_html, test_perfetto_utf8, test_degraded, test_several,
          test_output_file, test_errors, test_damaged, test_no_summary):
    t()
print("failures:", failures)
sys.exit(1 if failures else 0)

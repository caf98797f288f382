"""The HTML report's timeline (docs/report-html.md, "Timeline") on the
simulated GPU.

data, budget, window: the JSON the page embeds, from the bundled demo
(tests/simcuda/demo.c), whose per-step work is known: 30 API calls (an H2D
copy, 27 launches, a D2H copy, a stream synchronisation), 27 kernels, 2
copies, 1 CUPTI sync record and 4 ranges (step, data, forward_backward,
sync); plus 10 calls around the loop (a stream, 2 pinned and 2 device
allocations, 4 frees, the stream's destruction).

browser: the page of prog_timeline.c (2 threads, 2 streams) in headless
Chromium driven by selenium: no console error, 4 rows drawn, wheel and
keys change the visible range, hovering a kernel shows its name, the
kernel named with markup shows as text and runs nothing; a screenshot is
kept in the build directory (timeline-browser.png). Exit 77 (skipped)
where selenium, Chromium or its driver is missing or cannot start."""
import json
import os
import re
import shutil
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

STEPS = 12
KINDS = ("api", "kernel", "memcpy", "memset", "sync", "range")
DEMO_KERNELS = {"gemm_fwd": [1320, 1320], "gemm_bwd": [2640], "softmax": [8],
                "loss_reduce": [1], "sgd_update": [264],
                "relu": [32] + [1 + i % 32 for i in range(20)]}
HOSTILE = '</script><img src=x onerror="window.__gp_pwned=1">'


def html_report(files, *args):
    p = subprocess.run([REPORT, "-f", "html", *args] + files, capture_output=True,
                       text=True, timeout=60, env=env(preload=False))
    check(p.returncode == 0, f"html report failed ({p.returncode}): {p.stderr.strip()}")
    return p.stdout


def embedded(page):
    """The timeline JSON of the page's one process."""
    m = re.findall(r'<script type="application/json" id="gp-tl-0">(.*?)</script>', page, re.S)
    check(len(m) == 1, f"{len(m)} timeline data elements")
    check("<" not in m[0] and ">" not in m[0] and "&" not in m[0], "markup characters in the data")
    return json.loads(m[0])


def events(t):
    ev = t["ev"]
    return [ev[i:i + 8] for i in range(0, len(ev), 8)]


def demo_traces():
    d = workdir()
    p = run([os.path.join(SIMDIR, "gpuphase-demo"), str(STEPS), "5"], d,
            extra={"MALLOC_PERTURB_": None})
    check(p.returncode == 0, f"demo failed: {p.stderr.strip()}")
    files = traces(d)
    check(len(files) == 1, f"traces {files}")
    return files


def want_totals(steps=STEPS):
    # 30 calls a step; 11 outside the loop (allocations, frees, and the
    # stream's destroy)
    return {"api": 30 * steps + 11, "kernel": 27 * steps, "memcpy": 2 * steps,
            "memset": 0, "sync": steps, "range": 4 * steps}


def sync_row_label():
    """A device-wide synchronisation (cudaDeviceSynchronize: no one stream)
    has a row called as the exports call it, "GPU 0 synchronization"; it
    was "GPU 0 stream 4294967295"."""
    d = workdir()
    p = run([prog("e2e-prog-basic")], d)
    check(p.returncode == 0, f"basic failed: {p.stderr.strip()}")
    t = embedded(html_report(traces(d)))
    labels = [r[1] for r in t["rows"]]
    check("GPU 0 synchronization" in labels and not any("4294967295" in x for x in labels),
          f"rows {labels}")


def t_data():
    """The whole demo fits the default budget: every event in detail, each
    kernel with the model's duration and its grid."""
    sync_row_label()
    t = embedded(html_report(demo_traces()))
    check([r[0] for r in t["rows"]] == ["thread", "stream"], f"rows {t['rows']}")
    totals = {k: v[0] for k, v in t["counts"].items()}
    check(totals == want_totals(), f"totals {totals}, want {want_totals()}")
    check(all(v[0] == v[1] for v in t["counts"].values()), f"left out: {t['counts']}")
    check(t["detail"]["why"] == "run" and not t["detail"]["cut"], f"detail {t['detail']}")
    check(len(t["steps"]) == 3 * STEPS, f"{len(t['steps']) // 3} steps")
    grids = {}
    apis = {e[5]: e for e in events(t) if e[1] == 0 and e[5]}
    for e in events(t):
        if e[1] != 1:
            continue
        name = t["names"][e[4]]
        grids.setdefault(name, []).append(e[6])
        check(e[3] == kernel_ns(e[6]), f"{name}: {e[3]} ns for {e[6]} blocks")
        check(e[0] == 1, f"kernel on row {e[0]}")
        launch = apis.get(e[5])
        check(launch is not None and t["names"][launch[4]] == "cudaLaunchKernel"
              and launch[2] <= e[2], f"{name}: launching call {launch}")
    for name, g in DEMO_KERNELS.items():
        check(sorted(grids.get(name, [])) == sorted(g * STEPS), f"{name} grids")
    # the aggregated view: the stream's busy time over the run is the
    # kernels' and copies' device time (per mille per column, rounded)
    a = t["agg"]
    busy = sum(pm * a["w"] / 1000 for pm in a["busy"][1])
    dev = sum(e[3] for e in events(t) if e[0] == 1 and e[1] in (1, 2))
    check(abs(busy - dev) <= a["n"] * a["w"] / 2000 + 1, f"aggregated busy {busy} vs {dev}")
    # the JSON and text outputs hold no timeline
    p = subprocess.run([REPORT, "-f", "json"] + demo_traces(), capture_output=True,
                       text=True, timeout=60, env=env(preload=False))
    check(p.returncode == 0 and "timeline" not in p.stdout, "timeline in the JSON output")


def t_budget():
    """A small budget: the busiest steps by default, and where even a fixed
    window holds more, the detail stops at the budget and says so."""
    files = demo_traces()
    t = embedded(html_report(files, "--html-budget", "300"))
    d = t["detail"]
    check(d["why"] == "steps" and not d["cut"], f"detail {d}")
    kept = {k: v[1] for k, v in t["counts"].items()}
    # 90% of 300 = 270 events; by its counters a step holds 27 launches +
    # 27 kernels + 2 x 2 copies + 2 x 1 sync + 4 = 64, so 4 steps (256):
    # each with 30 calls, 27 kernels, 2 copies, 1 sync, 4 ranges
    check(kept["kernel"] == 4 * 27 and kept["memcpy"] == 4 * 2 and kept["sync"] == 4
          and kept["range"] == 4 * 4, f"four steps expected: {kept}")
    check(len(t["steps"]) == 3 * 4, f"steps {t['steps']}")
    check({k: v[0] for k, v in t["counts"].items()} == want_totals(), "totals")
    page = html_report(files, "--html-budget", "100", "--html-detail", "0..10s")
    t = embedded(page)
    d = t["detail"]
    check(d["cut"] and d["why"] == "asked", f"detail {d}")
    evs = events(t)
    # the budget counts every kind; past it, only the ranges open at the
    # cut (at most step and one phase) are added when they end; the cut is
    # the earliest start left out, and what was kept past it is dropped
    check(len(evs) <= 102, f"{len(evs)} events kept for a budget of 100")
    check(all(e[2] < d["to"] for e in evs), "an event starts after the cut")
    full = embedded(html_report(files))
    before = [e for e in events(full) if e[2] < d["to"]]
    check(len(before) == len(evs), f"{len(evs)} events before the cut, want {len(before)}")
    left = sum(v[0] - v[1] for v in t["counts"].values())
    check(left == sum(want_totals().values()) - len(evs), f"left out {left}")
    check("ran out at" in page and "left out:" in page, "the page says what was left out")
    # a window that starts inside step 5: what was open then (the step's
    # range) is kept whole, even past the budget
    st = full["steps"]
    mid = st[3 * 5] + st[3 * 5 + 1] // 2
    t = embedded(html_report(files, "--html-budget", "100", "--html-detail",
                             f"{mid / 1e6:.6f}ms..10s"))
    a = t["detail"]["from"]
    open_then = [e for e in events(full) if e[1] == 5 and e[2] <= a < e[2] + e[3]]
    got = [e for e in events(t) if e[1] == 5 and e[2] <= a]
    names = {full["names"][e[4]] for e in open_then}
    check("step" in names and len(got) == len(open_then), f"open at the start: {got}")
    check(t["detail"]["cut"] and all(e[2] < t["detail"]["to"] for e in events(t)), "cut")


def t_window():
    """--html-detail FROM..TO: exactly the events that overlap the window;
    each step inside it with all 27 of its kernels."""
    files = demo_traces()
    full = embedded(html_report(files))
    s = full["steps"]
    lo, hi = s[3 * 3], s[3 * 6] + s[3 * 6 + 1]  # steps 3..6
    arg = f"{lo / 1e6:.6f}ms..{hi / 1e6:.6f}ms"
    t = embedded(html_report(files, "--html-detail", arg))
    d = t["detail"]
    check(d["why"] == "asked" and not d["cut"], f"detail {d}")
    a, b = d["from"], d["to"]
    check(abs(a - lo) <= 1 and abs(b - hi) <= 1, f"window {a}..{b}, asked {lo}..{hi}")

    def overlaps(e):
        return e[2] < b and (e[2] + e[3] > a or e[2] >= a)

    def named(tl, e):
        return tuple(e[:4]) + (tl["names"][e[4]] if e[4] >= 0 else None,) + tuple(e[5:])

    want = sorted(named(full, e) for e in events(full) if overlaps(e))
    got = sorted(named(t, e) for e in events(t))
    check(got == want, f"{len(got)} events in the window, want {len(want)}")
    for i in range(3, 7):
        st, en = s[3 * i], s[3 * i] + s[3 * i + 1]
        n = sum(1 for e in events(t) if e[1] == 1 and st <= e[2] < en)
        check(n == 27, f"step {i}: {n} kernels")
    # a window after the end of the run: empty, said so, never reversed
    # (it embedded from 5 s to the run's end before)
    t = embedded(html_report(files, "--html-detail", "100s..101s"))
    d = t["detail"]
    check(d["from"] == d["to"] == 100 * 10**9 and not events(t), f"after the end: {d}")
    for bad in (("--html-detail", "5ms..1ms"), ("--html-detail", "x"),
                ("--html-budget", "5"), ("-f", "json", "--html-detail", "0..1s")):
        p = subprocess.run([REPORT, *bad] + files, capture_output=True, text=True,
                           timeout=30, env=env(preload=False))
        check(p.returncode == 2 and len(p.stderr.strip().splitlines()) == 1,
              f"{bad}: exit {p.returncode}, {p.stderr!r}")


def skip(why):
    print("SKIP:", why)
    sys.exit(77)


def browser():
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        skip("selenium is not installed")
    chrome = shutil.which("chromium") or shutil.which("chromium-browser")
    drv = shutil.which("chromedriver")
    if not chrome or not drv:
        skip("chromium or chromedriver is not installed")
    o = webdriver.ChromeOptions()
    o.binary_location = chrome
    for a in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
              "--window-size=1300,900", "--force-device-scale-factor=1"):
        o.add_argument(a)
    o.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    try:
        b = webdriver.Chrome(service=Service(drv), options=o)
    except Exception as e:  # the browser cannot start here
        skip(f"chromium does not start: {str(e).splitlines()[0]}")
    b.set_page_load_timeout(30)
    b.set_script_timeout(10)
    return b


def t_browser():
    b = None
    try:
        from selenium.webdriver.common.action_chains import ActionChains
        from selenium.webdriver.common.actions.wheel_input import ScrollOrigin
    except ImportError:
        skip("selenium is not installed")
    # The check of a kernel under a synchronisation record below needs a
    # trace where a stream's synchronisation began while one of its kernels
    # ran (its queue outlasts the host's launches, 600 us against tens of
    # us); a host thread descheduled that long on a loaded machine leaves
    # none: such a run is made again (at most 5 runs)
    for attempt in range(5):
        d = workdir()
        p = run([prog("e2e-prog-timeline")], d)
        check(p.returncode == 0 and p.stdout.strip() == "ok", f"program: {p.stdout} {p.stderr}")
        files = traces(d)
        check(len(files) == 1, f"traces {files}")
        recs, _ = dump(files[0])
        ks = by_kind(recs, "kernel")
        if any(k["stream"] == y["stream"] and k["start"] < y["start"] < k["end"]
               for y in by_kind(recs, "sync") for k in ks):
            break
    page = os.path.join(d, "report.html")
    html_report(files, "-o", page)
    t0 = time.monotonic()
    b = browser()
    try:
        b.get("file://" + page)
        panel = b.find_element("css selector", ".gp-tl")
        canvas = panel.find_element("css selector", "canvas")
        b.execute_script("arguments[0].scrollIntoView()", panel)
        # 2 threads + 2 streams (prog_timeline.c)
        check(panel.get_attribute("data-rows") == "4", f"rows {panel.get_attribute('data-rows')}")
        kinds = b.execute_script("return arguments[0].gpTimeline.rows.map(r => r[0])", panel)
        check(sorted(kinds) == ["stream", "stream", "thread", "thread"], f"rows {kinds}")

        def view():
            a, z = panel.get_attribute("data-view").split("..")
            return int(a), int(z)

        v0 = view()
        ActionChains(b).scroll_from_origin(ScrollOrigin.from_element(canvas), 0, -300).perform()
        v1 = view()
        check(v1[1] - v1[0] < v0[1] - v0[0], f"wheel: view {v0} -> {v1}")
        canvas.click()
        canvas.send_keys("w")
        v2 = view()
        check(v2[1] - v2[0] < v1[1] - v1[0], f"key w: view {v1} -> {v2}")
        canvas.send_keys("W")  # Shift or Caps Lock: the same key
        v3 = view()
        check(v3[1] - v3[0] < v2[1] - v2[0], f"key W: view {v2} -> {v3}")
        canvas.send_keys("0")
        check(view() == v0, f"key 0: view {view()}, want {v0}")
        tip = panel.find_element("css selector", ".gp-tl-tip")
        for name, blocks in (("tl_big", 264), (HOSTILE, 396)):
            # zoom onto the kernel, then hover its middle
            span = b.execute_script(
                "const t = arguments[0].gpTimeline, d = t.d;"
                "for (let i = 0; i < t.n; i++) if (t.name(i) === arguments[1])"
                "  { t.set(t.f(i, 2) - 2e4, t.f(i, 2) + t.f(i, 3) + 2e4); return t.f(i, 3); }"
                "return null;", panel, name)
            check(span == kernel_ns(blocks), f"{name!r}: duration {span}")
            at = b.execute_script("return arguments[0].gpTimeline.locate(arguments[1])",
                                  panel, name)
            check(at is not None, f"{name!r} not in view")
            r = canvas.rect
            # the element's rect is in page coordinates, locate's in the viewport's
            sy = b.execute_script("return window.scrollY")
            dx, dy = at["x"] - (r["x"] + r["width"] / 2), at["y"] + sy - (r["y"] + r["height"] / 2)
            ActionChains(b).move_to_element_with_offset(canvas, int(dx), int(dy)).perform()
            text = tip.get_attribute("textContent")
            check(tip.is_displayed() and text.split("\n")[0] == name, f"tooltip {text!r}")
            check(f"grid {blocks} blocks" in text and "launched by" in text, f"tooltip {text!r}")
            ActionChains(b).click().perform()
            sel = panel.find_element("css selector", ".gp-tl-sel").get_attribute("textContent")
            check(sel.startswith("selected: " + name) and "launched by" in sel, f"selection {sel!r}")
        # a kernel running when a synchronisation record of its stream
        # starts stays visible: the pixel near its end is not the sync's red
        # (#c62828; the sync was drawn over it)
        px = b.execute_script(
            "const t = arguments[0].gpTimeline;"
            "for (let i = 0; i < t.n; i++) {"
            "  if (t.f(i, 1) !== 1) continue;"
            "  const r = t.f(i, 0), s = t.f(i, 2), e = s + t.f(i, 3);"
            "  let hit = false;"
            "  for (let j = 0; j < t.n && !hit; j++)"
            "    hit = t.f(j, 1) === 4 && t.f(j, 0) === r && t.f(j, 2) > s && t.f(j, 2) < e;"
            "  if (!hit) continue;"
            "  t.set(s - (e - s), e + (e - s));"
            "  const c = t.canvas, bb = c.getBoundingClientRect(), dpr = c.width / bb.width;"
            "  const bx = t.box(i), x = t.x(e) - 3, y = bx[0] + 1;"
            "  const p = t.ctx.getImageData(Math.round(x * dpr), Math.round(y * dpr), 1, 1).data;"
            "  return [t.name(i), p[0], p[1], p[2]];"
            "}"
            "return null;", panel)
        print(f"kernel under a sync: {px}")
        check(px is not None and tuple(px[1:]) != (198, 40, 40),
              f"a kernel under a synchronisation record: {px}")
        check(b.execute_script("return window.__gp_pwned") is None, "the markup in a name ran")
        check(not b.find_elements("css selector", "img"), "an img element was created")
        errors = [e for e in b.get_log("browser") if e.get("level") == "SEVERE"]
        check(not errors, f"console errors: {errors}")
        b.execute_script("arguments[0].gpTimeline.set(0, 1e12)", panel)
        b.save_screenshot(os.path.join(PROGDIR, "timeline-browser.png"))
        # a job of 6 ranks (the demo with RANK and WORLD_SIZE): the page
        # shows the sections of the job's first 4 ranks, each with its
        # timeline drawn (their data elements are numbered by file, not
        # 0..3), and says how many were left out
        jd = workdir()
        for r in range(6):
            p = run([os.path.join(SIMDIR, "gpuphase-demo"), "3", "5"], jd,
                    extra={"MALLOC_PERTURB_": None, "RANK": str(r), "WORLD_SIZE": "6"})
            check(p.returncode == 0, f"demo rank {r}: {p.stderr.strip()}")
        jfiles = traces(jd)
        check(len(jfiles) == 6, f"rank traces {jfiles}")
        jpage = os.path.join(jd, "job.html")
        html_report(jfiles, "-o", jpage)
        b.get("file://" + jpage)
        drawn = b.execute_script(
            "return Array.from(document.querySelectorAll('.gp-tl')).map("
            "p => [p.getAttribute('data-src'), !!p.gpTimeline, p.querySelectorAll('canvas').length])")
        check(len(drawn) == 4 and all(t and c == 1 for _, t, c in drawn) and
              len({s for s, _, _ in drawn}) == 4, f"job page: timelines {drawn}")
        body = b.find_element("tag name", "body").text
        check("2 more processes left out" in body and "6 ranks" in body,
              "job page: the ranks left out said")
        errors = [e for e in b.get_log("browser") if e.get("level") == "SEVERE"]
        check(not errors, f"job page: console errors: {errors}")
        # without scripts: the tables and the summary line, a word on the
        # timeline, no canvas
        b.execute_cdp_cmd("Emulation.setScriptExecutionDisabled", {"value": True})
        b.get("file://" + page)
        body = b.find_element("tag name", "body").text
        check("Full detail from" in body and "needs JavaScript" in body and HOSTILE in body,
              "the page without scripts")
        check(len(b.find_elements("css selector", "table")) >= 3
              and not b.find_elements("css selector", "canvas"), "tables, no canvas")
    finally:
        b.quit()
    check(time.monotonic() - t0 < 60, "the browser test took over a minute")


TESTS = {"data": t_data, "budget": t_budget, "window": t_window, "browser": t_browser}

if __name__ == "__main__":
    sys.exit(main(TESTS))

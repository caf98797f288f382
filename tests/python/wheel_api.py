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
    text = {"json": r.json, "text": r.summary, "html": r.html}[fmt]()
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
    print(f"rows={len(df)} names={sorted(set(df['name_text']))!r}")


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


def cmd_noop():
    """Without the preload: markers do nothing and get in nothing's way."""
    calls = []

    @gpuphase.range("f")
    def f(x, y=1):
        calls.append(x)
        return x + y

    with gpuphase.range("outer") as r:
        with gpuphase.step(items=4):
            v = f(2, y=3)
        with gpuphase.step():
            gpuphase.items(7)
    assert v == 5 and calls == [2] and r.name == "outer" and f.__name__ == "f"
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
    # what Python itself refuses is refused as Python refuses it
    for fn, cls in ((lambda: gpuphase.items(-1), ValueError),
                    (lambda: gpuphase.items(2 ** 64), ValueError),
                    (lambda: gpuphase.step(items=-1), ValueError),
                    (lambda: gpuphase.items("x"), TypeError),
                    (lambda: gpuphase.report(good + "\0other"), ValueError),
                    (lambda: gpuphase.records(good + "\0other"), ValueError),
                    (lambda: gpuphase.report(None), TypeError),
                    (lambda: gpuphase.report(123), TypeError),
                    (lambda: gpuphase.range(5), TypeError),
                    (lambda: gpuphase.records(good, kinds=5), TypeError)):
        try:
            fn()
        except cls:
            continue
        except Exception as e:
            raise AssertionError(f"{cls.__name__} expected, got {e!r}")
        raise AssertionError(f"no {cls.__name__} raised")
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
    for m in msgs:
        assert "\n" not in m, repr(m)
    print("\n".join(msgs))


if __name__ == "__main__":
    globals()["cmd_" + sys.argv[1]](*sys.argv[2:])

"""The shim's Python frame reader (preload/pyframes.c) through its test
library (pyframes_lib.c), under each CPython found on this machine.
  test_pyframes.py VERSION        frames of prog_pyframes.py under CPython
                                  VERSION (3.9 ... 3.14, or "system": the
                                  distribution's /usr/bin/python3, libpython
                                  linked into the executable)
  test_pyframes.py skew VERSION   the test-only build with a wrong layout:
                                  capture turns itself off with one stderr
                                  line; output and exit code unchanged
Exit 77 (skipped) when that interpreter is not installed.
Environment: GP_PYFRAMES_LIB, GP_PYFRAMES_SKEW_LIB (the two builds)."""
import os
import re
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from findpython import find_python  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
PROG = os.path.join(HERE, "prog_pyframes.py")
PRELOAD_PREFIX = os.environ.get("GP_PRELOAD_PREFIX", "")


def fail(msg):
    print("FAIL:", msg)
    sys.exit(1)


def marks():
    m = {}
    with open(PROG, encoding="utf-8") as f:
        for i, line in enumerate(f, 1):
            g = re.search(r"# LINE:(\w+)", line)
            if g:
                m[g.group(1)] = i
    return m


def run(py, lib, d):
    out = os.path.join(d, "captures.txt")
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.pop("PYTHONHOME", None)
    if PRELOAD_PREFIX:
        env["LD_PRELOAD"] = PRELOAD_PREFIX
    env["UBSAN_OPTIONS"] = "halt_on_error=1:print_stacktrace=1"  # a finding fails
    p = subprocess.run([py, PROG, lib, out], env=env, capture_output=True,
                       text=True, timeout=60)
    caps = {}
    cur = None
    extra = {}
    if os.path.exists(out):
        with open(out, encoding="utf-8") as f:
            for line in f:
                line = line.rstrip("\n")
                if line.startswith("capture "):
                    _, label, n = line.split(" ")
                    cur = caps.setdefault(label, {"n": int(n), "frames": []})
                elif line.startswith("evalrange "):
                    extra["evalrange"] = int(line.split()[1])
                else:
                    g = re.fullmatch(r"(.*):(-?\d+) \((.*)\)( entry)?", line)
                    if not g:
                        fail("bad capture line: " + line)
                    cur["frames"].append((g.group(1), int(g.group(2)), g.group(3),
                                          bool(g.group(4))))
    return p, caps, extra


def version_of(py):
    v = subprocess.run([py, "-c", "import sys; print(sys.version_info[0], sys.version_info[1])"],
                       capture_output=True, text=True, timeout=30).stdout.split()
    return int(v[0]), int(v[1])


def check_frames(py, caps, extra):
    major, minor = version_of(py)
    m = marks()
    prog = os.path.realpath(PROG)
    every_entry = minor <= 10  # one evaluation-loop call per frame

    def q(cls, fn):  # co_qualname from 3.11, co_name before
        return cls + "." + fn if (cls and minor >= 11) else fn

    def expect(label, want):
        c = caps.get(label)
        if c is None:
            fail("no capture %s" % label)
        fr = c["frames"]
        if c["n"] != len(fr) or len(fr) < len(want):
            fail("%s: %d frames %r, want at least %r" % (label, c["n"], fr, want))
        for i, (name, line, entry) in enumerate(want):
            f, l, n, e = fr[i]
            if os.path.realpath(f) != prog or l != line or n != name:
                fail("%s frame %d: %s:%d (%s), want %s:%d (%s)" %
                     (label, i, f, l, n, prog, line, name))
            if e != (entry or every_entry):
                fail("%s frame %d (%s): entry %s, want %s" %
                     (label, i, name, e, entry or every_entry))
        return fr

    fr = expect("main", [("inner", m["inner"], False),
                         (q("Outer", "middle"), m["middle"], False),
                         ("main", m["main"], False),
                         ("<module>", m["module"], True)])
    if len(fr) != 4:
        fail("main: %d frames, want 4: %r" % (len(fr), fr))
    # via_map is called by map's C code: a run of its own
    fr = expect("map", [("inner2", m["inner2"], False),
                        ("via_map", m["via_map"], True),
                        ("main", m["main_map"], False),
                        ("<module>", m["module"], True)])
    if len(fr) != 4:
        fail("map: %d frames, want 4: %r" % (len(fr), fr))
    # cut after two frames: the second still known as the start of a run
    fr = expect("map2", [("inner2", m["inner2_cut"], False),
                         ("via_map", m["via_map"], True)])
    if len(fr) != 2:
        fail("map2: %d frames, want 2: %r" % (len(fr), fr))
    fr = expect("unicode", [("\U00020000", m["ucs4"], False),
                            ("\u540d", m["ucs2"], False),
                            ("\u00f1", m["latin1"], False),
                            ("main", m["main_unicode"], False)])
    # 200 three-byte characters cut to the 255 bytes kept: 85 whole ones
    lf = caps.get("long", {}).get("frames", [])
    if not lf or lf[0][2] != "\u540d" * 85 or lf[0][1] != 2:
        fail("long name: %r" % (lf[:1],))
    # a line table cut to 16 KiB: lines before the cut known, after it the
    # first line ("not said"), except in 3.9 whose co_lnotab cannot tell
    # a cut from the last line going on
    bf = caps.get("big_first", {}).get("frames", [])
    bl = caps.get("big_last", {}).get("frames", [])
    if not bf or bf[0][1:3] != (2, "big"):
        fail("big function, first line: %r" % (bf[:1],))
    if not bl or bl[0][2] != "big" or (minor >= 10 and bl[0][1] != 1):
        fail("big function, line past the cut table: %r" % (bl[:1],))
    t = caps.get("thread")
    if not t or not t["frames"]:
        fail("thread: no frames")
    f0 = t["frames"][0]
    if (os.path.realpath(f0[0]), f0[1], f0[2]) != (prog, m["thread"], "in_thread"):
        fail("thread: innermost %r" % (f0,))
    last = t["frames"][-1]
    if not last[3] or not last[0].endswith("threading.py"):
        fail("thread: outermost %r should be threading.py's, an entry" % (last,))
    # a forked child keeps reading (gp_py_after_fork)
    fr = expect("fork", [("main", m["fork"], False),
                         ("<module>", m["module"], True)])
    if len(fr) != 2:
        fail("fork: %d frames, want 2: %r" % (len(fr), fr))
    if caps.get("cthread", {}).get("n") != 0:
        fail("thread created in C: %r" % caps.get("cthread"))
    if extra.get("evalrange") != 1:
        fail("gp_py_eval_ranges: not the range of _PyEval_EvalFrameDefault")
    print("ok: Python %d.%d (%s): frames, lines, entries, threads, fork" % (major, minor, py))


def main():
    args = sys.argv[1:]
    skew = args and args[0] == "skew"
    version = args[-1]
    py = find_python(version)
    if not py:
        print("skip: no Python", version)
        sys.exit(77)
    lib = os.environ["GP_PYFRAMES_LIB"]
    with tempfile.TemporaryDirectory() as d:
        p, caps, extra = run(py, lib, d)
        if p.returncode != 3 or p.stdout != "computed True\n":
            fail("normal run: rc %d, stdout %r, stderr %r" % (p.returncode, p.stdout, p.stderr))
        if "gpuphase" in p.stderr or "runtime error" in p.stderr or "Sanitizer" in p.stderr:
            fail("normal run: stderr %r" % p.stderr)
        if not skew:
            check_frames(py, caps, extra)
            return
    with tempfile.TemporaryDirectory() as d:
        s, scaps, _ = run(py, os.environ["GP_PYFRAMES_SKEW_LIB"], d)
        if s.returncode != p.returncode or s.stdout != p.stdout:
            fail("skewed layout changed the program: rc %d, stdout %r" % (s.returncode, s.stdout))
        lines = [l for l in s.stderr.splitlines() if "gpuphase" in l]
        if len(lines) != 1 or "frame layout check failed" not in lines[0]:
            fail("skewed layout: stderr %r, want one line saying the check failed" % s.stderr)
        if any(c["n"] for c in scaps.values()):
            fail("skewed layout: frames captured anyway: %r" % scaps)
        print("ok: Python %s: wrong layout caught: %s" % (version, lines[0]))


main()

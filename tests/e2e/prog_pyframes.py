"""Calls the frame reader's test library (pyframes_lib.c) from known lines
of known functions; test_pyframes.py finds the lines by the "LINE:" marks.
Runs under any CPython 3.9+. argv: library, capture file.
stdout does not depend on what the reader found (the captures go to the
file), so a run whose reader turned itself off prints the same."""
import ctypes
import os
import sys
import threading
import time

lib = ctypes.CDLL(sys.argv[1])
out = sys.argv[2].encode()
for fn in (lib.gp_test_capture, lib.gp_test_capture_cthread):
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p]
lib.gp_test_eval_range.argtypes = [ctypes.c_ulonglong]
lib.gp_test_capture_max.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_int]


def wait_ready():
    # The reader checks its layout in a pending call, which the main thread
    # runs between two bytecodes; until then captures are empty.
    deadline = time.monotonic() + 3
    while lib.gp_test_count() == 0 and time.monotonic() < deadline:
        time.sleep(0.001)


def inner(k):
    n = lib.gp_test_capture(out, b"main")  # LINE:inner
    return n + k


class Outer:
    def middle(self, k):
        return inner(k) * 2  # LINE:middle


def inner2():
    lib.gp_test_capture_max(out, b"map2", 2)  # LINE:inner2_cut
    return lib.gp_test_capture(out, b"map")  # LINE:inner2


def via_map(x):
    return inner2() + x  # LINE:via_map


def in_thread():
    lib.gp_test_capture(out, b"thread")  # LINE:thread


# Names read from compact str objects of each width (Latin-1, UCS-2,
# UCS-4), and one longer than the 255 bytes a description keeps.
def 𠀀():
    return lib.gp_test_capture(out, b"unicode")  # LINE:ucs4


def 名():
    return 𠀀()  # LINE:ucs2


def ñ():
    return 名()  # LINE:latin1


exec("def " + "名" * 200 + "():\n"
     "    return lib.gp_test_capture(out, b'long')\n"
     "long_name = " + "名" * 200)


# A function whose line table is longer than the 16 KiB a description
# keeps: its first lines known, its last past the cut.
exec("def big():\n"
     "    lib.gp_test_capture(out, b'big_first')\n"
     + "    x = 1\n" * 12000 +
     "    lib.gp_test_capture(out, b'big_last')\n")

# The reader's check then runs with this on the main thread's stack at a
# line past the cut of its table.
exec("def big_start():\n"
     + "    x = 1\n" * 12000 +
     "    lib.gp_test_start()\n"
     "    wait_ready()\n")


def main():
    big_start()
    r = Outer().middle(1)  # LINE:main
    r += sum(map(via_map, [0]))  # LINE:main_map
    ñ()  # LINE:main_unicode
    long_name()
    big()
    t = threading.Thread(target=in_thread)
    t.start()
    t.join()
    lib.gp_test_capture_cthread(out, b"cthread")
    pid = os.fork()
    if pid == 0:
        lib.gp_test_after_fork()
        lib.gp_test_capture(out, b"fork")  # LINE:fork
        os._exit(0)
    os.waitpid(pid, 0)
    try:
        evalf = ctypes.cast(ctypes.pythonapi._PyEval_EvalFrameDefault,
                            ctypes.c_void_p).value
    except AttributeError:
        evalf = 0
    with open(sys.argv[2], "a") as f:
        f.write("evalrange %d\n" % lib.gp_test_eval_range(evalf or 0))
    print("computed", r >= 0)
    sys.stdout.flush()
    sys.exit(3)


main()  # LINE:module

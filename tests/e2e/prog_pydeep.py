"""A Python program that blocks in CUDA (ctypes, the GIL released, as in
PyTorch) from stacks of exact Python depths, for the cap on the Python
frames a call site keeps (test_stacks.py, python_deep).

    prog_pydeep.py LIBCUDART DEPTH...
                         for the k-th DEPTH (k = 1..4), one
                         cudaDeviceSynchronize from the line marked LEAF-k
                         of leaf(), with exactly DEPTH Python frames on the
                         thread's stack (leaf and the module's own frame
                         counted); prints "depth K N" for each, then "ok"."""
import ctypes
import sys

ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
rt = ctypes.CDLL(None)  # the global scope: the preloaded library first


def frames_from(f):
    n = 0
    while f is not None:
        n += 1
        f = f.f_back
    return n


def leaf(k):
    print("depth", k, frames_from(sys._getframe()))
    sys.stdout.flush()
    if k == 1:
        return rt.cudaDeviceSynchronize()  # LEAF-1
    if k == 2:
        return rt.cudaDeviceSynchronize()  # LEAF-2
    if k == 3:
        return rt.cudaDeviceSynchronize()  # LEAF-3
    return rt.cudaDeviceSynchronize()  # LEAF-4


def dive(n, k):
    if n > 0:
        return dive(n - 1, k)
    return leaf(k)


def main():
    depths = [int(a) for a in sys.argv[2:]]
    assert 1 <= len(depths) <= 4
    sys.setrecursionlimit(max(1000, 2 * max(depths)))
    # recording starts at the first CUDA call, and the frame reader checks
    # its layout once the interpreter then runs a pending call, which it
    # does between bytecodes: give it some
    assert rt.cudaSetDevice(0) == 0
    sum(i * i for i in range(200000))
    here = frames_from(sys._getframe())  # main and <module>
    for k, d in enumerate(depths, 1):
        # dive(n) adds n + 1 frames, leaf one more
        n = d - here - 2
        assert n >= 0, "depth %d is too shallow" % d
        assert dive(n, k) == 0
    print("ok")


if __name__ == "__main__":
    main()

"""A Python program whose CUDA calls block from known lines of known
functions, through ctypes (which releases the GIL during the call, as
PyTorch's bindings do), on the simulated runtime. Lines are marked by the
comments at their end; test_stacks.py reads them from this file.

    prog_pysites.py LIBCUDART N
                         N blocking copies from copy_here() and N device
                         synchronisations from wait_here(), called from
                         step(); prints "ok"."""
import ctypes
import sys

ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
rt = ctypes.CDLL(None)  # the global scope: the preloaded library first
MB = 1 << 20


def copy_here(dev, buf):
    return rt.cudaMemcpy(dev, buf, ctypes.c_size_t(4 * MB), 1)  # LINE-COPY


def wait_here():
    return rt.cudaDeviceSynchronize()  # LINE-WAIT


def step(dev, buf):
    assert copy_here(dev, buf) == 0
    assert wait_here() == 0


def main():
    n = int(sys.argv[2])
    dev = ctypes.c_void_p()
    assert rt.cudaMalloc(ctypes.byref(dev), ctypes.c_size_t(4 * MB)) == 0
    buf = ctypes.create_string_buffer(4 * MB)
    # the frame reader checks its layout once the interpreter runs a
    # pending call, which it does between bytecodes: give it some
    sum(i * i for i in range(200000))
    for _ in range(n):
        step(dev, buf)
    assert rt.cudaFree(dev) == 0
    print("ok")


if __name__ == "__main__":
    main()

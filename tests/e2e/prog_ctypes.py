"""A Python program that drives the simulated CUDA runtime through ctypes
and leaves with os._exit, as multiprocessing workers do."""
import ctypes
import os
import sys

lib = ctypes.CDLL(sys.argv[1], mode=ctypes.RTLD_GLOBAL)
# Calls go through the global scope, where the preloaded library is first.
rt = ctypes.CDLL(None)
ptr = ctypes.c_void_p()
assert rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(1 << 20)) == 0
buf = ctypes.create_string_buffer(1 << 20)
for _ in range(int(sys.argv[2])):
    assert rt.cudaMemcpy(ptr, buf, ctypes.c_size_t(1 << 20), 1) == 0
assert rt.cudaDeviceSynchronize() == 0
assert rt.cudaFree(ptr) == 0
sys.stdout.flush()
os._exit(int(sys.argv[3]))

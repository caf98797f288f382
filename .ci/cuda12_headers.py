#!/usr/bin/env python3
"""Assembles the headers of a CUDA 12 toolkit (runtime, driver and CUPTI)
from NVIDIA's wheels on PyPI, so that CI can check that gpuphase builds with
CUDA 12 as well as with the installed CUDA 13 toolkit.

    cuda12_headers.py VERSION DEST     e.g. 12.0  /tmp/cuda-12.0

VERSION picks the wheels (12.0: the oldest CUDA 12, 12.9: the newest).
The NVTX headers (header-only, version-independent) come from the installed
toolkit. Prints DEST on success; exits 1 with a message otherwise."""
import os
import shutil
import subprocess
import sys
import tempfile
import zipfile

WHEELS = {
    "12.0": ["nvidia-cuda-runtime-cu12==12.0.107", "nvidia-cuda-cupti-cu12==12.0.90"],
    "12.9": ["nvidia-cuda-runtime-cu12==12.9.79", "nvidia-cuda-cupti-cu12==12.9.79"],
}


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in WHEELS:
        sys.exit(f"usage: {sys.argv[0]} {{{','.join(WHEELS)}}} DEST")
    version, dest = sys.argv[1], sys.argv[2]
    nvtx = None
    for home in (os.environ.get("CUDA_HOME", ""), "/usr/local/cuda"):
        if home and os.path.isdir(os.path.join(home, "include", "nvtx3")):
            nvtx = os.path.join(home, "include", "nvtx3")
            break
    if not nvtx:
        sys.exit("cuda12_headers: no CUDA toolkit with include/nvtx3 found")
    tmp = tempfile.mkdtemp(prefix="cuda12-wheels-")
    r = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        "-d", tmp] + WHEELS[version], capture_output=True, text=True)
    if r.returncode:
        sys.exit("cuda12_headers: pip download failed: " + (r.stderr.strip().splitlines()
                                                           or ["?"])[-1])
    inc = os.path.join(dest, "include")
    shutil.rmtree(dest, ignore_errors=True)
    os.makedirs(inc)
    for whl in sorted(os.listdir(tmp)):
        with zipfile.ZipFile(os.path.join(tmp, whl)) as z:
            for name in z.namelist():
                parts = name.split("/")
                # nvidia/<package>/include/<path>
                if len(parts) > 3 and parts[0] == "nvidia" and parts[2] == "include" \
                        and not name.endswith("/"):
                    out = os.path.join(inc, *parts[3:])
                    os.makedirs(os.path.dirname(out), exist_ok=True)
                    with z.open(name) as src, open(out, "wb") as dst:
                        shutil.copyfileobj(src, dst)
    shutil.copytree(nvtx, os.path.join(inc, "nvtx3"))
    shutil.rmtree(tmp, ignore_errors=True)
    for need in ("cuda.h", "cuda_runtime_api.h", "cupti.h"):
        if not os.path.exists(os.path.join(inc, need)):
            sys.exit(f"cuda12_headers: {need} missing from the wheels")
    print(dest)


if __name__ == "__main__":
    main()

"""A driver-only program with its kernels in a module file
(prog_drvmodule.c, like the CUDA samples' vectorAddDrv), on the simulated
GPU. Expected values come from the program's source (what it launches,
with which dims) and the simulator's timing model (tests/simcuda/README.md:
a kernel of B blocks runs ceil(B / 132) waves of 10 us; Modules: a kernel's
name and static shared memory come from its image, here built by nvcc from
prog_drvmodule.cu). "run" and "report" are skipped (exit 77) where nvcc
did not build the fatbin (or the simulated driver, built without libelf,
could not read it)."""
import json
import os
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from gptest import *  # noqa: E402,F401,F403

FATBIN = os.environ.get("GP_DRVMODULE_FATBIN", "")
N, LAUNCHES = 50000, 3
BLOCKS = (N + 255) // 256  # 196: two waves on 132 SMs
FLOAT_BYTES = N * 4


def both(args):
    """The program without and with the shim, in fresh directories: they
    must behave alike. Returns the run with the shim and its directory."""
    d0, d1 = workdir(), workdir()
    p0 = run(args, d0, preload=False)
    p1 = run(args, d1)
    check(p0.returncode == p1.returncode,
          f"exit code {p0.returncode} without the shim, {p1.returncode} with it: {p1.stderr}")
    check(p0.stdout == p1.stdout, f"stdout differs:\n {p0.stdout!r}\n {p1.stdout!r}")
    check(not traces(d0), "a trace without the shim")
    return p1, d1


def t_run():
    """Identical exit code and stdout with and without the shim; the trace
    holds the 3 + 1 kernels with the module's names, the launches' dims and
    the model's durations, and the three copies, every one linked by its
    correlation id to the call that issued it; CUPTI was the one the
    dynamic loader gives a driver-only program (not degraded, no warning)."""
    p, d = both([prog("e2e-prog-drvmodule"), FATBIN, str(N), str(LAUNCHES)])
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    check(p.stdout == f"gpuphase-sim: VecAdd_kernel x{LAUNCHES}, Scale_kernel x1, "
          f"{BLOCKS} blocks of 256 threads\n", f"stdout {p.stdout!r}")
    check("CUPTI" not in p.stderr, f"stderr: {p.stderr.strip()}")
    files = traces(d)
    check(len(files) == 1, f"traces {files}")
    recs, _ = dump(files[0])
    check(not by_kind(recs, "state"), "trace degraded")
    calls = api_calls(recs)
    by_corr = {c["corr"]: c for c in calls if c["corr"]}
    kernels = sorted(by_kind(recs, "kernel"), key=lambda k: k["start"])
    names = [k["name"] for k in kernels]
    check(names == ["VecAdd_kernel"] * LAUNCHES + ["Scale_kernel"], f"kernels {names}")
    for k in kernels:
        check(k["grid_x"] == BLOCKS and k["block_x"] == 256, f"dims {k}")
        check(k["end"] - k["start"] == kernel_ns(BLOCKS), f"duration {k}")
        c = by_corr.get(k["corr"])
        want = "cuLaunchKernelEx" if k["name"] == "Scale_kernel" else "cuLaunchKernel"
        check(c is not None and c["fn"] == want, f"kernel {k} issued by {c}")
    copies = by_kind(recs, "memcpy")
    check(len(copies) == 3 and all(c["bytes"] == FLOAT_BYTES for c in copies),
          f"copies {copies}")
    for c in copies:
        a = by_corr.get(c["corr"])
        check(a is not None and a["fn"] in ("cuMemcpyHtoD_v2", "cuMemcpyDtoH_v2"),
              f"copy {c} issued by {a}")
    launches = [c for c in calls if c["fn"].startswith("cuLaunchKernel")]
    check(len(launches) == LAUNCHES + 1, f"launch calls {launches}")
    # the module's load and unload are calls of their own, before the first
    # launch and after the last
    loads = [c for c in calls if c["fn"] == "cuModuleLoad"]
    unloads = [c for c in calls if c["fn"] == "cuModuleUnload"]
    check(len(loads) == 1 and loads[0]["ret"] == 0, f"cuModuleLoad records {loads}")
    check(len(unloads) == 1 and unloads[0]["ret"] == 0, f"cuModuleUnload records {unloads}")
    check(loads[0]["end"] <= min(c["start"] for c in launches) and
          unloads[0]["start"] >= max(c["end"] for c in launches),
          "module load/unload not around the launches")


def t_report():
    """The report names the kernels as the module does, counts them as
    launched and gives the model's times, dims and (for Scale_kernel) the
    image's 1024 B of static shared memory plus the 512 B launched."""
    p, d = both([prog("e2e-prog-drvmodule"), FATBIN, str(N), str(LAUNCHES)])
    check(p.returncode == 0, f"program failed {p.returncode}: {p.stderr}")
    r = subprocess.run([REPORT, "--format", "json", traces(d)[0]], capture_output=True,
                       text=True, timeout=60, env=env(preload=False))
    check(r.returncode == 0, f"report failed {r.returncode}: {r.stderr}")
    j = json.loads(r.stdout)
    ks = {k["name"]: k for k in j["kernels"]}
    check(set(ks) == {"VecAdd_kernel", "Scale_kernel"}, f"kernels {list(ks)}")
    v, s = ks["VecAdd_kernel"], ks["Scale_kernel"]
    check(v["count"] == LAUNCHES and v["total_ns"] == LAUNCHES * kernel_ns(BLOCKS),
          f"VecAdd_kernel {v}")
    check(s["count"] == 1 and s["total_ns"] == kernel_ns(BLOCKS), f"Scale_kernel {s}")
    check(v["grid"] == BLOCKS and v["block"] == 256, f"VecAdd_kernel dims {v}")
    check(v["shared_mem_bytes"] == 0 and s["shared_mem_bytes"] == 1024 + 512,
          f"shared memory {v['shared_mem_bytes']} {s['shared_mem_bytes']}")
    text = subprocess.run([REPORT, traces(d)[0]], capture_output=True, text=True,
                          timeout=60, env=env(preload=False)).stdout
    check("VecAdd_kernel" in text and "Scale_kernel" in text, f"text report:\n{text}")


def t_errors():
    """A module file that is missing, or no module at all: the program
    fails the same way (its message, exit code 1) with and without the
    shim, which records the calls made before."""
    d = workdir()
    bad = os.path.join(d, "not-a-module.fatbin")
    with open(bad, "w") as f:
        f.write("this is no module\n")
    for path, err, code in ((os.path.join(d, "missing.fatbin"), "CUDA_ERROR_FILE_NOT_FOUND", 301),
                            (bad, "CUDA_ERROR_INVALID_IMAGE", 200)):
        p, d1 = both([prog("e2e-prog-drvmodule"), path])
        check(p.returncode == 1 and p.stdout == "", f"{err}: {p.returncode} {p.stdout!r}")
        check(f"cuModuleLoad(&mod, argv[1]) failed: {err}" in p.stderr,
              f"{err}: stderr {p.stderr!r}")
        files = traces(d1)
        check(len(files) == 1, f"{err}: traces {files}")
        recs, _ = dump(files[0])
        fns = [c["fn"] for c in api_calls(recs)]
        check("cuInit" in fns and not by_kind(recs, "kernel"), f"{err}: calls {fns}")
        loads = [c["ret"] for c in api_calls(recs) if c["fn"] == "cuModuleLoad"]
        check(loads == [code], f"{err}: cuModuleLoad recorded with {loads}, want [{code}]")


TESTS = {"run": t_run, "report": t_report, "errors": t_errors}

if __name__ == "__main__":
    if len(sys.argv) == 2 and sys.argv[1] in ("run", "report") and not FATBIN:
        print("skipped: no fatbin of prog_drvmodule.cu (no nvcc, or no libelf)")
        sys.exit(77)
    sys.exit(main(TESTS))

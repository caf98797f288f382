"""Checks preload/gp_nvml.h (our declarations of NVML's ABI, used by the
sampler and the simulated NVML) against NVIDIA's nvml.h: struct sizes,
field offsets and constants, by compiling static assertions with both
headers. nvml.h is not in the CUDA toolkit; it comes from the
nvidia-nvml-dev wheel on PyPI. Skipped (exit 77) when it cannot be
fetched (no network) or no C compiler runs.

    check_nvml_layout.py CC PRELOAD_DIR
"""
import glob
import os
import subprocess
import sys
import tempfile
import zipfile

CHECKS = r"""
#include <stddef.h>
#include "nvml.h"
#include "gp_nvml.h"
#define SAME_SIZE(a, b) _Static_assert(sizeof(a) == sizeof(b), #a " size")
#define SAME_OFF(a, b, f, g) _Static_assert(offsetof(a, f) == offsetof(b, g), #a "." #f)
#define SAME_VAL(a, b) _Static_assert((long long)(a) == (long long)(b), #a)
SAME_SIZE(nvmlPciInfo_t, gp_nvmlPciInfo_t);
SAME_OFF(nvmlPciInfo_t, gp_nvmlPciInfo_t, bus, bus);
SAME_OFF(nvmlPciInfo_t, gp_nvmlPciInfo_t, busId, busId);
SAME_SIZE(nvmlUtilization_t, gp_nvmlUtilization_t);
SAME_SIZE(nvmlMemory_v2_t, gp_nvmlMemory_v2_t);
SAME_OFF(nvmlMemory_v2_t, gp_nvmlMemory_v2_t, used, used);
SAME_VAL(nvmlMemory_v2, GP_NVML_MEMORY_V2);
SAME_SIZE(nvmlValue_t, gp_nvmlValue_t);
SAME_SIZE(nvmlSample_t, gp_nvmlSample_t);
SAME_OFF(nvmlSample_t, gp_nvmlSample_t, sampleValue, sampleValue);
SAME_SIZE(nvmlProcessInfo_t, gp_nvmlProcessInfo_t);
SAME_OFF(nvmlProcessInfo_t, gp_nvmlProcessInfo_t, usedGpuMemory, usedGpuMemory);
SAME_SIZE(nvmlGpmMetric_t, gp_nvmlGpmMetric_t);
SAME_OFF(nvmlGpmMetric_t, gp_nvmlGpmMetric_t, value, value);
SAME_OFF(nvmlGpmMetric_t, gp_nvmlGpmMetric_t, metricInfo, metricInfo);
SAME_OFF(nvmlGpmMetricsGet_t, gp_nvmlGpmMetricsGet_t, sample1, sample1);
SAME_OFF(nvmlGpmMetricsGet_t, gp_nvmlGpmMetricsGet_t, metrics, metrics);
_Static_assert(sizeof(nvmlGpmMetricsGet_t) <= sizeof(gp_nvmlGpmMetricsGet_t), "metrics room");
SAME_SIZE(nvmlGpmSupport_t, gp_nvmlGpmSupport_t);
SAME_VAL(NVML_GPM_METRICS_GET_VERSION, GP_NVML_GPM_METRICS_GET_VERSION);
SAME_VAL(NVML_GPM_SUPPORT_VERSION, GP_NVML_GPM_SUPPORT_VERSION);
SAME_VAL(NVML_SUCCESS, GP_NVML_SUCCESS);
SAME_VAL(NVML_ERROR_UNINITIALIZED, GP_NVML_ERROR_UNINITIALIZED);
SAME_VAL(NVML_ERROR_NOT_SUPPORTED, GP_NVML_ERROR_NOT_SUPPORTED);
SAME_VAL(NVML_ERROR_NO_PERMISSION, GP_NVML_ERROR_NO_PERMISSION);
SAME_VAL(NVML_ERROR_NOT_FOUND, GP_NVML_ERROR_NOT_FOUND);
SAME_VAL(NVML_ERROR_INSUFFICIENT_SIZE, GP_NVML_ERROR_INSUFFICIENT_SIZE);
SAME_VAL(NVML_ERROR_DRIVER_NOT_LOADED, GP_NVML_ERROR_DRIVER_NOT_LOADED);
SAME_VAL(NVML_ERROR_LIBRARY_NOT_FOUND, GP_NVML_ERROR_LIBRARY_NOT_FOUND);
SAME_VAL(NVML_ERROR_GPU_IS_LOST, GP_NVML_ERROR_GPU_IS_LOST);
SAME_VAL(NVML_ERROR_IN_USE, GP_NVML_ERROR_IN_USE);
SAME_VAL(NVML_ERROR_ARGUMENT_VERSION_MISMATCH, GP_NVML_ERROR_ARGUMENT_VERSION_MISMATCH);
SAME_VAL(NVML_GPU_UTILIZATION_SAMPLES, GP_NVML_GPU_UTILIZATION_SAMPLES);
SAME_VAL(NVML_MEMORY_UTILIZATION_SAMPLES, GP_NVML_MEMORY_UTILIZATION_SAMPLES);
SAME_VAL(NVML_VALUE_TYPE_UNSIGNED_INT, GP_NVML_VALUE_TYPE_UNSIGNED_INT);
SAME_VAL(NVML_CLOCK_SM, GP_NVML_CLOCK_SM);
SAME_VAL(NVML_CLOCK_MEM, GP_NVML_CLOCK_MEM);
SAME_VAL(NVML_TEMPERATURE_GPU, GP_NVML_TEMPERATURE_GPU);
SAME_VAL(NVML_PCIE_UTIL_TX_BYTES, GP_NVML_PCIE_UTIL_TX_BYTES);
SAME_VAL(NVML_PCIE_UTIL_RX_BYTES, GP_NVML_PCIE_UTIL_RX_BYTES);
SAME_VAL(nvmlClocksEventReasonGpuIdle, GP_NVML_CLOCKS_EVENT_GPU_IDLE);
SAME_VAL(NVML_GPM_METRIC_SM_UTIL, GP_NVML_GPM_SM_UTIL);
SAME_VAL(NVML_GPM_METRIC_SM_OCCUPANCY, GP_NVML_GPM_SM_OCCUPANCY);
SAME_VAL(NVML_GPM_METRIC_ANY_TENSOR_UTIL, GP_NVML_GPM_ANY_TENSOR_UTIL);
SAME_VAL(NVML_GPM_METRIC_DRAM_BW_UTIL, GP_NVML_GPM_DRAM_BW_UTIL);
SAME_VAL(NVML_GPM_METRIC_PCIE_TX_PER_SEC, GP_NVML_GPM_PCIE_TX_PER_SEC);
SAME_VAL(NVML_GPM_METRIC_PCIE_RX_PER_SEC, GP_NVML_GPM_PCIE_RX_PER_SEC);
SAME_VAL(NVML_GPM_METRIC_NVLINK_TOTAL_RX_PER_SEC, GP_NVML_GPM_NVLINK_TOTAL_RX_PER_SEC);
SAME_VAL(NVML_GPM_METRIC_NVLINK_TOTAL_TX_PER_SEC, GP_NVML_GPM_NVLINK_TOTAL_TX_PER_SEC);
int main(void) { return 0; }
"""


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[-1].strip())
        return 2
    cc, inc = sys.argv[1], sys.argv[2]
    d = tempfile.mkdtemp(prefix="gp-nvml-h-")
    p = subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        "-d", d, "nvidia-nvml-dev"], capture_output=True, text=True,
                       timeout=300)
    wheels = glob.glob(os.path.join(d, "*.whl"))
    if p.returncode != 0 or not wheels:
        print("skipped: nvidia-nvml-dev not fetched:", (p.stderr.strip() or "no wheel")[-200:])
        return 77
    with zipfile.ZipFile(wheels[0]) as z:
        names = [n for n in z.namelist() if n.endswith("/nvml.h")]
        if not names:
            print("FAIL: no nvml.h in", os.path.basename(wheels[0]))
            return 1
        with open(os.path.join(d, "nvml.h"), "wb") as f:
            f.write(z.read(names[0]))
    src = os.path.join(d, "check.c")
    with open(src, "w") as f:
        f.write(CHECKS)
    r = subprocess.run([cc, "-std=gnu11", "-I", d, "-I", inc, "-o", os.path.join(d, "check"),
                        src], capture_output=True, text=True)
    if r.returncode != 0:
        print("FAIL: gp_nvml.h differs from", os.path.basename(wheels[0]), "nvml.h:")
        print(r.stderr[-3000:])
        return 1
    print("ok:", os.path.basename(wheels[0]))
    return 0


if __name__ == "__main__":
    sys.exit(main())

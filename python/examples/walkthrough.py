"""The notebook walk-through of docs/python.md as a script: a report, its
data, the records of one trace, and the page a notebook shows inline.

usage: python walkthrough.py 'gpuphase-*.gph' [OUT.html]"""
import sys

import gpuphase

traces = sys.argv[1] if len(sys.argv) > 1 else "gpuphase-*.gph"

# 1. The report: the analysis runs in C; .summary() is the text report.
r = gpuphase.report(traces, window="10ms")
print(r.summary().splitlines()[0])

# 2. .data is the JSON report as Python data (docs/report-json.md).
for dev in r.data["devices"]:
    shares = {k: v["pct"] for k, v in dev["breakdown"].items()}
    print(f"GPU {dev['id']}: " + ", ".join(f"{k} {v:.1f}%" for k, v in shares.items()))
steps = r.data["steps"]
print(f"steps: {steps['count']} ({steps['source']}), median {steps['median_ns']} ns")

# 3. The records of one trace, in chunks (NumPy arrays when installed).
kernels = 0
ns = 0
for chunk in gpuphase.records(r.paths[0], kinds=["kernel"]):
    k = chunk.get("kernel", [])
    kernels += len(k)
    ns += sum(int(e) - int(s) for s, e in zip(k["start"], k["end"])) if hasattr(k, "dtype") \
        else sum(x.end - x.start for x in k)
print(f"kernels: {kernels}, {ns} ns on the device")
try:
    df = gpuphase.records(r.paths[0]).to_pandas("kernel")
    print(df.groupby("name_text")["index"].count().to_string())
except ImportError:
    print("(pandas is not installed: no DataFrame)")

# 4. In a notebook the last expression `r` shows the HTML report inline;
# this is what the notebook receives.
page = r._repr_html_()
if len(sys.argv) > 2:
    with open(sys.argv[2], "w", encoding="utf-8") as f:
        f.write(page)
print(f"inline HTML: {len(page)} characters")

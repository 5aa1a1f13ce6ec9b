"""jfr_expected.py: what a recording holds, read by the JDK's own `jfr print --json` (an
independent decoder), as folded stacks per scorch profile type, so that jfr_ingest.sh can compare
them with what the server stores:

    jfr print --json --events TYPES rec.jfr | python3 jfr_expected.py OUTDIR

writes OUTDIR/TYPE.folded for cpu, alloc_in_new_tlab_objects, ..., park_duration: lines
"thread;frame;...;leaf VALUE", frames root first, named as scorch names Java frames
(package.Class.method; a hidden class keeps its suffix; "[truncated]" at the root of a
truncated stack).
"""
import json
import os
import re
import sys
from collections import defaultdict

KINDS = {
    "jdk.ExecutionSample": [("cpu", None)],
    "jdk.ObjectAllocationInNewTLAB": [("alloc_in_new_tlab_objects", None), ("alloc_in_new_tlab_bytes", "tlabSize")],
    "jdk.ObjectAllocationOutsideTLAB": [("alloc_outside_tlab_objects", None), ("alloc_outside_tlab_bytes", "allocationSize")],
    "jdk.JavaMonitorEnter": [("lock_count", None), ("lock_duration", "duration")],
    "jdk.ThreadPark": [("park_count", None), ("park_duration", "duration")],
}


def class_name(internal):
    out = []
    for i, c in enumerate(internal):
        if c in "$+":
            return "".join(out) + internal[i:]
        out.append("." if c == "/" else c)
    return "".join(out)


def duration_ns(iso):
    # "PT0.000016214S", "PT1M2.5S" ...
    m = re.fullmatch(r"PT(?:(\d+)H)?(?:(\d+)M)?(?:(\d+)(?:\.(\d+))?S)?", iso)
    h, mi, s, frac = m.groups()
    ns = ((int(h or 0) * 60 + int(mi or 0)) * 60 + int(s or 0)) * 10**9
    if frac:
        ns += int((frac + "000000000")[:9])
    return ns


def main():
    out = sys.argv[1]
    data = json.load(sys.stdin)
    folded = defaultdict(lambda: defaultdict(int))
    for ev in data["recording"]["events"]:
        kinds = KINDS.get(ev["type"])
        if not kinds:
            continue
        v = ev["values"]
        th = v.get("sampledThread") or v.get("eventThread")
        frames = []
        if th:
            name = th.get("javaName") or th.get("osName")
            if name:
                frames.append(name)
        st = v.get("stackTrace")
        if st:
            if st.get("truncated"):
                frames.append("[truncated]")
            for f in reversed(st["frames"]):
                m = f["method"]
                frames.append(class_name(m["type"]["name"]) + "." + m["name"])
        if not frames:
            frames = ["[unknown]"]
        for ptype, field in kinds:
            value = 1
            if field == "duration":
                value = duration_ns(v["duration"])
            elif field:
                value = int(v[field])
            if value > 0:
                folded[ptype][";".join(frames)] += value
    for ptype, stacks in folded.items():
        with open(os.path.join(out, ptype + ".folded"), "w") as f:
            for stack in sorted(stacks):
                f.write("%s %d\n" % (stack, stacks[stack]))


main()

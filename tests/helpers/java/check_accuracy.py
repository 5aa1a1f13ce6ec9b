# check_accuracy.py: compares a folded profile of Accuracy.java with the truth it wrote.
# Usage: check_accuracy.py PROFILE TRUTH [--tol POINTS] [--perf-map]
# PROFILE is scorch's folded output (frames "pkg.Class.method (File.java:LINE)"), or with
# --perf-map perf's stacks folded (bench/java_accuracy.sh) of a JVM run with
# -XX:+PreserveFramePointer and -XX:+DumpPerfMapAtExit (JIT frames "long Accuracy.leafWork(long)",
# interpreted ones "Interpreter": no lines, no inlined methods), checked for the shares and
# completeness only (a complete perf stack reaches start_thread with no [unknown] frame).
# Checks (exit 0 when all hold; one line of figures, then "FIGURES k=v ..." for bench/):
#   - each hot method's share of the worker threads' samples (threads recurse, inline, deflate)
#     within TOL points of the share of thread CPU time the workload measured;
#   - the hot line of each method (the statement, or its loop header just above);
#   - leafWork under 11 frames of recurse (10 levels below the first call);
#   - inlinedWork (inlined by C2) right above inlineCaller;
#   - native frames (Java_java_util_zip_Deflater_deflateBytesBytes, zlib) above the JNI frame
#     java.util.zip.Deflater.deflateBytesBytes that called them;
#   - >= 99% of the worker threads' samples reaching the thread's root (clone3) with no marker.
import re
import sys

WORKERS = ("recurse", "inline", "deflate")
FRAME = re.compile(r"^(.*) \(([^():]*)(?::(\d+))?\)$")
# Native frames carry lines too where DWARF has them ("clone3 (clone3.S:81)", scorch record
# --lines): compared by name alone.
NATIVE_SRC = re.compile(r"\.(c|h|cc|cpp|cxx|hh|hpp|hxx|inc|def|S|s)$")


def bare(frame):
    m = re.match(r"^(.*) \((.*):(\d+)\)$", frame)
    return m.group(1) if m and NATIVE_SRC.search(m.group(2)) else frame
MARKERS = ("[unwind error]", "[truncated]", "[java:", "[unknown frame")


def parse_perf_map_frame(f):
    # a perf map names compiled code "long Accuracy.leafWork(long)"
    m = re.search(r"(?:^|\s)([\w$.<>]+)\(", f)
    if m:
        return m.group(1), None
    return None, None


def main():
    args = sys.argv[1:]
    prof, truth_file = args[0], args[1]
    tol = float(args[args.index("--tol") + 1]) if "--tol" in args else 2.0
    perf = "--perf-map" in args
    truth, lines = {}, {}
    for line in open(truth_file):
        parts = line.split()
        if parts[0] == "line":
            lines[parts[1]] = int(parts[2])
        else:
            truth[parts[0]] = float(parts[1]) * 100
    total = complete = 0
    incl = {k: 0 for k in truth}
    hot_lines = {k: {} for k in truth}
    deep_ok = deep = 0
    inl_ok = inl = 0
    jni_ok = jni = 0
    for row in open(prof, errors="replace"):
        row = row.rstrip("\n")
        stack, _, count = row.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        count = int(count)
        thread = stack.split(";")[0]
        frames = [bare(f) for f in stack.split(";")[1:]]  # drop the thread name
        names = []
        for f in frames:
            if perf:
                n, _ = parse_perf_map_frame(f)
                names.append(n)
            else:
                m = FRAME.match(f)
                names.append(m.group(1) if m else None)
        hits = [k for k in truth if ("Accuracy." + k) in names]
        if thread not in WORKERS:
            continue
        total += count
        for k in hits:
            incl[k] += count
        root = frames and frames[0] in ("clone3", "clone")
        if perf:
            root = frames and frames[0] in ("clone3", "clone", "start_thread")
            broken = any(f.startswith("[unknown") for f in frames)
        else:
            broken = any(f.startswith(MARKERS) for f in frames)
        if root and not broken:
            complete += count
        if perf:
            continue
        for f in frames:
            m = FRAME.match(f)
            if m and m.group(1).startswith("Accuracy.") and m.group(3):
                k = m.group(1)[len("Accuracy."):]
                if k in hot_lines:
                    ln = int(m.group(3))
                    hot_lines[k][ln] = hot_lines[k].get(ln, 0) + count
        if "leafWork" in hits:
            deep += count
            if names.count("Accuracy.recurse") == 11:
                deep_ok += count
        if "inlinedWork" in hits:
            inl += count
            i = names.index("Accuracy.inlinedWork")
            if i > 0 and names[i - 1] == "Accuracy.inlineCaller":
                inl_ok += count
        if "Java_java_util_zip_Deflater_deflateBytesBytes" in frames:
            jni += count
            i = frames.index("Java_java_util_zip_Deflater_deflateBytesBytes")
            if i > 0 and names[i - 1] == "java.util.zip.Deflater.deflateBytesBytes":
                jni_ok += count
    if total < 200:
        print("FAIL too few samples of the worker threads: %d" % total)
        print("FIGURES samples=%d" % total)
        return 1
    ok = True
    out = []
    max_err = 0.0
    for k in truth:
        share = 100.0 * incl[k] / total
        err = abs(share - truth[k])
        max_err = max(max_err, err)
        out.append("%s %.1f%% (truth %.1f%%)" % (k, share, truth[k]))
        if err > tol:
            ok = False
            out[-1] += " WRONG"
    complete_pct = 100.0 * complete / total
    out.append("complete %.2f%%" % complete_pct)
    if complete_pct < 99.0:
        ok = False
        out[-1] += " WRONG"
    lines_ok = 0
    if not perf:
        for k, want in lines.items():
            seen = hot_lines[k]
            top = max(seen, key=seen.get) if seen else None
            # the statement, or the loop header just above it (a compiled loop's safepoint)
            if top in (want, want - 1):
                lines_ok += 1
            else:
                ok = False
                out.append("%s hot line %s, expected %d WRONG" % (k, top, want))
        deep_pct = 100.0 * deep_ok / max(deep, 1)
        inl_pct = 100.0 * inl_ok / max(inl, 1)
        jni_pct = 100.0 * jni_ok / max(jni, 1)
        native_pct = 100.0 * jni / max(incl.get("deflateWork", 0), 1)
        out.append("11-deep %.1f%%" % deep_pct)
        out.append("inlined-above-caller %.1f%%" % inl_pct)
        out.append("jni-under-native %.1f%% (native %.1f%% of deflate)" % (jni_pct, native_pct))
        if deep_pct < 95 or inl_pct < 95 or jni_pct < 95 or native_pct < 50:
            ok = False
    else:
        deep_pct = inl_pct = jni_pct = native_pct = 0.0
    out.append("samples %d" % total)
    print(("ok " if ok else "FAIL ") + "; ".join(out))
    print("FIGURES max_err=%.2f complete=%.2f lines_ok=%d/%d deep=%.1f inlined=%.1f jni=%.1f "
          "native=%.1f samples=%d %s" % (
              max_err, complete_pct, lines_ok, len(lines), deep_pct, inl_pct, jni_pct,
              native_pct, total,
              " ".join("%s=%.2f/%.2f" % (k, 100.0 * incl[k] / total, truth[k]) for k in truth)))
    return 0 if ok else 1


sys.exit(main())

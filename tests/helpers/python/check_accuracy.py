# check_accuracy.py: compares a folded profile of accuracy.py with the truth it wrote.
# Usage: check_accuracy.py PROFILE TRUTH [--austin] [--coverage]
# PROFILE is scorch's folded output, or austin's collapsed output with --austin (frames
# "func (file);L<line>", converted here). A last line "FIGURES k=v ..." is for bench/.
# Exit 0 when the profile matches (shares within TOL points, hot lines right, zlib frames above
# c_zlib, 15 levels of recursion, stacks complete to <module>; with --coverage, >= 99.5% of the
# samples taken while Python code runs carry their Python frames); prints one line of figures.
import re
import sys

TOL = 8.0  # percentage points
# A Python frame with its line (scorch record --lines): "qual (file.py:LINE)", or a pseudo file
# "<frozen ...>", "<string>". Native frames with lines ("f (file.c:LINE)") are not Python.
FRAME = re.compile(r"^(.*) \((.*\.pyw?|<[^>]*>):(\d+)\)$")


def austin_rows(path):
    """austin 1.x: "Thread X;func (file);L12;func (file);L34;... <usec>" -> folded rows."""
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        stack, _, metric = line.rpartition(" ")
        if not stack.startswith("Thread"):
            continue
        parts = stack.split(";")[1:]
        frames = []
        for i in range(0, len(parts) - 1, 2):
            m = re.match(r"^(.*) \((.*)\)$", parts[i])
            if m and parts[i + 1].startswith("L"):
                frames.append("%s (%s:%s)" % (m.group(1), m.group(2), parts[i + 1][1:]))
        yield "python;" + ";".join(frames) + " " + (metric if metric.isdigit() else "1")


def main():
    prof, truth_file = sys.argv[1], sys.argv[2]
    rows = austin_rows(prof) if "--austin" in sys.argv else open(prof)
    truth, lines = {}, {}
    for line in open(truth_file):
        parts = line.split()
        if parts[0] == "line":
            lines[parts[1]] = int(parts[2])
        else:
            truth[parts[0]] = float(parts[1]) * 100
    total = py_total = complete = eval_left = 0
    # Coverage: of the samples taken while the interpreter runs Python code (a Python frame or
    # an eval-loop frame on the stack, start-up and imports included), those that carry their
    # Python frames (some, and no eval-loop frame left without its Python frames).
    running = covered = 0
    incl = {k: 0 for k in truth}
    hot_lines = {k: {} for k in truth}
    zlib_above = zlib_samples = zlib_named = 0
    deep_ok = deep_samples = 0
    for row in rows:
        row = row.rstrip("\n")
        stack, _, count = row.rpartition(" ")
        if not stack:
            continue
        count = int(count)
        frames = stack.split(";")[1:]  # drop comm
        py = [(i, FRAME.match(f)) for i, f in enumerate(frames)]
        py = [(i, m) for i, m in py if m]
        evals = any(f.startswith("_PyEval_EvalFrameDefault") for f in frames)
        if py or evals:
            running += count
            if py and not evals:
                covered += count
        if not py:
            continue
        names = [m.group(1) for _, m in py]
        if not any(n in truth for n in names):
            continue  # interpreter start-up, imports
        total += count
        py_total += count
        if names[0] == "<module>":
            complete += count
        if any(f.startswith("_PyEval_EvalFrameDefault") for f in frames[py[0][0]:]):
            eval_left += count
        for k in truth:
            if k in names:
                incl[k] += count
        for i, m in py:
            if m.group(1) in truth:
                ln = int(m.group(3))
                hot_lines[m.group(1)][ln] = hot_lines[m.group(1)].get(ln, 0) + count
        if "c_zlib" in names:
            zlib_samples += count
            pos = [i for i, m in py if m.group(1) == "c_zlib"][-1]
            above = frames[pos + 1:]
            # native frames above the Python frame that called them (named when the
            # native symbolizer knows the dlopen'ed module, else [unknown])
            if above and not any(FRAME.match(f) for f in above):
                zlib_above += count
            if any("zlib" in f or "deflate" in f or "libz" in f for f in above):
                zlib_named += count
        if "b_work" in names:
            deep_samples += count
            if names.count("deep") == 15:
                deep_ok += count
    ok = True
    out = []
    if total < 100:
        print("FAIL too few samples with workload frames: %d" % total)
        print("FIGURES samples=%d" % total)
        return 1
    max_err = 0.0
    lines_ok = 0
    for k in truth:
        share = 100.0 * incl[k] / total
        max_err = max(max_err, abs(share - truth[k]))
        out.append("%s %.1f%% (truth %.1f%%)" % (k, share, truth[k]))
        if abs(share - truth[k]) > TOL:
            ok = False
            out[-1] += " WRONG"
    for k, want in lines.items():
        seen = hot_lines[k]
        top = max(seen, key=seen.get) if seen else None
        # the hot statement, or the loop header just above it
        if top in (want, want - 1, want - 2):
            lines_ok += 1
        else:
            ok = False
            out.append("%s hot line %s, expected %d WRONG" % (k, top, want))
    complete_pct = 100.0 * complete / py_total
    zlib_pct = 100.0 * zlib_above / max(zlib_samples, 1)
    deep_pct = 100.0 * deep_ok / max(deep_samples, 1)
    eval_pct = 100.0 * eval_left / py_total
    out.append("complete-to-<module> %.1f%%" % complete_pct)
    out.append("native-above-c_zlib %.1f%% (named zlib %.1f%%)"
               % (zlib_pct, 100.0 * zlib_named / max(zlib_samples, 1)))
    out.append("15-deep %.1f%%" % deep_pct)
    out.append("eval-frames-left %.1f%%" % eval_pct)
    coverage = 100.0 * covered / max(running, 1)
    out.append("python-coverage %.2f%% (%d of %d)" % (coverage, covered, running))
    out.append("samples %d" % total)
    if complete_pct < 90 or zlib_pct < 80 or deep_pct < 90 or eval_pct > 5:
        ok = False
    # (one sample may miss on a short run: a C-level eval call caught in its first or last
    # instructions, before its Python frame is linked or after it is gone)
    if "--coverage" in sys.argv and coverage < 99.5 and running - covered > 1:
        out.append("python-coverage below 99.5% WRONG")
        ok = False
    print(("ok " if ok else "FAIL ") + "; ".join(out))
    print("FIGURES max_err=%.1f complete=%.1f lines_ok=%d/%d native=%.1f native_named=%.1f "
          "deep=%.1f samples=%d coverage=%.2f running=%d" % (
              max_err, complete_pct, lines_ok, len(lines), zlib_pct,
              100.0 * zlib_named / max(zlib_samples, 1), deep_pct, total, coverage, running))
    return 0 if ok else 1


sys.exit(main())

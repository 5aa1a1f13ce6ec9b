# check_accuracy.py: compares a folded profile of accuracy.js with the truth it wrote.
# Usage: check_accuracy.py PROFILE TRUTH [--tolerance POINTS] [--min-samples N] [--perf]
# PROFILE is scorch's folded output (frames "name (file:line)"), or with --perf the folded
# output of `perf script | stackcollapse` over a --perf-basic-prof run (frames "JS:*name" or
# "LazyCompile:*name file:line", converted here). The last line of output is one line of
# figures ("ok ..." or "FAIL ...") for the tests and bench/node_accuracy.sh.
# Checks (scorch's profiles):
#   - each function's share of the samples of the four within TOLERANCE points of the CPU time
#     the workload measured for it (with --min-samples N and fewer samples than N, within
#     3 standard errors of the count instead when that is wider: a loaded machine);
#   - the hottest line of each function is its hot line (LINE_A, LINE_B, LINE_MIX, LINE_C);
#   - mix, which TurboFan inlines into c_work, is a frame above c_work in c_work's samples;
#   - zlib's native code is above d_zlib's frame in d_zlib's samples (>= 85%: 3-10% of them are
#     JavaScript of node's zlib module, building the stream and slicing buffers, and of cpu());
#   - b_work is under 10 frames of deep;
#   - the stacks are complete: every sample of the main thread with a JavaScript frame taken
#     after node's start-up reaches node's entry (_start) with the workload's round frame under
#     libuv (uv_run) and no error or unknown frame (>= 99%). Start-up samples (node bootstrapping
#     and loading the main module: node::LoadEnvironment, executeUserEntryPoint, ...) are
#     counted apart (startup_complete=, not checked): many of them are stack snapshots taken
#     before the unwind tables are up, whose deepest frames are read from the live process
#     when user space gets to them (docs/limits.md), which a loaded machine delays.
import math
import re
import sys

FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")
FUNCS = ("a_work", "b_work", "c_work", "d_zlib")
STARTUP = ("node::LoadEnvironment", "executeUserEntryPoint", "prepareMainThreadExecution")
ZLIB = re.compile(r"^(deflate|deflate_slow|deflate_fast|longest_match|fill_window|compress_block|"
                  r"_tr_|send_tree|build_tree|crc32|adler32|updatewindow|zmemcpy|deflate_stored|"
                  r"inflate|Builtins_Call|node::|v8::|std::)")


def perf_rows(path):
    """perf + stackcollapse with --perf-basic-prof: "JS:*name file:line" -> "name (file:line)"."""
    for line in open(path, errors="replace"):
        line = line.rstrip("\n")
        stack, _, count = line.rpartition(" ")
        out = []
        for f in stack.split(";"):
            m = re.match(r"^(?:JS:|LazyCompile:|Function:)[*~^+]?(\S*) (\S+?):(\d+)(?::\d+)?$", f)
            out.append("%s (%s:%s)" % (m.group(1) or "(anonymous)", m.group(2), m.group(3))
                       if m else f)
        yield ";".join(out) + " " + count


def is_script(path):
    """A JavaScript frame's source: a script file or one of node's own modules."""
    return path.endswith((".js", ".mjs", ".cjs")) or path.startswith("node:")


def main():
    args = sys.argv[1:]
    tol = 2.0
    min_samples = 0
    if "--tolerance" in args:
        tol = float(args[args.index("--tolerance") + 1])
    if "--min-samples" in args:
        min_samples = int(args[args.index("--min-samples") + 1])
    prof, truth_file = args[0], args[1]
    rows = perf_rows(prof) if "--perf" in args else open(prof, errors="replace")
    truth, lines = {}, {}
    for line in open(truth_file):
        parts = line.split()
        if parts[0] == "line":
            lines[parts[1]] = int(parts[2])
        else:
            truth[parts[0]] = float(parts[1]) * 100
    incl = {k: 0 for k in FUNCS}
    hot = {k: {} for k in list(FUNCS) + ["mix"]}
    js_samples = complete = 0
    startup_samples = startup_complete = 0
    mix_above = c_samples = 0
    zlib_above = d_samples = 0
    deep_ok = b_samples = 0
    total = 0
    for row in rows:
        row = row.rstrip("\n")
        stack, _, count = row.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        count = int(count)
        total += count
        frames = stack.split(";")[1:]  # drop comm
        parsed = [FRAME.match(f) for f in frames]
        # native frames may carry lines too (clone3 (clone3.S:81)): JavaScript frames are
        # those whose source is a script; bare holds every frame's name without its line
        bare = [m.group(1) if m else f for f, m in zip(frames, parsed)]
        parsed = [m if m and is_script(m.group(2)) else None for m in parsed]
        names = [m.group(1) if m else None for m in parsed]
        if any(m for m in parsed):
            startup = any(f.startswith(STARTUP) for f in frames)
            bad = any(f.startswith("[") and f not in ("[v8: Exit]", "[v8: Stub]") or
                      f.startswith("[unknown") for f in frames)
            rooted = frames and bare[0] == "_start"
            if any(n in FUNCS for n in names):
                rooted = rooted and "uv_run" in bare and "round" in names
            if startup:
                startup_samples += count
                if rooted and not bad:
                    startup_complete += count
            else:
                js_samples += count
                if rooted and not bad:
                    complete += count
        for k in FUNCS:
            if k not in names:
                continue
            incl[k] += count
            i = names.index(k)
            leafmost = max(j for j, n in enumerate(names) if n == k)
            line = int(parsed[leafmost].group(3))
            hot[k][line] = hot[k].get(line, 0) + count
            if k == "c_work":
                c_samples += count
                if leafmost + 1 < len(names) and names[leafmost + 1] == "mix":
                    mix_above += count
                    ml = int(parsed[leafmost + 1].group(3))
                    hot["mix"][ml] = hot["mix"].get(ml, 0) + count
            elif k == "d_zlib":
                d_samples += count
                if any(ZLIB.match(b) for b, m in zip(bare[leafmost + 1:], parsed[leafmost + 1:])
                       if not m):
                    zlib_above += count
            elif k == "b_work":
                b_samples += count
                if names[:i].count("deep") >= 10:
                    deep_ok += count
    fails = []
    total_incl = sum(incl.values())
    figures = ["samples=%d" % total]
    if total_incl == 0:
        print("FAIL no sample of the workload's functions (%d samples)" % total)
        return 1
    if total_incl < min_samples:
        # a quarter each: the standard error of a share estimated from n samples
        tol = max(tol, 3 * 100.0 * math.sqrt(0.25 * 0.75 / total_incl))
    figures.append("tolerance=%.1f" % tol)
    worst = 0.0
    for k in FUNCS:
        share = incl[k] * 100.0 / total_incl
        err = abs(share - truth.get(k, 0))
        worst = max(worst, err)
        figures.append("%s=%.1f/%.1f" % (k, share, truth.get(k, 0)))
        if err > tol:
            fails.append("%s share %.1f%%, measured %.1f%%" % (k, share, truth.get(k, 0)))
    figures.append("worst=%.1f" % worst)
    for k in list(FUNCS) + ["mix"]:
        if k not in lines or not hot[k]:
            if k in lines:
                fails.append("no line of %s" % k)
            continue
        best = max(hot[k].items(), key=lambda kv: kv[1])[0]
        figures.append("line_%s=%d/%d" % (k, best, lines[k]))
        if best != lines[k]:
            fails.append("hottest line of %s is %d, not %d" % (k, best, lines[k]))
    mix_pct = 100.0 * mix_above / c_samples if c_samples else 0
    zlib_pct = 100.0 * zlib_above / d_samples if d_samples else 0
    deep_pct = 100.0 * deep_ok / b_samples if b_samples else 0
    comp_pct = 100.0 * complete / js_samples if js_samples else 0
    start_pct = 100.0 * startup_complete / startup_samples if startup_samples else 0
    figures += ["inlined_mix=%.1f%%" % mix_pct, "zlib_above=%.1f%%" % zlib_pct,
                "deep10=%.1f%%" % deep_pct, "complete=%.1f%%" % comp_pct,
                "startup_complete=%.1f%%/%d" % (start_pct, startup_samples)]
    if mix_pct < 50:
        fails.append("mix above c_work in %.1f%% of c_work's samples" % mix_pct)
    if zlib_pct < 85:
        fails.append("native code above d_zlib in %.1f%% of its samples" % zlib_pct)
    if deep_pct < 90:
        fails.append("b_work under 10 deep frames in %.1f%% of its samples" % deep_pct)
    if "--perf" not in args and comp_pct < 99:
        fails.append("%.1f%% of the JavaScript samples after start-up complete" % comp_pct)
    print(("FAIL " + "; ".join(fails) + " | " if fails else "ok ") + " ".join(figures))
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())

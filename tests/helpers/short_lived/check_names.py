"""check_names.py FOLDED RUNTIME CHILD FUNCTIONS [MIN_PERCENT]: the samples of the short-lived
children (stacks with a runtime frame, "name (file)", or a marker of RUNTIME such as
"[perl: unknown sub]", and no frame of the parent's file) must carry real names: at least
MIN_PERCENT (default 98) of them have no RUNTIME marker, each of the comma-separated FUNCTIONS
is in at least 5% of them, and the file-level code of CHILD is among their frames. Prints one
line; exit status 1 when the profile falls short."""
import re
import sys


def main():
    path, runtime, child, functions = sys.argv[1:5]
    functions = functions.split(",")
    min_pct = float(sys.argv[5]) if len(sys.argv) > 5 else 98.0
    marker = "[%s: " % runtime
    frame_file = re.compile(r"\(([^()]*)\)$")
    total = bad = top_level = 0
    in_function = dict.fromkeys(functions, 0)
    for line in open(path):
        stack, _, count = line.rstrip("\n").rpartition(" ")
        frames = stack.split(";")
        files = [m.group(1) for m in (frame_file.search(f) for f in frames) if m]
        marked = any(f.startswith(marker) for f in frames)
        if not files and not marked:
            continue  # no runtime frame: native code only
        if any("parent." in f for f in files):
            continue  # the parent's own samples (it starts the children)
        n = int(count)
        total += n
        if marked:
            bad += n
        for fn in functions:
            if any(f.startswith(fn + " ") for f in frames):
                in_function[fn] += n
        if any(f.startswith(("<main> ", "<module> ")) and child in f for f in frames):
            top_level += n
    named = 100.0 * (total - bad) / total if total else 0.0
    print("%s: %d child samples, %d with a %s...] marker: %.1f%% named; %s; %d in the "
          "file-level code" % (runtime, total, bad, marker, named,
                               ", ".join("%d in %s" % (in_function[f], f) for f in functions),
                               top_level))
    if (total < 50 or named < min_pct or top_level == 0 or
            any(in_function[f] < total // 20 for f in functions)):
        sys.exit(1)


main()

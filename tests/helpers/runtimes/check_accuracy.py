# check_accuracy.py: compares a folded profile of an accuracy workload (Ruby, PHP or Perl:
# tests/helpers/{ruby,php,perl}/accuracy.*) with the truth it wrote.
# Usage: check_accuracy.py PROFILE TRUTH --root NAME --vm REGEX [options]
#   --root NAME        the outermost runtime frame of a complete stack (<main>, {main}, ...)
#   --vm REGEX         native frames of the interpreter loop that must not be left over
#   --deep NAME:N      the hot function runs under N frames of NAME
#   --native NAME:REGEX  NAME calls native code: its samples must have native frames above the
#                      deepest runtime frame, matching REGEX somewhere (the library's)
#   --tol POINTS       allowed share error (default 2)
#   --coverage PCT     of the samples with runtime frames or left-over loop frames, PCT at least
#                      must carry runtime frames and no left-over loop frame (default 99)
#   --complete PCT     stacks reaching --root, at least (default 99)
#   --no-lines         do not check hot lines (JIT code: the VM's pc is not kept up to date)
# PROFILE may come from another profiler once converted to folded lines with frames
# "name (file:line)" (bench/ does that for the runtimes' own profilers).
# Runtime frames are "name (file:line)" (interpreted; a file of C, C++, Rust or Go source marks
# a native frame with its line) or a bare name when the runtime names a
# C function (Integer#times); a function of the truth file matches a frame whose name ends with
# it after a class or package separator (Accuracy#a_work, main::a_work, a_work).
# Exit 0 when the profile matches; prints one line of figures and a "FIGURES k=v ..." line.
import argparse
import re
import sys

FRAME = re.compile(r"^(.*) \((.*):(\d+)\)$")
# Native frames carry lines too where DWARF has them ("f (file.c:LINE)", scorch record
# --lines): by their source file they are not runtime frames.
NATIVE_SRC = re.compile(r"\.(c|h|cc|cpp|cxx|hh|hpp|hxx|inc|def|S|s|rs|go|y)$")
SEP = re.compile(r"[#.:>\\]")


def bare(frame):
    """A native frame without its line ("deflate (deflate.c:12)" -> "deflate")."""
    m = FRAME.match(frame)
    return m.group(1) if m and NATIVE_SRC.search(m.group(2)) else frame


def short(name):
    parts = SEP.split(name)
    return parts[-1] if parts else name


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("profile")
    ap.add_argument("truth")
    ap.add_argument("--root", required=True)
    ap.add_argument("--vm", required=True)
    ap.add_argument("--deep", default=None)
    ap.add_argument("--native", default=None)
    ap.add_argument("--tol", type=float, default=2.0)
    ap.add_argument("--coverage", type=float, default=99.0)
    ap.add_argument("--complete", type=float, default=99.0)
    ap.add_argument("--no-lines", action="store_true")
    a = ap.parse_args()
    vm = re.compile(a.vm)
    truth, lines = {}, {}
    for line in open(a.truth):
        parts = line.split()
        if parts[0] == "line":
            lines[parts[1]] = int(parts[2])
        else:
            truth[parts[0]] = float(parts[1]) * 100
    deep_name, deep_n = (a.deep.split(":")[0], int(a.deep.split(":")[1])) if a.deep else (None, 0)
    nat_name, nat_re = (a.native.split(":", 1)[0], re.compile(a.native.split(":", 1)[1])) \
        if a.native else (None, None)
    total = complete = 0
    running = covered = 0
    incl = {k: 0 for k in truth}
    hot = {k: {} for k in truth}
    nat_samples = nat_above = nat_named = 0
    deep_samples = deep_ok = 0
    for row in open(a.profile, errors="replace"):
        row = row.rstrip("\n")
        stack, _, count = row.rpartition(" ")
        if not stack or not count.isdigit():
            continue
        count = int(count)
        frames = stack.split(";")[1:]  # drop comm
        nframes = [bare(f) for f in frames]  # native frames by name, for --vm and --native
        rt = [(i, FRAME.match(f)) for i, f in enumerate(frames)]
        rt = [(i, m) for i, m in rt if m and not NATIVE_SRC.search(m.group(2))]
        left = any(vm.search(f) for f in nframes)
        if rt or left:
            running += count
            if rt and not left:
                covered += count
        if not rt:
            continue
        names = [short(m.group(1)) for _, m in rt]
        if not any(n in truth for n in names):
            continue  # start-up, loading, the truth file
        total += count
        if rt[0][1].group(1) == a.root or rt[0][1].group(1).endswith(a.root):
            complete += count
        for k in truth:
            if k in names:
                incl[k] += count
        for i, m in rt:
            k = short(m.group(1))
            if k in truth:
                ln = int(m.group(3))
                hot[k][ln] = hot[k].get(ln, 0) + count
        if nat_name and nat_name in names:
            nat_samples += count
            # native frames above the deepest runtime frame, under the function that calls
            # the library (a library's own wrappers in the runtime's language may sit between:
            # Perl's Compress::Zlib::compress; a runtime's frame for the C function it calls,
            # without a file, may come first)
            above = nframes[rt[-1][0] + 1:]
            if above and any(not vm.search(f) for f in above):
                nat_above += count
            if any(nat_re.search(f) for f in above):
                nat_named += count
        if deep_name and any(n in truth for n in names) and deep_name in names:
            deep_samples += count
            if names.count(deep_name) == deep_n:
                deep_ok += count
    out = []
    ok = True
    if total < 100:
        print("FAIL too few samples with workload frames: %d" % total)
        print("FIGURES samples=%d" % total)
        return 1
    max_err = 0.0
    for k in truth:
        share = 100.0 * incl[k] / total
        max_err = max(max_err, abs(share - truth[k]))
        out.append("%s %.1f%% (truth %.1f%%)" % (k, share, truth[k]))
        if abs(share - truth[k]) > a.tol:
            ok = False
            out[-1] += " WRONG"
    lines_ok = 0
    for k, want in lines.items():
        seen = hot[k]
        top = max(seen, key=seen.get) if seen else None
        # the hot statement, or the loop header just above it
        if top in (want, want - 1, want - 2):
            lines_ok += 1
        elif not a.no_lines:
            ok = False
            out.append("%s hot line %s, expected %d WRONG" % (k, top, want))
    complete_pct = 100.0 * complete / total
    nat_pct = 100.0 * nat_above / max(nat_samples, 1)
    named_pct = 100.0 * nat_named / max(nat_samples, 1)
    deep_pct = 100.0 * deep_ok / max(deep_samples, 1)
    coverage = 100.0 * covered / max(running, 1)
    out.append("complete-to-%s %.1f%%" % (a.root, complete_pct))
    if complete_pct < a.complete:
        ok = False
        out[-1] += " WRONG"
    if nat_name:
        out.append("native-above-%s %.1f%% (named %.1f%%)" % (nat_name, nat_pct, named_pct))
        if nat_pct < 95 or named_pct < 80:
            ok = False
            out[-1] += " WRONG"
    if deep_name:
        out.append("%d-deep %.1f%%" % (deep_n, deep_pct))
        if deep_pct < 95:
            ok = False
            out[-1] += " WRONG"
    out.append("coverage %.2f%% (%d of %d)" % (coverage, covered, running))
    if coverage < a.coverage and running - covered > 1:
        ok = False
        out[-1] += " WRONG"
    out.append("samples %d" % total)
    print(("ok " if ok else "FAIL ") + "; ".join(out))
    print("FIGURES max_err=%.1f complete=%.1f lines_ok=%d/%d native=%.1f native_named=%.1f "
          "deep=%.1f samples=%d coverage=%.2f running=%d" % (
              max_err, complete_pct, lines_ok, len(lines), nat_pct, named_pct, deep_pct, total,
              coverage, running))
    return 0 if ok else 1


sys.exit(main())

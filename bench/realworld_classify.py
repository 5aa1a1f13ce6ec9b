#!/usr/bin/env python3
"""realworld_classify.py: figures of one profile of a real program, for bench/realworld.sh.

  realworld_classify.py scorch|perf FILE [--vm-comm REGEX --runtime NAME [--cover-comm REGEX]
                        [--cover-exclude REGEX]] [--details FILE --label LABEL]
  realworld_classify.py --self-test

FILE.folded is `scorch record` output (comm first, root first). PERF_SCRIPT.txt is
`perf script -F comm,pid,tid,ip,sym,dso` output of a `perf record -g`
profile. Prints one line of key=value figures:

  samples      all samples of the run (every process and thread it started)
  broken       samples with a marker frame: [unwind error], [unknown] (perf: a frame with
               neither symbol nor file), a truncation marker, a runtime's unknown/unreadable
               marker ([python: unknown code], [java: bad frame], [ruby: C function], ...)
  noroot       samples whose outermost user-space frame is not a process or thread entry
               (_start, clone3, start_thread, the dynamic loader's entry, Go's runtime.goexit,
               runtime.mstart, runtime.clone, runtime.rt0_go, and runtime.mcall, where Go's own
               traceback ends the system stack: the goroutine that called it is being
               descheduled); samples without user frames are not counted, nor those whose only
               user frame is [exec] (taken inside execve, after the old image was dropped and
               before the new one has code: there is no user stack)
  bad          samples that are broken or noroot (or both)
  vm_samples   samples of the interpreter's processes (comm matching --vm-comm), or of its
               threads that run the program (--cover-comm: a JVM's main thread, not its
               compiler and GC threads; --cover-exclude: a frame of a helper thread, e.g.
               Node's PlatformWorkerThread, leaves the sample out)
  vm_runtime   of those, the samples with at least one frame of --runtime
  foreign      samples with a frame of a runtime their process does not run (a runtime frame
               outside --vm-comm, or of another runtime inside it)
  unsym_rows   distinct module+0xOFFSET frames (perf: distinct unsymbolized addresses with a file)
  unsym_funcs  the functions behind them: distinct .eh_frame FDEs of their file that hold the
               offsets (an address no FDE holds, or in a file not found, counts for itself)
  functions    distinct named native functions

A frame's runtime comes from its shape in scorch's folded output (docs/formats.md, "Frame
names"): runtime frames are `name (file)`, the file telling the runtime (.py and <...>: python,
.rb and <internal:...>: ruby, .php and "Command line code": php, .pl/.pm/-e: perl, .java:
java, .js/.mjs/.cjs and node:...: v8; another file: the process's own runtime, and a foreign
frame in a process that runs none), or a runtime's marker `[java: ...]`; a name with no file
is native, except Ruby's C methods (`Kernel#require`) and Java's hidden classes
(`Foo$$Lambda$14/0x0000000800c03000.run`), and in a Perl process `Pkg::sub` (a sub without
a file, e.g. main::BEGIN)."""
import bisect, glob, os, re, subprocess, sys

RUNTIMES = ("python", "ruby", "php", "perl", "java", "v8")
MARKER = re.compile(r"^\[(python|ruby|php|perl|java|v8): (.*)\]$")
BROKEN_SPECIAL = {"[unwind error]", "[unknown]", "[truncated]", "[unknown frame]",
                  "[unknown marker]", "[unknown inlined]", "[no stack]"}
BROKEN_RUNTIME = re.compile(r"^(unknown|unreadable|truncated|bad|no thread state|C function|frame type)")
FILED = re.compile(r"^(.+) \(([^()]+)\)$")
MODOFF = re.compile(r"^(\S+)\+0x([0-9a-f]+)$")
ROOTS = {"_start", "clone3", "__clone3", "clone", "__clone", "start_thread", "thread_start",
         "runtime.clone", "runtime.clone.abi0",
         "_dl_start", "_dl_start_user", "runtime.goexit", "runtime.goexit.abi0", "runtime.mstart",
         "runtime.mstart.abi0", "runtime.rt0_go", "runtime.rt0_go.abi0", "_rt0_amd64_linux",
         "runtime.mcall", "runtime.mcall.abi0"}
NO_USER = {"[exec]"}  # a sample inside execve: the kernel's frames are the whole stack
LIB_DIRS = ["/usr/lib/x86_64-linux-gnu", "/lib/x86_64-linux-gnu", "/usr/bin", "/bin",
            "/usr/lib/git-core", "/usr/lib/go/pkg/tool/linux_amd64", "/usr/lib/go/bin",
            "/usr/lib/jvm/java-17-openjdk-amd64/lib/server", "/usr/lib/jvm/java-17-openjdk-amd64/lib",
            "/usr/lib/jvm/java-17-openjdk-amd64/bin"] + \
    sorted(glob.glob("/root/.rustup/toolchains/*/lib")) + sorted(glob.glob("/root/.rustup/toolchains/*/bin"))


def file_runtime(f):
    """The runtime a frame's file belongs to, or "?" for a file no rule knows."""
    if f.startswith("<internal:"):
        return "ruby"
    if f.startswith("<") or re.search(r"\.py[wc]?$", f):
        return "python"
    if re.search(r"\.(rb|rake|gemspec|ru)$", f) or os.path.basename(f) in ("Rakefile", "Gemfile"):
        return "ruby"
    if re.search(r"\.(php|phar|phpt|inc)$", f) or f == "Command line code":
        return "php"
    if re.search(r"\.(pl|pm|t|al|pod|ph)$", f) or f == "-e":
        return "perl"
    if re.search(r"\.(java|kt|scala|groovy)$", f):
        return "java"
    if re.search(r"\.(js|mjs|cjs|ts)$", f) or f.startswith("node:"):
        return "v8"
    return "?"


def frame_kind(fr, own=None):
    """("kernel"|"special"|"unsym"|"native"|"runtime", runtime or None). own: the runtime of
    the frame's process (None for a native process): a frame of a file no rule knows is taken
    for it, and so are Perl's subs without a file in a Perl process."""
    if fr.endswith("_[k]"):
        return "kernel", None
    m = MARKER.match(fr)
    if m:
        return "runtime", m.group(1)
    if fr.startswith("[") and fr.endswith("]"):
        return "special", None
    if MODOFF.match(fr):
        return "unsym", None
    m = FILED.match(fr)
    if m:
        rt = file_runtime(m.group(2))
        return "runtime", (own or "?") if rt == "?" else rt
    if "$$Lambda" in fr or "LambdaForm$" in fr:
        return "runtime", "java"
    if re.match(r"^[A-Z]\w*(::[A-Z]\w*)*#\S+$", fr):
        return "runtime", "ruby"
    if own == "perl" and re.match(r"^\w+(::\w+)+$", fr) and not fr.startswith(("Perl_", "S_")):
        return "runtime", "perl"
    return "native", None


def broken_frame(fr):
    if fr in BROKEN_SPECIAL:
        return True
    m = MARKER.match(fr)
    return bool(m and BROKEN_RUNTIME.match(m.group(2)))


class Fdes:
    """Function ranges of ELF files from their .eh_frame (readelf), by file offset."""

    def __init__(self):
        self.cache = {}

    def find(self, name):
        if os.path.isabs(name):
            return name if os.path.isfile(name) else None
        for d in LIB_DIRS:
            p = os.path.join(d, name)
            if os.path.isfile(p):
                return p
        return None

    def load(self, path):
        if path in self.cache:
            return self.cache[path]
        loads, starts, ends = [], [], []
        try:
            ph = subprocess.run(["readelf", "-lW", path], capture_output=True, text=True).stdout
            for line in ph.splitlines():
                w = line.split()
                if w[:1] == ["LOAD"]:
                    loads.append((int(w[1], 16), int(w[2], 16), int(w[4], 16)))
            fr = subprocess.run(["readelf", "--debug-dump=frames", path], capture_output=True,
                                text=True).stdout
            for a, b in sorted(re.findall(r" FDE cie=\w+ pc=([0-9a-f]+)\.\.([0-9a-f]+)", fr),
                               key=lambda x: int(x[0], 16)):
                starts.append(int(a, 16))
                ends.append(int(b, 16))
        except OSError:
            pass
        self.cache[path] = (loads, starts, ends)
        return self.cache[path]

    def func(self, name, off, is_vaddr=False):
        """A key for the function holding file offset off of module name, or None."""
        path = self.find(name)
        if not path:
            return None
        loads, starts, ends = self.load(path)
        va = off
        if not is_vaddr:
            va = None
            for o, v, sz in loads:
                if o <= off < o + sz:
                    va = off - o + v
            if va is None:
                return None
        i = bisect.bisect_right(starts, va) - 1
        if i >= 0 and va < ends[i]:
            return (path, starts[i])
        return None


class Figures:
    def __init__(self, vm_comm, runtime, fdes, cover_comm=None, cover_exclude=None):
        self.vm = re.compile(vm_comm) if vm_comm else None
        self.cover = re.compile(cover_comm) if cover_comm else self.vm
        self.exclude = re.compile(cover_exclude) if cover_exclude else None
        self.runtime = runtime
        self.fdes = fdes
        self.n = {k: 0 for k in ("samples", "broken", "noroot", "bad", "vm_samples", "vm_runtime",
                                 "foreign")}
        self.unsym, self.funcs, self.named = set(), set(), set()
        self.foreign_frames, self.broken_frames, self.noroot_frames = {}, {}, {}

    def add(self, comm, frames, count, unsym_key=None):
        """frames: root first, kernel frames included. unsym_key(frame) -> (row, function key)
        for unsymbolized frames (perf gives addresses, scorch file offsets)."""
        n = self.n
        n["samples"] += count
        in_vm = bool(self.vm and self.vm.search(comm))
        own = self.runtime if in_vm else None
        has_rt = foreign = broken = False
        user, seen_broken, seen_foreign = [], set(), set()
        for fr in frames:
            kind, rt = frame_kind(fr, own)
            if broken_frame(fr):
                broken = True
                seen_broken.add(fr)
            if kind != "kernel" and fr not in NO_USER:
                user.append(fr)
            if kind == "runtime":
                if in_vm and rt == self.runtime:
                    has_rt = True
                elif not (in_vm and rt == "?"):
                    foreign = True
                    seen_foreign.add(fr)
            elif kind == "unsym":
                row, fn = unsym_key(fr) if unsym_key else (fr, None)
                self.unsym.add(row)
                self.funcs.add(fn if fn else row)
            elif kind == "native":
                self.named.add(fr)
        for fr in seen_broken:
            self.broken_frames[fr] = self.broken_frames.get(fr, 0) + count
        for fr in seen_foreign:
            self.foreign_frames[fr] = self.foreign_frames.get(fr, 0) + count
        noroot = bool(user) and not self.rooted(user)
        if noroot:
            self.noroot_frames[user[0]] = self.noroot_frames.get(user[0], 0) + count
        n["broken"] += count if broken else 0
        n["noroot"] += count if noroot else 0
        n["bad"] += count if broken or noroot else 0
        n["foreign"] += count if foreign else 0
        if in_vm and self.cover.search(comm) and not (
                self.exclude and any(self.exclude.search(f) for f in frames)):
            n["vm_samples"] += count
            n["vm_runtime"] += count if has_rt else 0

    @staticmethod
    def rooted(user):
        """Outermost user frame a process or thread entry; a stripped executable shows its
        _start as exe+0xOFF followed by __libc_start_main, the loader's entry as ld-linux+0x."""
        f = user[0]
        if f in ROOTS or f.startswith(("ld-linux", "ld-2.")):
            return True
        return len(user) > 1 and user[1].startswith("__libc_start_main")

    def line(self):
        s = " ".join(f"{k}={v}" for k, v in self.n.items())
        return (f"{s} unsym_rows={len(self.unsym)} unsym_funcs={len(self.funcs)} "
                f"functions={len(self.named)}")

    def details(self, path, label):
        with open(path, "a") as out:
            for title, d in (("foreign", self.foreign_frames), ("broken", self.broken_frames),
                             ("outermost frame, no root", self.noroot_frames)):
                for fr, c in sorted(d.items(), key=lambda x: -x[1])[:15]:
                    out.write(f"{label}\t{title}\t{c}\t{fr}\n")


def scorch_file(path, fig):
    def key(fr):
        m = MODOFF.match(fr)
        return fr, fig.fdes.func(m.group(1), int(m.group(2), 16))
    for line in open(path, errors="replace"):
        body, _, cnt = line.rstrip("\n").rpartition(" ")
        if not body or not cnt.isdigit():
            continue
        fr = body.rstrip().split(";")
        fig.add(fr[0], fr[1:], int(cnt), key)


def perf_file(path, fig):
    """perf script text: samples as a header line, then one frame per line, leaf first,
    `ADDR sym (dso)`; ADDR is the address in the dso's ELF (an unsymbolized frame becomes
    `dso+0xADDR`, kept apart from scorch's file offsets by its own FDE lookup)."""
    paths = {}  # dso basename -> path
    cur, comm = None, None

    def flush():
        if cur is not None:
            fig.add(comm, list(reversed(cur)), 1, key)

    def key(fr):
        m = MODOFF.match(fr)
        path = paths.get(m.group(1))
        return fr, fig.fdes.func(path, int(m.group(2), 16), is_vaddr=True) if path else None

    for line in open(path, errors="replace"):
        if not line.strip():
            flush()
            cur = None
            continue
        if not line[0].isspace():
            flush()
            m = re.match(r"^(.*?)\s+(\d+)/(\d+)\s", line)
            cur = [] if m else None
            comm = m.group(1) if m else None
            continue
        if cur is None:
            continue
        w = line.strip().split(None, 1)
        ip = w[0]
        rest = w[1] if len(w) > 1 else "[unknown] ([unknown])"
        m = re.match(r"^(.*) \(([^()]*)\)$", rest)
        sym, dso = (m.group(1), m.group(2)) if m else (rest, "[unknown]")
        sym = re.sub(r"\+0x[0-9a-f]+$", "", sym)
        if "kernel.kallsyms" in dso or dso.startswith("[kernel"):
            cur.append(sym + "_[k]")
        elif sym == "[unknown]" and not dso.startswith("/"):
            cur.append("[unknown]")
        elif sym == "[unknown]":
            base = os.path.basename(dso)
            paths[base] = dso
            cur.append(f"{base}+0x{ip}")
        else:
            cur.append(sym)
    flush()


def self_test():
    fig = Figures(r"^python3", "python", Fdes(), cover_exclude=r"PlatformWorkerThread")
    lines = [
        ("python3;_start;main;Py_RunMain;<module> (/a/x.py);f (<string>);PyObject_Call", 5),
        ("python3;_start;main;Py_RunMain;PyEval;python3.11+0x1234", 3),
        ("python3;clone3;start_thread;[python: unknown code];g (x.py)", 2),
        ("python3;[unwind error];[unknown];memcpy", 4),
        ("python3;_start;main;Foo.bar (Foo.java)", 1),
        ("sh;_start;main;execve_[k]", 6),
        ("sh;clone3;start_thread;Kernel#require", 1),
        ("sh;exit_mmap_[k]", 2),
        ("sh;runtime.systemstack;runtime.gcDrain", 1),
        ("sh;runtime.mcall;runtime.park_m;runtime.schedule", 2),
        ("sh;[exec];do_execveat_common_[k]", 3),
        ("sh;runtime.morestack;runtime.newstack", 1),
        ("python3;clone3;start_thread;PlatformWorkerThread;compile", 3),
    ]
    for body, c in lines:
        f = body.split(";")
        fig.add(f[0], f[1:], c)
    want = {"samples": 34, "broken": 6, "noroot": 6, "bad": 8, "vm_samples": 15,
            "vm_runtime": 7, "foreign": 2}
    ok = fig.n == want and len(fig.unsym) == 1
    checks = [
        (frame_kind("Gem::ConfigFile#initialize (/usr/lib/ruby/vendor_ruby/rubygems/config_file.rb)"), ("runtime", "ruby")),
        (frame_kind("<top (required)> (/usr/lib/ruby/3.1.0/set.rb)"), ("runtime", "ruby")),
        (frame_kind("Kernel#require (<internal:/usr/lib/ruby/vendor_ruby/rubygems/core_ext/kernel_require.rb>)"), ("runtime", "ruby")),
        (frame_kind("{main} (/usr/share/php/Composer/x.php)"), ("runtime", "php")),
        (frame_kind("{eval} (Command line code)"), ("runtime", "php")),
        (frame_kind("Foo::work (p.pl)"), ("runtime", "perl")),
        (frame_kind("main::BEGIN", "perl"), ("runtime", "perl")),
        (frame_kind("main::BEGIN"), ("native", None)),
        (frame_kind("Module._load (node:internal/modules/cjs/loader)"), ("runtime", "v8")),
        (frame_kind("[v8: unreadable frame]"), ("runtime", "v8")),
        (frame_kind("main (/usr/bin/composer)", "php"), ("runtime", "php")),
        (frame_kind("main (/usr/bin/composer)"), ("runtime", "?")),
        (frame_kind("std::function<void (node::Environment*, v8::Local<v8::Value>)>::operator()(node::Environment*) const"), ("native", None)),
        (frame_kind("jni_invoke_static(JNIEnv_*, JavaValue*) [clone .constprop.1]"), ("native", None)),
        (frame_kind("net/http.(*conn).serve"), ("native", None)),
        (frame_kind("cmd/compile/internal/ssa.(*Func).Fatalf"), ("native", None)),
        (frame_kind("liblzma.so.5+0x9a3f"), ("unsym", None)),
        (frame_kind("do_syscall_64_[k]"), ("kernel", None)),
        (broken_frame("[perl: unknown sub]"), True),
        (broken_frame("[ruby: C function]"), True),
        (broken_frame("[java: stub]"), False),
        (broken_frame("[v8: Entry]"), False),
        (broken_frame("[truncated]"), True),
    ]
    for got, exp in checks:
        if got != exp:
            print(f"self-test: got {got}, want {exp}")
            ok = False
    if fig.n != want:
        print(f"self-test: figures {fig.n}, want {want}")
    print("self-test: " + ("ok" if ok else "FAILED"))
    return 0 if ok else 1


def main(argv):
    if argv[1:2] == ["--self-test"]:
        return self_test()
    if len(argv) < 3 or argv[1] not in ("scorch", "perf"):
        print(__doc__.split("\n\n")[1], file=sys.stderr)
        return 2
    opts = {"--vm-comm": None, "--runtime": None, "--cover-comm": None, "--cover-exclude": None,
            "--details": None, "--label": argv[2]}
    i = 3
    while i < len(argv):
        if argv[i] not in opts or i + 1 >= len(argv):
            print(f"realworld_classify: bad option {argv[i]!r}", file=sys.stderr)
            return 2
        opts[argv[i]] = argv[i + 1]
        i += 2
    fig = Figures(opts["--vm-comm"], opts["--runtime"], Fdes(), opts["--cover-comm"],
                  opts["--cover-exclude"])
    (scorch_file if argv[1] == "scorch" else perf_file)(argv[2], fig)
    print(fig.line())
    if opts["--details"]:
        fig.details(opts["--details"], opts["--label"])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))

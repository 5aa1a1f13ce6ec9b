# accuracy.py: a CPU workload with a known split, for the CPython profiling tests and the
# accuracy benchmark. Usage: accuracy.py CPU_SECONDS [TRUTH_FILE]
#   a_work   pure Python, 3 frames deep                        (target 30% of CPU)
#   b_work   pure Python, under 15 levels of recursion (deep) (target 30%)
#   c_zlib   time spent inside zlib.compress (native)         (target 40%)
# Each function measures its own thread CPU time; the real split is written to TRUTH_FILE as
# "name share" lines, with the line numbers of the hot loops ("line name N").
import sys
import time
import zlib

spent = {"a_work": 0.0, "b_work": 0.0, "c_zlib": 0.0}
DATA = bytes((i * 7919) % 251 for i in range(1 << 18))


def a_work(budget):
    t0 = time.thread_time()
    s = 0
    while time.thread_time() - t0 < budget:
        for i in range(2000):
            s += i * i  # LINE_A
    spent["a_work"] += time.thread_time() - t0
    return s


def b_work(budget):
    t0 = time.thread_time()
    s = 0
    while time.thread_time() - t0 < budget:
        for i in range(2000):
            s ^= i << 3  # LINE_B
    spent["b_work"] += time.thread_time() - t0
    return s


def deep(n, budget):
    if n > 1:
        return deep(n - 1, budget)
    return b_work(budget)


def c_zlib(budget):
    t0 = time.thread_time()
    while time.thread_time() - t0 < budget:
        zlib.compress(DATA, 9)  # LINE_C
    spent["c_zlib"] += time.thread_time() - t0


def phase_a():
    return a_work(0.03)


def main(seconds):
    # SECONDS of the process's own CPU time, so that a busy machine gives a profiler as much
    # to see as an idle one (with a bound on the wall-clock time, should it be starved).
    end = time.process_time() + seconds
    give_up = time.monotonic() + 120
    while time.process_time() < end and time.monotonic() < give_up:
        phase_a()
        deep(15, 0.03)
        c_zlib(0.04)


if __name__ == "__main__":
    main(float(sys.argv[1]))
    if len(sys.argv) > 2:
        total = sum(spent.values())
        src = open(__file__).read().splitlines()
        with open(sys.argv[2], "w") as f:
            for name, t in spent.items():
                f.write("%s %.4f\n" % (name, t / total))
            for n, text in enumerate(src, 1):
                for tag, name in (("LINE_A", "a_work"), ("LINE_B", "b_work"),
                                  ("LINE_C", "c_zlib")):
                    if text.endswith("# " + tag):
                        f.write("line %s %d\n" % (name, n))

# stack.py: a known Python stack for the user-space walker tests. The main thread and one
# other thread park in known functions at known lines, then print "ready" and wait.
import sys
import threading
import time

ready = threading.Event()


class Outer:
    def method(self, n):
        return recurse(n)


def recurse(n):
    if n > 0:
        return recurse(n - 1)
    return park()


def park():
    ready.set()
    time.sleep(1000)  # PARK_LINE


def worker():
    time.sleep(1000)  # WORKER_LINE


def main():
    t = threading.Thread(target=worker, daemon=True)
    t.start()
    Outer().method(5)


if __name__ == "__main__":
    threading.Thread(target=lambda: (ready.wait(), print("ready", flush=True)),
                     daemon=True).start()
    main()

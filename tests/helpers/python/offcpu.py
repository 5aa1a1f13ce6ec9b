# offcpu.py: a Python thread that waits in the three ways off-CPU profiles tell apart, for the
# off-CPU tests. Usage: offcpu.py SECONDS
#   wait_for_data  os.read() on a pipe a feeder thread writes to 5 ms later   (I/O)
#   wait_for_lock  threading.Lock.acquire() of a lock the feeder holds 5 ms   (futex)
#   take_a_nap     time.sleep(0.005)                                          (sleep)
# Each round also burns about 1 ms of CPU. Prints "waited_s=W wall_s=T" at the end.
import os
import sys
import threading
import time

r_data, w_data = os.pipe()
r_go, w_go = os.pipe()
lock = threading.Lock()
held = threading.Event()


def feeder():
    while True:
        cmd = os.read(r_go, 1)
        if not cmd or cmd == b"q":
            return
        if cmd == b"d":
            time.sleep(0.005)
            os.write(w_data, b"x")
        else:
            with lock:
                held.set()
                time.sleep(0.005)


def wait_for_data():
    os.write(w_go, b"d")
    os.read(r_data, 1)


def wait_for_lock():
    held.clear()
    os.write(w_go, b"l")
    held.wait()
    lock.acquire()
    lock.release()


def take_a_nap():
    time.sleep(0.005)


def burn():
    t = time.perf_counter()
    x = 0
    while time.perf_counter() - t < 0.001:
        x += 1


def main(seconds):
    waited = 0.0
    start = time.perf_counter()
    while time.perf_counter() - start < seconds:
        for f in (wait_for_data, wait_for_lock, take_a_nap):
            burn()
            t = time.perf_counter()
            f()
            waited += time.perf_counter() - t
    print("waited_s=%.6f wall_s=%.6f" % (waited, time.perf_counter() - start))


t = threading.Thread(target=feeder, daemon=True)
t.start()
main(float(sys.argv[1]) if len(sys.argv) > 1 else 2.0)
os.write(w_go, b"q")
t.join()

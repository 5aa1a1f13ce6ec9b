# child.py: a short-lived Python process: 15 ms of CPU in its module-level code, then 35 ms in
# a named function, then exit (parent.py starts it many times).
import time


def short_lived_work(until):
    x = 0
    while time.process_time() < until:
        x += sum(i * i for i in range(200))
    return x


start = time.process_time()
y = 0
while time.process_time() < start + 0.015:
    y += sum(range(200))
short_lived_work(start + 0.050)

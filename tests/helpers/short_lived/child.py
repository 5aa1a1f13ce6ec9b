# child.py: a short-lived Python process: 15 ms of CPU in its module-level code, 25 ms in a
# named function, 10 ms in another one that runs until the process exits (parent.py starts it
# many times). The last function is first seen in the process's last milliseconds: its name
# must be read before the process is gone.
import time


def short_lived_work(until):
    x = 0
    while time.process_time() < until:
        x += sum(i * i for i in range(200))
    return x


def wind_down(until):
    x = 0
    while time.process_time() < until:
        x += sum(i + 1 for i in range(200))
    return x


start = time.process_time()
y = 0
while time.process_time() < start + 0.015:
    y += sum(range(200))
short_lived_work(start + 0.040)
wind_down(start + 0.050)

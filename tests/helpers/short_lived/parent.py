# parent.py N: starts N short-lived Python children (child.py, about 50 ms of CPU each) one
# after the other, each a new interpreter; the profile must name their functions
# (short_lived.sh).
import os
import subprocess
import sys

n = int(sys.argv[1]) if len(sys.argv) > 1 else 40
child = os.path.join(os.path.dirname(os.path.abspath(__file__)), "child.py")
for _ in range(n):
    subprocess.run([sys.executable, child], check=True)

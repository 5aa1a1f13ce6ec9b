# top_keys.py SCORCH PID: runs `scorch top -p PID` on a pseudo-terminal 60 columns wide and
# presses keys: every line fits the width (long names are cut), 't' sorts by total, 'p' by
# process, 'q' quits with status 0, and the terminal's settings are restored afterwards.
import fcntl, os, re, select, struct, subprocess, sys, termios, time

scorch, pid = sys.argv[1], sys.argv[2]
master, slave = os.openpty()
fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack('HHHH', 30, 60, 0, 0))
before = termios.tcgetattr(slave)
env = dict(os.environ, LANG='C.UTF-8', LC_ALL='C.UTF-8')
proc = subprocess.Popen([scorch, 'top', '-F', '499', '-p', pid, '-i', '0.5'],
                        stdin=slave, stdout=slave, stderr=slave, env=env, close_fds=True)
out = b''

def read_for(secs, until=None):
    """Reads the terminal for SECS seconds, or until until() holds (then True)."""
    global out
    end = time.time() + secs
    while time.time() < end:
        if until and until():
            return True
        r, _, _ = select.select([master], [], [], 0.1)
        if r:
            try:
                out += os.read(master, 65536)
            except OSError:
                return until() if until else False
    return until() if until else False

def screens():
    """The reports drawn whole (down to the key help at the bottom)."""
    return [s for s in out.decode('utf-8', 'replace').split('\x1b[H\x1b[2J')
            if 'FUNCTION' in s and 'q quit' in s]

def rows(screen):
    lines = screen.replace('\r', '').split('\n')
    i = next(k for k, l in enumerate(lines) if 'FUNCTION' in l)
    res = []
    for l in lines[i + 1:]:
        m = re.match(r'\s*([\d.]+)%\s+([\d.]+)%\s+(\d+)\s+(.{18})  (.*)$', l)
        if not m:
            break
        res.append((float(m.group(1)), float(m.group(2)), m.group(4).strip(), m.group(5),
                    int(m.group(3))))
    return res

def fail(msg):
    proc.kill()
    print('FAIL:', msg)
    print(out.decode('utf-8', 'replace')[-3000:])
    sys.exit(1)

# (the waits are bounded by conditions, not times: on a busy machine reports come late and
# thin. The default order is checked on a report with three rows or more: sorted by self. That
# hot_function leads is checked when a report has 30 samples, where its 80% leads but for a
# chance of 2e-4; a machine too busy for that within 60 s is said so.)
def samples(sc):
    return sum(x[4] for x in rows(sc))
read_for(60, lambda: any(samples(sc) >= 30 for sc in screens()))
s = [sc for sc in screens() if len(rows(sc)) >= 3]
if not s:
    fail('no report of three rows on the terminal within 60 s')
for sc in s:
    for line in re.sub(r'\x1b\[[0-9;]*m', '', sc).replace('\r', '').split('\n'):
        if len(line) > 60:
            fail('a line is wider than the terminal (%d): %r' % (len(line), line))
if not any('__libc_start\u2026' in sc for sc in s):
    fail('__libc_start_call_main is not cut to the width')
for sc in s:
    r = rows(sc)
    if [x[0] for x in r] != sorted([x[0] for x in r], reverse=True):
        fail('default order is not by self: %r' % r[:4])
thick = [sc for sc in s if samples(sc) >= 30]
if thick:
    r = rows(thick[-1])
    if r[0][3] != 'hot_function':
        fail('the top row of a report of %d samples is not hot_function: %r' % (samples(thick[-1]), r[:3]))
else:
    print('note: no report of 30 samples within 60 s (a busy machine): hot_function not checked first here')
r = rows(s[-1])
print('ok default: by self, top row', r[0][3])
n = len(screens())
os.write(master, b't')
if not read_for(30, lambda: len(screens()) > n):
    fail('t did not redraw')
s = screens()
r = rows(s[-1])
if [x[1] for x in r] != sorted([x[1] for x in r], reverse=True) or r[0][1] < 99:
    fail('t does not sort by total: %r' % r[:4])
print('ok t: by total, top row', r[0][3], r[0][1])
n = len(screens())
os.write(master, b'r')
if not read_for(30, lambda: len(screens()) > n):
    fail('r did not redraw')
r = rows(screens()[-1])
if r[0][1] > r[-1][1]:
    fail('r does not reverse: %r' % r[:4])
print('ok r: reversed')
os.write(master, b'q')
t0 = time.time()
try:
    rc = proc.wait(timeout=30)
except subprocess.TimeoutExpired:
    fail('q did not quit')
print('ok q quits in %.2f s with status %d' % (time.time() - t0, rc))
if rc != 0:
    fail('exit status %d after q' % rc)
after = termios.tcgetattr(slave)
if after[3] != before[3]:
    fail('terminal local modes not restored: %x -> %x' % (before[3], after[3]))
print('ok terminal restored')

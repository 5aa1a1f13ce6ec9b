# deep_profile.py OUT [STACKS]: a folded profile with STACKS (default 50000) distinct stacks
# that no flame graph of a few thousand nodes holds whole: a wide, light part (random paths
# with a high fan-out near the root) and a heavy trunk 200 frames deep from which light tails
# branch off at every depth. Deterministic (fixed seed).
import random
import sys

random.seed(7)
out = open(sys.argv[1], 'w')
want = int(sys.argv[2]) if len(sys.argv) > 2 else 50000
deep = want // 10
seen = set()
while len(seen) < want - deep:
    depth = random.randint(5, 40)
    frames = ['deep_main']
    for d in range(depth):
        fan = 3 if d < 4 else 2
        frames.append('f%d_%d' % (random.randrange(fan), d))
    frames.append('leaf%d' % random.randrange(400))
    s = ';'.join(frames)
    if s not in seen:
        seen.add(s)
        out.write('%s %d\n' % (s, random.randint(1, 9)))
n = 0
while n < deep:
    b = random.randint(30, 200)
    frames = ['deep_main', 'trunk'] + ['t%d' % d for d in range(b)]
    frames += ['tail%d_%d' % (b, random.randrange(50)) for _ in range(random.randint(1, 20))]
    s = ';'.join(frames)
    if s not in seen:
        seen.add(s)
        n += 1
        out.write('%s %d\n' % (s, random.randint(1, 9)))

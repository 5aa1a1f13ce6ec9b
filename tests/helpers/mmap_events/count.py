#!/usr/bin/env python3
"""count.py FOLDED COMM: the samples of processes named COMM (the first frame of each folded
line) in a folded profile, as one line of counts: total, named (a user stack with
mmap_spin_work under _start or __libc_start_main, no marker), exited (the user stack is the
one word [exited]). The stacks that are neither are printed to stderr, most frequent first."""
import collections
import sys


def main():
    path, comm = sys.argv[1], sys.argv[2]
    total = named = exited = 0
    other = collections.Counter()
    with open(path) as f:
        for line in f:
            line = line.rstrip('\n')
            if ' ' not in line:
                continue
            stack, n = line.rsplit(' ', 1)
            frames = stack.split(';')
            if frames[0] != comm or not n.isdigit():
                continue
            n = int(n)
            total += n
            user = [x for x in frames[1:] if not x.endswith('_[k]')]
            if user == ['[exited]']:
                exited += n
            elif ('mmap_spin_work' in user and not any(x.startswith('[') for x in user)
                  and ('_start' in user or '__libc_start_main' in user)):
                named += n
            else:
                other[stack] += n
    print('total=%d named=%d exited=%d' % (total, named, exited))
    for stack, n in other.most_common(8):
        print('  %d %s' % (n, stack[:300]), file=sys.stderr)


if __name__ == '__main__':
    main()

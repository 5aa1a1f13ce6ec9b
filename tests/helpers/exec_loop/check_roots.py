#!/usr/bin/env python3
"""check_roots.py FOLDED COMM...: how the samples of processes named COMM end.

Prints one line of counts: kernel-only samples, [exec] (in execve(), the old image gone),
[exited] (the process exited before its maps were read), samples whose user stack is only
[unwind error];[unknown], samples with user frames that reach a root and those that do not,
and root_share, the percentage of samples with user frames that reach one. A stack reaches a
root when no marker ([unwind error], [truncated], ...) is among its user frames and it starts
at a process's or a thread's first frame: _start (or a stripped binary's entry, FILE+0x...),
the loader's entry, __libc_start_main, clone or start_thread. The stacks that do not are
printed to stderr, most frequent first."""
import collections
import sys

ROOTS = ('_start', '_dl_start_user', '__libc_start_main', '__libc_start_call_main',
         'clone', 'clone3', '__clone', '__clone3', 'start_thread')


def main():
    path, comms = sys.argv[1], set(sys.argv[2:])
    counts = collections.Counter()
    bad = collections.Counter()
    with open(path) as f:
        for line in f:
            stack, n = line.rstrip('\n').rsplit(' ', 1)
            frames = stack.split(';')
            if frames[0] not in comms:
                continue
            n = int(n)
            user = [x for x in frames[1:] if not x.endswith('_[k]')]
            if not user:
                counts['kernel_only'] += n
            elif user == ['[unwind error]', '[unknown]']:
                counts['bare_unwind_error'] += n
                bad[stack] += n
            elif user in (['[exec]'], ['[exited]']):
                counts[user[0].strip('[]')] += n
            elif not any(x.startswith('[') for x in user) and (
                    user[0] in ROOTS or '+0x' in user[0] or any(x in ROOTS for x in user)):
                counts['root'] += n
            else:
                counts['no_root'] += n
                bad[stack] += n
    with_user = counts['root'] + counts['no_root'] + counts['bare_unwind_error']
    share = 100.0 * counts['root'] / with_user if with_user else 0.0
    keys = ('kernel_only', 'exec', 'exited', 'bare_unwind_error', 'root', 'no_root')
    print(' '.join('%s=%d' % (k, counts[k]) for k in keys), 'root_share=%.2f' % share)
    for stack, n in bad.most_common(10):
        print('  %d %s' % (n, stack[:400]), file=sys.stderr)


if __name__ == '__main__':
    main()

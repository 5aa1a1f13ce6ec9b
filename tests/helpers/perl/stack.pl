# stack.pl: a Perl program with a known stack for the unit tests (tests/unit/test_perl.c):
#   <main> -> Worker::outer -> Worker::inner (spins)
# Prints "ready" from the spinning line itself, so that every statement running after it is
# on line 10.
package Worker;

sub inner {
    $| = 1;
    my ($s, $said) = (0, 0);
    while (1) { print "ready\n" if !$said++; $s++; $s %= 1000 } # SPIN
}

sub outer {
    inner(); # CALL_INNER
}

package main;

Worker::outer(); # CALL_OUTER

# threads.pl: Perl threads and the regex engine, for tests/integration/perl_stacks.sh.
#   two threads: main::worker -> Threaded::spin (pure Perl)
#   the main thread: <main> -> Threaded::match -> the regex engine (Perl_regexec_flags)
# Each part runs for SECONDS of its own thread's CPU time. Usage: perl threads.pl SECONDS
use strict;
use warnings;
use threads;
use Time::HiRes qw(clock_gettime CLOCK_THREAD_CPUTIME_ID);

package Threaded;

sub now { Time::HiRes::clock_gettime(Time::HiRes::CLOCK_THREAD_CPUTIME_ID()) }

sub spin {
    my ($budget) = @_;
    my ($t0, $x) = (now(), 0);
    while (now() - $t0 < $budget) {
        $x++ for 1 .. 1000;
    }
    return $x;
}

sub match {
    my ($budget) = @_;
    my ($t0, $n) = (now(), 0);
    my $s = ("ab" x 2000) . "c";
    while (now() - $t0 < $budget) {
        $n++ if $s =~ /^(?:a|b)*c$/;
    }
    return $n;
}

package main;

sub worker { return Threaded::spin($_[0]) }

my $seconds = $ARGV[0] // 1;
my @t = map { threads->create(\&worker, $seconds) } 1 .. 2;
Threaded::match($seconds);
$_->join for @t;

# deep.pl: 50 Perl frames (<main>, 48 levels of deep, spin) for the walker's cost per sample.
use strict;
use warnings;
use Time::HiRes qw(clock_gettime CLOCK_MONOTONIC);

sub spin {
    my ($n) = @_;
    my $s = 0;
    for my $i (0 .. $n - 1) {
        $s += $i;
    }
    return $s;
}

sub deep {
    my ($n, $end) = @_;
    return deep($n - 1, $end) if $n > 1;
    spin(1000) while clock_gettime(CLOCK_MONOTONIC) < $end;
}

deep(48, clock_gettime(CLOCK_MONOTONIC) + $ARGV[0]);

# accuracy.pl: a CPU workload with a known split, for the Perl profiling tests and the accuracy
# benchmark. Usage: perl accuracy.pl SECONDS [TRUTH_FILE]
#   a_work   pure Perl, 3 frames deep                               (target 30% of CPU)
#   b_work   pure Perl, under 10 levels of recursion (deep)         (target 30%)
#   c_zlib   time spent inside Compress::Zlib::compress (native)    (target 40%)
# Each sub measures its own thread CPU time; the real split is written to TRUTH_FILE as
# "name share" lines, with the line numbers of the hot loops ("line name N").
use strict;
use warnings;
use Compress::Zlib;
use Time::HiRes qw(clock_gettime CLOCK_THREAD_CPUTIME_ID CLOCK_MONOTONIC);

my %spent = (a_work => 0, b_work => 0, c_zlib => 0);
my $data = join '', map { chr(($_ * 7919) % 251) } 0 .. (1 << 18) - 1;

sub now { clock_gettime(CLOCK_THREAD_CPUTIME_ID) }

sub a_work {
    my ($budget) = @_;
    my $t0 = now();
    my $s = 0;
    while (now() - $t0 < $budget) {
        for my $i (0 .. 1999) {
            $s += $i * $i; # LINE_A
        }
    }
    $spent{a_work} += now() - $t0;
    return $s;
}

sub b_work {
    my ($budget) = @_;
    my $t0 = now();
    my $s = 0;
    while (now() - $t0 < $budget) {
        for my $i (0 .. 1999) {
            $s ^= $i << 3; # LINE_B
        }
    }
    $spent{b_work} += now() - $t0;
    return $s;
}

sub deep {
    my ($n, $budget) = @_;
    return deep($n - 1, $budget) if $n > 1;
    return b_work($budget);
}

sub c_zlib {
    my ($budget) = @_;
    my $t0 = now();
    while (now() - $t0 < $budget) {
        my $z = compress($data, 9); # LINE_C
    }
    $spent{c_zlib} += now() - $t0;
}

sub phase_a { return a_work(0.03) }

my $seconds = $ARGV[0] // 3;
my $end = clock_gettime(CLOCK_MONOTONIC) + $seconds;
while (clock_gettime(CLOCK_MONOTONIC) < $end) {
    phase_a();
    deep(10, 0.03);
    c_zlib(0.04);
}

if (defined $ARGV[1]) {
    my $total = $spent{a_work} + $spent{b_work} + $spent{c_zlib};
    open my $out, '>', $ARGV[1] or die "$ARGV[1]: $!";
    printf $out "%s %.4f\n", $_, $spent{$_} / $total for qw(a_work b_work c_zlib);
    open my $self, '<', __FILE__ or die;
    my $n = 0;
    while (my $text = <$self>) {
        $n++;
        $text =~ s/\s+$//;
        my %tags = (LINE_A => 'a_work', LINE_B => 'b_work', LINE_C => 'c_zlib');
        for my $tag (keys %tags) {
            printf $out "line %s %d\n", $tags{$tag}, $n if $text =~ /# \Q$tag\E$/;
        }
    }
    close $out;
}

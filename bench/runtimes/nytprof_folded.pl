# nytprof_folded.pl: Devel::NYTProf's call stacks as folded lines for
# tests/helpers/runtimes/check_accuracy.py. Reads the output of `nytprofcalls nytprof.out`
# ("sub;sub;... exclusive-ticks" lines) on stdin and writes
# "perl;<main> (SCRIPT:0);sub (SCRIPT:0);... ticks" lines: every stack NYTProf records is one of
# the program's, under its file-level code.
# NYTProf keeps neither the line a call was made on nor native frames, so every frame carries
# line 0 and an XS sub is a stack's leaf.
# Usage: nytprofcalls nytprof.out | perl nytprof_folded.pl SCRIPT > out.folded
use strict;
use warnings;

my $script = shift @ARGV // die "usage: nytprofcalls nytprof.out | perl $0 SCRIPT\n";
while (my $line = <STDIN>) {
    chomp $line;
    my ($stack, $ticks) = $line =~ /^(.*) (\d+)$/ or next;
    next if $ticks == 0;
    my @frames = map { "$_ ($script:0)" } split /;/, $stack;
    print join(';', 'perl', "<main> ($script:0)", @frames), " $ticks\n";
}

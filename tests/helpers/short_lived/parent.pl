# parent.pl N: starts N short-lived Perl children (child.pl, about 50 ms of CPU each) one after
# the other, each a new interpreter; the profile must name their subs (short_lived.sh).
use strict;
use warnings;
use File::Basename qw(dirname);

my $n = $ARGV[0] || 40;
my $child = dirname(__FILE__) . "/child.pl";
for (1 .. $n) {
	system($^X, $child) == 0 or die "child.pl failed\n";
}

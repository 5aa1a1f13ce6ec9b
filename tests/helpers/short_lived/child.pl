# child.pl: a short-lived Perl process: 15 ms of CPU in its file-level code, then 35 ms in a
# named sub, then exit (parent.pl starts it many times).
use strict;
use warnings;

sub cpu_ms { my @t = times; return 1000 * ($t[0] + $t[1]); }

sub short_lived_work {
	my ($until) = @_;
	my $x = 0;
	while (cpu_ms() < $until) {
		$x += $_ * $_ for 1 .. 200;
	}
	return $x;
}

my $start = cpu_ms();
my $y = 0;
while (cpu_ms() < $start + 15) {
	$y += $_ for 1 .. 200;
}
short_lived_work($start + 50);

# child.pl: a short-lived Perl process: 15 ms of CPU in its file-level code, 25 ms in a named
# sub, 10 ms in another one that runs until the process exits (parent.pl starts it many times).
# The last sub is first seen in the process's last milliseconds: its name must be read before
# the process is gone.
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

sub wind_down {
	my ($until) = @_;
	my $x = 0;
	while (cpu_ms() < $until) {
		$x += $_ + 1 for 1 .. 200;
	}
	return $x;
}

my $start = cpu_ms();
my $y = 0;
while (cpu_ms() < $start + 15) {
	$y += $_ for 1 .. 200;
}
short_lived_work($start + 40);
wind_down($start + 50);

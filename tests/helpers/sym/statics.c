/* statics.c: hot static functions for tests/integration/native_symbols.sh, built stripped and
 * -rdynamic: the exported work() is named from .dynsym, the static functions only by where
 * their FDEs start. Usage: statics ROUNDS */
#include <stdio.h>
#include <stdlib.h>

static volatile unsigned long sink;

__attribute__((noinline)) static unsigned long mul_loop(unsigned long n, unsigned long s)
{
	unsigned long x = s;

	for (unsigned long i = 0; i < n; i++) {
		x = x * 2862933555777941757ul + i;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) static unsigned long xorshift_loop(unsigned long n, unsigned long s)
{
	unsigned long x = s | 1;

	for (unsigned long i = 0; i < n; i++) {
		x ^= x << 13;
		x ^= x >> 7;
		x ^= x << 17;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

__attribute__((noinline)) static unsigned long float_loop(unsigned long n, unsigned long s)
{
	double d = (double)(s & 0xffff);

	for (unsigned long i = 0; i < n; i++) {
		d = d * 1.0000001 + 0.5 / (double)(i + 1);
		__asm__ volatile("" : "+x"(d));
	}
	return (unsigned long)d;
}

/* exported: in .dynsym, so named even when stripped */
__attribute__((noinline)) unsigned long work(unsigned long n, unsigned long s);
unsigned long work(unsigned long n, unsigned long s)
{
	unsigned long x = s;

	for (unsigned long i = 0; i < n; i++) {
		x = (x >> 3) + i * 7;
		__asm__ volatile("" : "+r"(x));
	}
	return x;
}

int main(int argc, char **argv)
{
	long rounds = argc > 1 ? atol(argv[1]) : 100;

	for (long r = 0; r < rounds; r++) {
		sink += mul_loop(1000000, sink + (unsigned long)r);
		sink += xorshift_loop(1000000, sink + (unsigned long)r);
		sink += float_loop(1000000, sink + (unsigned long)r);
		sink += work(1000000, sink + (unsigned long)r);
	}
	printf("%lu\n", sink);
	return 0;
}

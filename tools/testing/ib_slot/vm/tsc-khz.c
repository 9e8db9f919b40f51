// SPDX-License-Identifier: GPL-2.0
/*
 * Print the host's TSC rate in kHz, measured against CLOCK_MONOTONIC_RAW
 * over 200 ms.  Under TCG the guest's TSC is the host's, but a guest that
 * calibrates it against the emulated PIT while the host is loaded can
 * fail, mark the TSC unstable and keep time with jiffies, which lose
 * ticks: its timeouts then stretch.  run.sh hands the rate to the guest
 * (tsc_early_khz=) instead, and has it trust the TSC (tsc=reliable).
 */
#include <stdio.h>
#include <time.h>
#include <x86intrin.h>

static long long ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC_RAW, &ts);
	return ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

int main(void)
{
	unsigned long long c0, c1;
	long long t0, t1;

	t0 = ns();
	c0 = __rdtsc();
	do
		t1 = ns();
	while (t1 - t0 < 200000000LL);
	c1 = __rdtsc();
	printf("%llu\n", (c1 - c0) * 1000000ULL / (unsigned long long)(t1 - t0));
	return 0;
}

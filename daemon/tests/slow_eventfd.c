// SPDX-License-Identifier: GPL-2.0
/*
 * A fault for nxqd_test_eventfd_block (attack_test.c), preloaded into the
 * daemon: a tenant that wins the race against the daemon's checks.  When
 * the daemon writes the eventfd whose fdinfo eventfd-id is
 * $NXQD_TEST_EFD_ID, its counter is first filled and O_NONBLOCK cleared
 * -- what the tenant, who shares the file, can do between the daemon's
 * checks and its write -- so that the write waits until someone reads
 * the counter.  With $NXQD_TEST_EFD_STALL_US, the thread then spins that
 * long before it writes, as a thread preempted between arming its timer
 * and writing would be (the timer fires before the write begins).  Every
 * other write is left alone.
 *
 * With $NXQD_TEST_EFD_DELAY_MS set instead (nxqd_test_ticket_before_ack),
 * every eventfd write of the daemon first sleeps that long (through the
 * signal that cuts a write short): a signal thread that lags behind.
 *
 * With $NXQD_TEST_EFD_AFTER_MS (nxqd_test_ticket_during_write), every
 * eventfd write of the daemon is done at once and the thread then sleeps
 * that long before it returns: the tenant has been woken, and the next
 * ticket comes while the daemon is still "writing".
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static ssize_t (*real_write)(int fd, const void *buf, size_t n);

/* The eventfd-id and count of @fd from its fdinfo; 0 if not an eventfd. */
static int efd_info(int fd, long *id, unsigned long long *count)
{
	char p[64], line[128];
	int found = 0;
	FILE *f;

	snprintf(p, sizeof(p), "/proc/self/fdinfo/%d", fd);
	f = fopen(p, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "eventfd-id: %ld", id) == 1)
			found |= 1;
		if (sscanf(line, "eventfd-count: %llx", count) == 1)
			found |= 2;
	}
	fclose(f);
	return found == 3;
}

/* Sleep @ms through the signals that cut a write short. */
static void sleep_ms(long ms)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	t.tv_sec += ms / 1000;
	t.tv_nsec += (ms % 1000) * 1000000L;
	if (t.tv_nsec >= 1000000000L) {
		t.tv_sec++;
		t.tv_nsec -= 1000000000L;
	}
	while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &t, NULL))
		;
}

ssize_t write(int fd, const void *buf, size_t n)
{
	const char *want = getenv("NXQD_TEST_EFD_ID");
	unsigned long long count = 0;
	long id = -1;

	const char *delay = getenv("NXQD_TEST_EFD_DELAY_MS");

	if (!real_write)
		real_write = (ssize_t (*)(int, const void *, size_t))
			     dlsym(RTLD_NEXT, "write");
	if (n == 8 && delay && efd_info(fd, &id, &count))
		sleep_ms(atol(delay));
	if (n == 8 && want && efd_info(fd, &id, &count) && id == atol(want)) {
		uint64_t fill = 0xfffffffffffffffeULL - count;
		int fl = fcntl(fd, F_GETFL);

		/* full, then blocking: the write below waits */
		if (fl >= 0) {
			fcntl(fd, F_SETFL, fl | O_NONBLOCK);
			if (fill)
				real_write(fd, &fill, sizeof(fill));
			fcntl(fd, F_SETFL, fl & ~O_NONBLOCK);
		}
		if (getenv("NXQD_TEST_EFD_STALL_US")) {
			long us = atol(getenv("NXQD_TEST_EFD_STALL_US"));
			struct timespec t0, t;

			clock_gettime(CLOCK_MONOTONIC, &t0);
			do	/* not a sleep: a signal would end it */
				clock_gettime(CLOCK_MONOTONIC, &t);
			while ((t.tv_sec - t0.tv_sec) * 1000000L +
			       (t.tv_nsec - t0.tv_nsec) / 1000 < us);
		}
	}
	if (n == 8 && getenv("NXQD_TEST_EFD_AFTER_MS") && efd_info(fd, &id, &count)) {
		ssize_t r = real_write(fd, buf, n);

		sleep_ms(atol(getenv("NXQD_TEST_EFD_AFTER_MS")));
		return r;
	}
	return real_write(fd, buf, n);
}

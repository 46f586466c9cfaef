// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-sample - sample sysfs numbers over time, for tests/vm/demo.sh's
 * chart of each group's charge.
 *
 *   nxq-sample OUT HEARTBEAT_MS GROUP=FILE...
 *   nxq-sample now
 *
 * The first form polls every FILE (e.g. a node's current) about every
 * millisecond until SIGTERM or SIGINT and appends to OUT one line per
 * group, "USEC,sample,GROUP,VALUE", each time any value changed and at
 * least every HEARTBEAT_MS; a final set of lines when it stops.  USEC is
 * CLOCK_MONOTONIC in microseconds, the clock of nxq-hold's "@USEC" lines.
 * A file that cannot be read (a node not there yet) is left out of that
 * set.  The second form prints the clock now, in microseconds, so a shell
 * script can time its own events on the same clock.
 */
#include "scen.h"

#define MAXG 8

static volatile sig_atomic_t stop;

static void on_signal(int sig)
{
	(void)sig;
	stop = 1;
}

static int read_num(const char *path, unsigned long long *v)
{
	char buf[64];
	ssize_t n;
	int f = open(path, O_RDONLY | O_CLOEXEC);

	if (f < 0)
		return -1;
	n = read(f, buf, sizeof(buf) - 1);
	close(f);
	if (n <= 0)
		return -1;
	buf[n] = 0;
	*v = strtoull(buf, NULL, 10);
	return 0;
}

int main(int argc, char **argv)
{
	const char *group[MAXG], *file[MAXG];
	unsigned long long val[MAXG], v;
	int ok[MAXG], ng = 0, i, changed;
	uint64_t now, last = 0, beat_us;
	struct timespec ms1 = { 0, 1000000 };
	FILE *out;

	if (argc == 2 && !strcmp(argv[1], "now")) {
		printf("%" PRIu64 "\n", sc_now_ns() / 1000);
		return 0;
	}
	if (argc < 4 || argc - 3 > MAXG) {
		fprintf(stderr, "usage: nxq-sample OUT HEARTBEAT_MS GROUP=FILE... "
			"| nxq-sample now\n");
		return 2;
	}
	out = fopen(argv[1], "a");
	if (!out) {
		perror(argv[1]);
		return 1;
	}
	beat_us = strtoull(argv[2], NULL, 10) * 1000;
	for (i = 3; i < argc; i++) {
		char *eq = strchr(argv[i], '=');

		if (!eq) {
			fprintf(stderr, "nxq-sample: %s: not GROUP=FILE\n", argv[i]);
			return 2;
		}
		*eq = 0;
		group[ng] = argv[i];
		file[ng] = eq + 1;
		ok[ng] = 0;
		val[ng++] = 0;
	}
	signal(SIGTERM, on_signal);
	signal(SIGINT, on_signal);

	for (;;) {
		int done = stop;

		changed = 0;
		now = sc_now_ns() / 1000;
		for (i = 0; i < ng; i++) {
			int r = read_num(file[i], &v) == 0;

			if (r != ok[i] || (r && v != val[i]))
				changed = 1;
			ok[i] = r;
			if (r)
				val[i] = v;
		}
		if (changed || done || now - last >= beat_us) {
			for (i = 0; i < ng; i++)
				if (ok[i])
					fprintf(out, "%" PRIu64 ",sample,%s,%llu\n",
						now, group[i], val[i]);
			fflush(out);
			last = now;
		}
		if (done)
			break;
		nanosleep(&ms1, NULL);
	}
	fclose(out);
	return 0;
}

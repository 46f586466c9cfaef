// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-hold - a holder driven line by line, for tests/vm/demo.sh.
 *
 *   nxq-hold NAME DEVICE [CGROUP] [--eventfd]
 *
 * Moves itself into CGROUP (a path under /sys/fs/cgroup, e.g. /inference)
 * if given, opens /dev/nxquota and registers one holder on DEVICE (with an
 * eventfd for pressure tickets if --eventfd is given).  Then it reads
 * commands from stdin and answers each with one line on stdout:
 *
 *   charge SIZE      ->  "[NAME] charge 300 MiB: granted, holds 700 MiB"
 *                        "[NAME] charge 300 MiB: refused, EDQUOT (...)"
 *   uncharge SIZE    ->  "[NAME] uncharge ...: done, holds ..."
 *   status           ->  "[NAME] status: holds ...; its cgroup: ... of
 *                         max ...; device: ... used of ..."
 *   quit             ->  exits (closing the file uncharges everything)
 *
 * Pressure (lines starting with "@USEC " carry the CLOCK_MONOTONIC time in
 * microseconds, for a timeline):
 *   wait SIZE MS     ->  "@T [NAME] charge 400 MiB: waiting up to 5000 ms"
 *                        at once, then when the charge returns:
 *                        "@T [NAME] charge 400 MiB: granted after 1.2 ms,
 *                         holds 400 MiB" (or "refused after ..., ERRNO")
 *   serve            ->  "[NAME] serving tickets: releasing what is asked";
 *                        from then on, for each ticket (needs --eventfd):
 *                        "@T [NAME] ticket 3: asked 300 MiB (reason DEVICE,
 *                         level RECALL), deadline in 4999 ms"
 *                        "@T [NAME] releasing 300 MiB: answers ticket 3"
 *                        "@T [NAME] answered ticket 3: released 300 MiB,
 *                         holds 600 MiB"
 *   stop             ->  "[NAME] stopped serving after N ticket(s)": the
 *                        holder no longer reads its tickets (it ignores
 *                        them)
 *
 * SIZE is bytes with an optional K, M or G suffix.  Exit status: 0 after
 * quit or end of input, 1 if it could not register.
 */
#include "scen.h"

static const char *name;

/* stdin, read with read(2) so that it can be polled with the eventfd. */
static char ibuf[4096];
static size_t ilen;

/* Move one complete line from the buffer into line: 1, or 0 if none. */
static int take_line(char *line, size_t size)
{
	char *nl = memchr(ibuf, '\n', ilen);
	size_t n;

	if (!nl)
		return 0;
	n = nl - ibuf + 1;
	snprintf(line, size, "%.*s", (int)n, ibuf);
	memmove(ibuf, ibuf + n, ilen - n);
	ilen -= n;
	return 1;
}

/* Read more of stdin: > 0, or 0 at end of input (a partial line ends). */
static int fill(void)
{
	ssize_t n;

	if (ilen == sizeof(ibuf))
		ilen = 0;	/* an overlong line: drop it */
	do
		n = read(0, ibuf + ilen, sizeof(ibuf) - ilen);
	while (n < 0 && errno == EINTR);
	if (n <= 0) {
		if (ilen && ilen < sizeof(ibuf))
			ibuf[ilen++] = '\n';
		return ilen ? 1 : 0;
	}
	ilen += n;
	return 1;
}

static uint64_t now_us(void)
{
	return sc_now_ns() / 1000;
}

static const char *reason_name(uint32_t r)
{
	switch (r) {
	case NXQ_TICKET_REASON_MAX: return "MAX";
	case NXQ_TICKET_REASON_DEVICE: return "DEVICE";
	case NXQ_TICKET_REASON_BUDGET: return "BUDGET";
	default: return "?";
	}
}

static uint64_t parse_size(const char *s, int *ok)
{
	char *end;
	unsigned long long v;

	errno = 0;
	v = strtoull(s, &end, 10);
	*ok = !errno && end != s;
	switch (*end) {
	case 'K': v <<= 10; end++; break;
	case 'M': v <<= 20; end++; break;
	case 'G': v <<= 30; end++; break;
	}
	if (*end && *end != '\n')
		*ok = 0;
	return v;
}

/* "700 MiB", "1 GiB", "4096 bytes" */
static const char *human(uint64_t v)
{
	static char buf[8][32];
	static int i;
	char *p = buf[i++ & 7];

	if (v == NXQ_UNLIMITED)
		snprintf(p, 32, "unlimited");
	else if (v && !(v % SC_GIB))
		snprintf(p, 32, "%" PRIu64 " GiB", (uint64_t)(v / SC_GIB));
	else if (v && !(v % SC_MIB))
		snprintf(p, 32, "%" PRIu64 " MiB", (uint64_t)(v / SC_MIB));
	else
		snprintf(p, 32, "%" PRIu64 " bytes", v);
	return p;
}

static const char *why(long rc)
{
	switch (-rc) {
	case EDQUOT:
		return "a cgroup's max would be exceeded";
	case ENOSPC:
		return "the device's capacity would be exceeded";
	default:
		return strerror((int)-rc);
	}
}

static int fd, efd = -1;
static uint64_t h, served;

/* Serve mode: answer the open ticket, releasing what it asks. */
static void serve_one(void)
{
	struct nxq_ticket t;
	uint64_t v, c = 0;
	long rc;

	if (read(efd, &v, sizeof(v)) != sizeof(v))
		return;
	for (;;) {
		rc = sc_ticket_read(fd, h, &t);
		if (rc < 0)
			return;		/* EAGAIN: no ticket open any more */
		printf("@%" PRIu64 " [%s] ticket %" PRIu64 ": asked %s (reason "
		       "%s, level %s), deadline in %" PRId64 " ms\n", now_us(),
		       name, (uint64_t)t.generation, human(t.bytes),
		       reason_name(t.reason),
		       t.level == NXQ_TICKET_LEVEL_RECALL ? "RECALL" : "ASK",
		       ((int64_t)t.deadline_ns - (int64_t)sc_now_ns()) /
		       1000000);
		printf("@%" PRIu64 " [%s] releasing %s: answers ticket %"
		       PRIu64 "\n", now_us(), name, human(t.bytes),
		       (uint64_t)t.generation);
		rc = sc_ticket_answer(fd, h, t.generation, t.bytes, &c);
		if (rc == -ESTALE)
			continue;	/* raised meanwhile: read it again */
		if (rc < 0) {
			printf("@%" PRIu64 " [%s] answer to ticket %" PRIu64
			       ": %s\n", now_us(), name, (uint64_t)t.generation,
			       sc_errname((int)-rc));
			return;
		}
		served++;
		printf("@%" PRIu64 " [%s] answered ticket %" PRIu64 ": released "
		       "%s, holds %s\n", now_us(), name, (uint64_t)t.generation,
		       human(t.bytes), human(c));
		return;
	}
}

/* The next command line; serving tickets meanwhile.  0 at end of input. */
static int next_line(char *line, size_t size, int serving)
{
	struct pollfd p[2] = {
		{ .fd = 0, .events = POLLIN },
		{ .fd = efd, .events = POLLIN },
	};

	while (!take_line(line, size)) {
		if (serving && efd >= 0) {
			if (poll(p, 2, -1) < 0 && errno != EINTR)
				return 0;
			if (p[1].revents & POLLIN)
				serve_one();
			if (!(p[0].revents & (POLLIN | POLLHUP)))
				continue;
		}
		if (!fill())
			return 0;
	}
	return 1;
}

int main(int argc, char **argv)
{
	uint64_t v, c = 0, t0, ms;
	struct nxq_status st;
	char line[256], cmd[32], arg[64], arg2[64];
	int ok, serving = 0, want_efd = 0;
	long rc;

	if (argc > 1 && !strcmp(argv[argc - 1], "--eventfd")) {
		want_efd = 1;
		argc--;
	}
	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: nxq-hold NAME DEVICE [CGROUP] "
			"[--eventfd]\n");
		return 2;
	}
	name = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && (rc = sc_cg_enter(argv[3])) < 0) {
		printf("[%s] cannot enter cgroup %s: %s\n", name, argv[3],
		       strerror((int)-rc));
		return 1;
	}
	if (want_efd && (efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC)) < 0) {
		printf("[%s] eventfd: %s\n", name, strerror(errno));
		return 1;
	}
	fd = sc_open();
	if (fd < 0 || (rc = sc_register(fd, argv[2], efd, 0, &h)) < 0) {
		printf("[%s] cannot register on %s: %s\n", name, argv[2],
		       strerror(fd < 0 ? -fd : (int)-rc));
		return 1;
	}
	while (next_line(line, sizeof(line), serving)) {
		arg[0] = arg2[0] = 0;
		if (sscanf(line, "%31s %63s %63s", cmd, arg, arg2) < 1)
			continue;
		if (!strcmp(cmd, "quit"))
			break;
		if (!strcmp(cmd, "serve")) {
			if (efd < 0) {
				printf("[%s] serve: registered without "
				       "--eventfd\n", name);
				continue;
			}
			serving = 1;
			printf("[%s] serving tickets: releasing what is "
			       "asked\n", name);
			continue;
		}
		if (!strcmp(cmd, "stop")) {
			serving = 0;
			printf("[%s] stopped serving after %" PRIu64
			       " ticket(s)\n", name, served);
			continue;
		}
		if (!strcmp(cmd, "wait")) {
			v = parse_size(arg, &ok);
			ms = strtoull(arg2, NULL, 10);
			if (!ok || !ms) {
				printf("[%s] ? %s", name, line);
				continue;
			}
			t0 = sc_now_ns();
			printf("@%" PRIu64 " [%s] charge %s: waiting up to %"
			       PRIu64 " ms\n", t0 / 1000, name, human(v), ms);
			rc = sc_charge_wait(fd, h, v, ms * 1000000, &c);
			t0 = sc_now_ns() - t0;
			if (rc < 0)
				printf("@%" PRIu64 " [%s] charge %s: refused "
				       "after %.1f ms, %s (%s)\n", now_us(),
				       name, human(v), t0 / 1e6,
				       sc_errname((int)-rc), rc == -ETIMEDOUT ?
				       "nobody released enough in time" :
				       why(rc));
			else
				printf("@%" PRIu64 " [%s] charge %s: granted "
				       "after %.1f ms, holds %s\n", now_us(),
				       name, human(v), t0 / 1e6, human(c));
			continue;
		}
		if (!strcmp(cmd, "status")) {
			rc = sc_status(fd, h, &st);
			if (rc < 0)
				printf("[%s] status: %s\n", name,
				       sc_errname((int)-rc));
			else
				printf("[%s] status: holds %s; its cgroup: %s of max %s;"
				       " device: %s used of %s\n", name,
				       human(st.holder_charge),
				       human(st.node_current),
				       human(st.node_max),
				       human(st.device_used),
				       human(st.device_capacity));
			continue;
		}
		v = parse_size(arg, &ok);
		if (!ok || (strcmp(cmd, "charge") && strcmp(cmd, "uncharge"))) {
			printf("[%s] ? %s", name, line);
			continue;
		}
		if (!strcmp(cmd, "charge"))
			rc = sc_charge(fd, h, v, &c);
		else
			rc = sc_uncharge(fd, h, v, &c);
		if (rc < 0)
			printf("[%s] %s %s: refused, %s (%s)\n", name, cmd,
			       human(v), sc_errname((int)-rc), why(rc));
		else
			printf("[%s] %s %s: %s, holds %s\n", name, cmd,
			       human(v),
			       !strcmp(cmd, "charge") ? "granted" : "done",
			       human(c));
	}
	return 0;
}

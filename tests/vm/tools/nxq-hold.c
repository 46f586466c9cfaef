// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-hold - a holder driven line by line, for tests/vm/demo.sh.
 *
 *   nxq-hold NAME DEVICE [CGROUP]
 *
 * Moves itself into CGROUP (a path under /sys/fs/cgroup, e.g. /inference)
 * if given, opens /dev/nxquota and registers one holder on DEVICE.  Then
 * it reads commands from stdin and answers each with one line on stdout:
 *
 *   charge SIZE      ->  "[NAME] charge 300 MiB: granted, holds 700 MiB"
 *                        "[NAME] charge 300 MiB: refused, EDQUOT (...)"
 *   uncharge SIZE    ->  "[NAME] uncharge ...: done, holds ..."
 *   status           ->  "[NAME] status: holds ...; its cgroup: ... of
 *                         max ...; device: ... used of ..."
 *   quit             ->  exits (closing the file uncharges everything)
 *
 * SIZE is bytes with an optional K, M or G suffix.  Exit status: 0 after
 * quit or end of input, 1 if it could not register.
 */
#include "scen.h"

static const char *name;

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

int main(int argc, char **argv)
{
	uint64_t h = 0, v, c = 0;
	struct nxq_status st;
	char line[256], cmd[32], arg[64];
	int fd, ok;
	long rc;

	if (argc < 3 || argc > 4) {
		fprintf(stderr, "usage: nxq-hold NAME DEVICE [CGROUP]\n");
		return 2;
	}
	name = argv[1];
	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 4 && (rc = sc_cg_enter(argv[3])) < 0) {
		printf("[%s] cannot enter cgroup %s: %s\n", name, argv[3],
		       strerror((int)-rc));
		return 1;
	}
	fd = sc_open();
	if (fd < 0 || (rc = sc_register(fd, argv[2], -1, 0, &h)) < 0) {
		printf("[%s] cannot register on %s: %s\n", name, argv[2],
		       strerror(fd < 0 ? -fd : (int)-rc));
		return 1;
	}
	while (fgets(line, sizeof(line), stdin)) {
		arg[0] = 0;
		if (sscanf(line, "%31s %63s", cmd, arg) < 1)
			continue;
		if (!strcmp(cmd, "quit"))
			break;
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

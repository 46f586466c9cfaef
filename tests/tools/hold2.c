// SPDX-License-Identifier: GPL-2.0
/*
 * hold2 - one process, two holders (tests/tools/nvml.sh): the ledger's
 * charge of a process is the sum of its holders.
 *
 *   hold2 DEVICE CGROUP BYTES1 BYTES2
 *
 * Moves into CGROUP (under NXQ_CGROOT), opens the authority (tests/vm's
 * scen.h: NXQ_AUTHORITY=daemon and NXQUOTA_SOCKET for nxquotad),
 * registers two holders on DEVICE, each with an eventfd, charges BYTES1
 * to the first and BYTES2 to the second, prints "granted", and holds them
 * until its stdin ends.  Exit 0, or 1 with the reason.
 */
#include "scen.h"

int main(int argc, char **argv)
{
	uint64_t id[2], c;
	char buf[64];
	long rc;
	int fd, i;

	if (argc != 5) {
		fprintf(stderr, "usage: hold2 DEVICE CGROUP BYTES1 BYTES2\n");
		return 2;
	}
	rc = sc_cg_enter(argv[2]);
	if (rc < 0) {
		printf("cannot enter %s: %s\n", argv[2], strerror((int)-rc));
		return 1;
	}
	fd = sc_open();
	if (fd < 0) {
		printf("no authority: %s\n", strerror(-fd));
		return 1;
	}
	for (i = 0; i < 2; i++) {
		rc = sc_register(fd, argv[1], sc_eventfd(), 0, &id[i]);
		if (!rc)
			rc = sc_charge(fd, id[i], strtoull(argv[3 + i], NULL, 10),
				       &c);
		if (rc < 0) {
			printf("holder %d: %s\n", i, sc_errname((int)-rc));
			return 1;
		}
	}
	printf("granted\n");
	fflush(stdout);
	while (read(0, buf, sizeof(buf)) > 0)
		;
	return 0;
}

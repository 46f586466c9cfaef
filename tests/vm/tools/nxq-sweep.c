// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-sweep: unregister every device the authority has, for the harness
 * between scenarios (tests/vm/init.sh in daemon mode, tests/daemon-scen.sh)
 * where there is no sysfs tree to walk.  Speaks scen.h's translation:
 * NXQ_AUTHORITY=daemon -> nxquotad's control socket.
 *
 * Prints "device:KEY" for each device it found (a scenario left it
 * behind), retrying an unregister refused with EBUSY for up to 5 s (the
 * holders of killed processes go when the authority notices).  Exit 0 when
 * no device is left, 1 otherwise (with the reason on stderr).
 */
#include "scen.h"

struct keys {
	char key[64][NXQ_DEVICE_KEY_MAX];
	int n;
};

static int key_cb(struct nlattr **tb, void *arg)
{
	struct keys *k = arg;
	struct nlattr *a = tb[NXQUOTA_A_DEVICE_KEY];

	if (a && k->n < 64)
		snprintf(k->key[k->n++], NXQ_DEVICE_KEY_MAX, "%s",
			 (char *)a + NLA_HDRLEN);
	return 0;
}

static int list(struct keys *k)
{
	struct sc_nlreq m;

	k->n = 0;
	sc_nl_init(&m, NXQUOTA_CMD_DEVICE_GET, 1);
	return sc_nl_talk(&m, key_cb, k);
}

int main(void)
{
	struct keys k;
	uint64_t end = sc_now_ms() + 5000;
	int i, rc, printed = 0;

	sc_main_pid = getpid();
	for (;;) {
		rc = list(&k);
		if (rc < 0) {
			fprintf(stderr, "nxq-sweep: device dump: %s\n",
				sc_errname(-rc));
			return 1;
		}
		if (!printed) {
			for (i = 0; i < k.n; i++)
				printf("device:%s\n", k.key[i]);
			printed = 1;
		}
		if (!k.n)
			return 0;
		for (i = 0; i < k.n; i++) {
			rc = sc_write(SC_DEVICES "/unregister", k.key[i]);
			if (rc && rc != -EBUSY && rc != -ENOENT) {
				fprintf(stderr, "nxq-sweep: unregister %s: %s\n",
					k.key[i], sc_errname(-rc));
				return 1;
			}
		}
		if (sc_now_ms() > end) {
			fprintf(stderr, "nxq-sweep: %d device(s) still busy\n",
				k.n);
			return 1;
		}
		usleep(50000);
	}
}

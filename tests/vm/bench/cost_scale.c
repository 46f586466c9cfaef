// SPDX-License-Identifier: GPL-2.0
/*
 * cost_scale: the charge+uncharge pair with 10,000 holders over 1,000
 * cgroups on the device, against the same pair when the neighbour's
 * holder is the only one (same boot): issue 10's target is at most 1.2x.
 *
 * 1000 processes, one per cgroup /cb-s/gNNNN, register 10 holders each
 * (with an eventfd) and charge each 4K; the neighbour (uid 65534, /cb-n,
 * CPU 0) times 1M pairs, before the members come (one holder) and then,
 * one in turn with each, on this device and on a second device where its
 * holder is the only one: the target is taken from the interleaved pair
 * (TCG on a shared host runs at two speeds for seconds at a time, which
 * moves a before/after ratio by 0.3), the before/after ratio is printed
 * as well.  NXQ_BENCH_CGROUPS and NXQ_BENCH_PER_CGROUP change the 1000
 * and the 10.
 */
#include "cost.h"

#define KEY	"t-cbs"
#define KEY0	"t-cbs0"	/* the neighbour's alone: the quiet ledger */
#define CN	"/cb-n"
#define CS	"/cb-s"

static int ready[2], stop_p[2];

static int member(void *arg)
{
	int i = (int)(uintptr_t)arg, k, fd, efd, per;
	char cg[64];
	uint64_t id;
	char c;

	per = (int)tn_knob("NXQ_BENCH_PER_CGROUP", 10);
	close(stop_p[1]);
	snprintf(cg, sizeof(cg), CS "/g%04d", i);
	CHECK_OK(sc_cg_enter(cg));
	fd = sc_open();
	CHECK_OK(fd);
	efd = sc_eventfd();
	for (k = 0; k < per; k++) {
		CHECK_OK(sc_register(fd, KEY, efd, 0, &id));
		CHECK_OK(sc_charge(fd, id, 4096, NULL));
	}
	if (write(ready[1], "r", 1) != 1)
		_exit(1);
	if (read(stop_p[0], &c, 1) < 0)
		_exit(1);
	_exit(0);
}

int main(int argc, char **argv)
{
	int ncg = (int)tn_knob("NXQ_BENCH_CGROUPS", 1000), i, n;
	int per = (int)tn_knob("NXQ_BENCH_PER_CGROUP", 10);
	struct cb_stat one, many, quiet;
	struct cb_nb nb;
	char cg[64], lim[128], c;
	pid_t *pids;

	sc_init(argc, argv);
	tn_devnode_admin();
	pids = calloc(ncg, sizeof(*pids));
	CHECK(pids && pipe(ready) == 0);
	CHECK_OK(sc_dev_register(KEY, "4G"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_dev_register(KEY0, "4G"));
	TN_DEV_OPEN(KEY0);
	CHECK_OK(sc_cg_create(CN));
	CHECK_OK(sc_cg_create(CS));
	CHECK_OK(sc_set_budget(KEY, CN " max=1G"));
	CHECK_OK(sc_set_budget(KEY0, CN " max=1G"));
	snprintf(lim, sizeof(lim), CS " holders_max=%d", ncg * per + 100);
	cb_limits(KEY, lim);
	snprintf(lim, sizeof(lim), "/ holders_max=%d", ncg * per + 1000);
	cb_limits(KEY, lim);
	for (i = 0; i < ncg; i++) {
		snprintf(cg, sizeof(cg), CS "/g%04d", i);
		if (mkdir(sc_cg_path(cg, NULL), 0755) < 0)
			FAIL("mkdir %s: %s", cg, sc_errname(errno));
	}
	cb_nb_start2(&nb, CN, KEY, KEY0, 0);
	cb_nb_measure(&nb, 2);
	one = cb_nb_measure(&nb, 2);

	CHECK(pipe(stop_p) == 0);	/* after the neighbour: not its */
	for (i = 0; i < ncg; i++)
		pids[i] = sc_spawn(member, (void *)(uintptr_t)i);
	close(stop_p[0]);
	for (n = 0; n < ncg; n++)
		if (read(ready[0], &c, 1) != 1)
			FAIL("a member died (%d of %d ready)", n, ncg);
	sc_log("BENCH cost_scale holders=%llu nodes_used=%llu",
	       (unsigned long long)DEV_U64(KEY, "holders"),
	       (unsigned long long)DEV_U64(KEY, "used"));
	CHECK_EQ(DEV_U64(KEY, "holders"), (uint64_t)ncg * per + 1);
	cb_nb_measure(&nb, 2);
	cb_nb_measure_op(&nb, 4, &many, &quiet);
	cb_print("cost_scale", "pair-1-holder-before", one);
	cb_print("cost_scale", "pair-1-holder-interleaved", quiet);
	snprintf(lim, sizeof(lim), "pair-%d-holders-%d-cgroups", ncg * per,
		 ncg);
	cb_print("cost_scale", lim, many);
	cb_ratio("cost_scale", "many/one", many, quiet, "<= 1.2");
	cb_ratio("cost_scale", "many/one-before", many, one, "-");

	close(stop_p[1]);
	for (i = 0; i < ncg; i++)
		CHECK_CHILD_OK(pids[i]);
	cb_nb_stop(&nb);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_EQ(DEV_U64(KEY0, "used"), 0);
	CHECK_OK(sc_dev_unregister(KEY0));
	for (i = 0; i < ncg; i++) {
		snprintf(cg, sizeof(cg), CS "/g%04d", i);
		CHECK(rmdir(sc_cg_path(cg, NULL)) == 0);
	}
	CHECK_OK(sc_cg_remove(CS));
	CHECK_OK(sc_cg_remove(CN));
	PASS();
}

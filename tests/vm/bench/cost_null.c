// SPDX-License-Identifier: GPL-2.0
/*
 * cost_null: the plain charge+uncharge pair of 1M against a null ioctl
 * (NXQ_IOC_VERSION), same process, same boot, one of each in turn, each
 * timed around its ioctl()s alone: issue 10's target is a ratio of at
 * most 2.5.  The neighbour (uid 65534, /cb-n, CPU 0) has the
 * only holder on a 1G device.
 */
#include "cost.h"

#define KEY	"t-cbn"
#define CN	"/cb-n"

int main(int argc, char **argv)
{
	struct cb_stat nul, pair;
	struct cb_nb nb;

	sc_init(argc, argv);
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "1G"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CN));
	CHECK_OK(sc_set_budget(KEY, CN " max=1G"));
	cb_nb_start(&nb, CN, KEY, 0);
	cb_nb_measure(&nb, 2);			/* warm up */
	cb_nb_measure2(&nb, &nul, &pair);
	cb_print("cost_null", "null-ioctl", nul);
	cb_print("cost_null", "pair", pair);
	cb_ratio("cost_null", "pair/null", pair, nul, "<= 2.5");
	cb_nb_stop(&nb);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CN));
	PASS();
}

// SPDX-License-Identifier: GPL-2.0
/*
 * layouts: one budget, set once where the container stack puts the pod
 * (or job), governs every process below it, in the cgroup layouts that
 * real stacks make (issue 19).  The device keeps default_max 0, and no
 * intermediate cgroup (/kubepods, a slice) gets a budget:
 *
 *   kubelet, cgroupfs driver  /kubepods/burstable/pod<uid>/<ctr>
 *   kubelet, systemd driver   /kubepods.slice/kubepods-burstable.slice/
 *                             kubepods-burstable-pod<uid>.slice/
 *                             cri-containerd-<id>.scope
 *   podman, a pod             /machine.slice/
 *                             machine-libpod_pod_<id>.slice/libpod-<id>.scope
 *   Slurm                     /system.slice/slurmstepd.scope/job_<id>/
 *                             step_<n>
 *
 * For each: POD min=max=8M.  Two containers (steps) whose holders have no
 * eventfd, as the LD_PRELOAD shim registers them, charge 5M and 3M: both
 * granted (the pod's guarantee reaches them; they share it); one byte
 * more is refused, and what one gives back the other may take.  A holder
 * with an eventfd in a third container charges nothing more (the pod's
 * max, 8M).  Each container shows effective_max 8M and its share of the
 * 8M guarantee; a container of a pod without a budget, beside it, gets
 * nothing (default_max 0).  Clearing the pod's budget leaves nothing.
 * On the rules before issue 19 the first 5M were refused (/kubepods took
 * default_max 0, and the pod's guarantee did not reach its containers).
 */
#include "scen.h"

#define KEY	"t-lay"
#define M	SC_MIB

struct layout {
	const char *name;
	const char *dirs[6];	/* created in order; the pod is dirs[npod] */
	int npod;
	const char *ctr[3];	/* containers (or steps) of the pod */
	const char *stranger;	/* a container of a pod without a budget */
};

static const struct layout layouts[] = {
	{ "kubelet-cgroupfs",
	  { "/kubepods", "/kubepods/burstable",
	    "/kubepods/burstable/pod0a1b", "/kubepods/burstable/pod9f8e" },
	  2,
	  { "/kubepods/burstable/pod0a1b/c1", "/kubepods/burstable/pod0a1b/c2",
	    "/kubepods/burstable/pod0a1b/c3" },
	  "/kubepods/burstable/pod9f8e/c1" },
	{ "kubelet-systemd",
	  { "/kubepods.slice", "/kubepods.slice/kubepods-burstable.slice",
	    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b.slice",
	    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9f8e.slice" },
	  2,
	  { "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b.slice/cri-containerd-c1.scope",
	    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b.slice/cri-containerd-c2.scope",
	    "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod0a1b.slice/cri-containerd-c3.scope" },
	  "/kubepods.slice/kubepods-burstable.slice/kubepods-burstable-pod9f8e.slice/cri-containerd-c1.scope" },
	{ "podman-pod",
	  { "/machine.slice", "/machine.slice/machine-libpod_pod_0a1b.slice" },
	  1,
	  { "/machine.slice/machine-libpod_pod_0a1b.slice/libpod-c1.scope",
	    "/machine.slice/machine-libpod_pod_0a1b.slice/libpod-c2.scope",
	    "/machine.slice/machine-libpod_pod_0a1b.slice/libpod-c3.scope" },
	  "/machine.slice/libpod-c9.scope" },
	{ "slurm",
	  { "/system.slice", "/system.slice/slurmstepd.scope",
	    "/system.slice/slurmstepd.scope/job_41",
	    "/system.slice/slurmstepd.scope/job_42" },
	  2,
	  { "/system.slice/slurmstepd.scope/job_41/step_0",
	    "/system.slice/slurmstepd.scope/job_41/step_1",
	    "/system.slice/slurmstepd.scope/job_41/step_batch" },
	  "/system.slice/slurmstepd.scope/job_42/step_0" },
};

static void one(const struct layout *l)
{
	struct sc_peer c1, c2, c3, st;
	const char *pod = l->dirs[l->npod];
	int i, ndirs = 0;
	uint64_t podid;
	struct sc_rep r;

	sc_log("layout %s: pod %s", l->name, pod);
	for (i = 0; i < 6 && l->dirs[i]; i++, ndirs++)
		CHECK_OK(sc_cg_create(l->dirs[i]));
	for (i = 0; i < 3; i++)
		CHECK_OK(sc_cg_create(l->ctr[i]));
	CHECK_OK(sc_cg_create(l->stranger));

	/* One budget, on the pod alone. */
	CHECK_OK(sc_set_budget(KEY, "%s min=8M max=8M", pod));
	sc_peer_start(&c1, "c1", l->ctr[0], KEY, 0, 0);
	sc_peer_start(&c2, "c2", l->ctr[1], KEY, 0, 0);
	sc_peer_start(&c3, "c3", l->ctr[2], KEY, 0, 1);
	sc_peer_start(&st, "stranger", l->stranger, KEY, 0, 1);
	r = PEER_CALL(&c1, SC_PEER_CHARGE, 5 * M, 0);
	if (r.rc)
		FAIL("%s: 5M in %s, under its pod's min=max=8M: %s",
		     l->name, l->ctr[0], sc_rcname(r.rc));
	PEER_OK(&c2, SC_PEER_CHARGE, 3 * M, 0);
	CHECK_EQ(PEER_CALL(&c2, SC_PEER_CHARGE, 1, 0).rc, -EDQUOT);
	CHECK_EQ(PEER_CALL(&c3, SC_PEER_CHARGE, 1, 0).rc, -EDQUOT);
	CHECK_EQ(PEER_CALL(&st, SC_PEER_CHARGE, 1, 0).rc, -EDQUOT);
	CHECK_EQ(NODE_U64(KEY, CG_ID(pod), "current"), 8 * M);
	CHECK_EQ(NODE_U64(KEY, CG_ID(l->ctr[0]), "effective_max"), 8 * M);
	CHECK_EQ(NODE_U64(KEY, CG_ID(l->ctr[0]), "effective_min"), 5 * M);
	CHECK_EQ(NODE_U64(KEY, CG_ID(l->ctr[1]), "effective_min"), 3 * M);
	CHECK_EQ(NODE_U64(KEY, CG_ID(l->ctr[0]), "borrowed"), 0);
	/* The top-level cgroup itself, unbudgeted: default_max (0). */
	CHECK_EQ(NODE_U64(KEY, CG_ID(l->dirs[0]), "effective_max"), 0);
	CHECK_EQ(NODE_U64(KEY, CG_ID(pod), "effective_max"), 8 * M);
	CHECK_EQ(NODE_U64(KEY, CG_ID(l->stranger), "effective_max"), 0);
	CHECK_EQ(NODE_U64(KEY, CG_ID(l->dirs[0]), "claimed"), 8 * M);
	/* What one container gives back, another may take. */
	PEER_OK(&c1, SC_PEER_UNCHARGE, 2 * M, 0);
	PEER_OK(&c3, SC_PEER_CHARGE, M, 0);
	PEER_OK(&c2, SC_PEER_CHARGE, M, 0);
	CHECK_EQ(PEER_CALL(&c1, SC_PEER_CHARGE, 1, 0).rc, -EDQUOT);
	CHECK_EQ(DEV_U64(KEY, "used"), 8 * M);

	PEER_STOP(&c1);
	PEER_STOP(&c2);
	PEER_STOP(&c3);
	PEER_STOP(&st);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	/*
	 * Nobody clears the pod's budget: it goes with its cgroup, at the
	 * next change of the device's budgets (or netlink dump).
	 */
	podid = CG_ID(pod);
	CHECK_OK(sc_cg_remove(l->stranger));
	for (i = 2; i >= 0; i--)
		CHECK_OK(sc_cg_remove(l->ctr[i]));
	for (i = ndirs - 1; i >= 0; i--)
		CHECK_OK(sc_cg_remove(l->dirs[i]));
	CHECK(sc_node_exists(KEY, podid) || sc_daemon());
	CHECK_OK(sc_cg_create("/nxq-lay-x"));
	CHECK_OK(sc_set_budget(KEY, "/nxq-lay-x max=1M"));
	CHECK_OK(sc_clear_budget(KEY, "/nxq-lay-x"));
	CHECK_OK(sc_cg_remove("/nxq-lay-x"));
	if (sc_node_exists(KEY, podid))
		FAIL("%s: the budget of %s outlived its cgroup", l->name, pod);
}

/* The layouts are the ledger's rules: the module and nxquotad alike. */
FIXTURE(layouts) {};

FIXTURE_VARIANT(layouts) {};

FIXTURE_VARIANT_ADD(layouts, module) {};

FIXTURE_VARIANT_ADD(layouts, daemon) {};

/* default_max stays 0: nothing unbudgeted may charge. */
FIXTURE_SETUP(layouts)
{
	CHECK_OK(sc_dev_register(KEY, "64M"));
}

FIXTURE_TEARDOWN(layouts)
{
	CHECK_OK(sc_dev_unregister(KEY));
}

TEST_F(layouts, kubelet_cgroupfs)
{
	one(&layouts[0]);
}

TEST_F(layouts, kubelet_systemd)
{
	one(&layouts[1]);
}

TEST_F(layouts, podman_pod)
{
	one(&layouts[2]);
}

TEST_F(layouts, slurm)
{
	one(&layouts[3]);
}

TEST_HARNESS_MAIN

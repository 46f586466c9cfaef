// SPDX-License-Identifier: GPL-2.0
/*
 * atk_kill_registrant: a holder's charge goes with the process that
 * registered it, even when a forked child keeps the file.
 *
 *  1. Tenant P (/atk-kr-p) registers H, charges 40M and forks C, which
 *     keeps the file.  P is SIGKILLed: used, holders and the node's
 *     current go back to 0 with C alive; C gets ENOENT for H.
 *  2. With the kill policy: G (tenant, /atk-kr-g, min 60M) and B (tenant,
 *     /atk-kr-b, kill_on_ignore on) which borrows 90M of a 100M device,
 *     ignores its tickets, and has a forked child BC keeping its file.  G
 *     waits 3 s for 40M (floor 300 ms): at G's deadline B is killed, its
 *     charge goes and G is granted; BC is not killed; kills is 1.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-akr"
#define CP	"/atk-kr-p"
#define CGG	"/atk-kr-g"
#define CB	"/atk-kr-b"
#define M	SC_MIB

static int c2m[2], m2c[2];

struct hd {
	int fd;
	uint64_t id;
};

/* The forked child: reports its pid, waits for a command, tries H. */
static int keeper(void *arg)
{
	struct hd *h = arg;
	uint64_t cmd;

	/* outlive the registrant (RECV times out if all else dies) */
	prctl(PR_SET_PDEATHSIG, 0);
	CHECK_OK(sc_send(c2m[1], getpid()));
	for (;;) {
		cmd = RECV(m2c[0]);
		if (cmd == 0)
			return 0;
		CHECK_OK(sc_send(c2m[1], -sc_charge(h->fd, h->id, M, NULL)));
	}
}

/* The registrant: H charged with bytes, a keeper child, then sleeps. */
static int registrant(void *arg)
{
	struct hd h;
	uint64_t bytes = (uintptr_t)arg;
	int efd;

	tn_drop(1, 0);
	h.fd = sc_open();
	if (h.fd < 0)
		FAIL("tenant: open: %s", sc_errname(-h.fd));
	efd = sc_eventfd();
	CHECK_OK(sc_register(h.fd, KEY, efd, 0, &h.id));
	CHECK_OK(sc_charge(h.fd, h.id, bytes, NULL));
	sc_spawn(keeper, &h);
	for (;;)
		pause();
}

static pid_t start(const char *cg, uint64_t bytes, pid_t *keeper_pid)
{
	pid_t p;

	CHECK_OK(sc_cg_enter(cg));
	p = sc_spawn(registrant, (void *)(uintptr_t)bytes);
	CHECK_OK(sc_cg_enter("/"));
	*keeper_pid = (pid_t)RECV(c2m[0]);
	return p;
}

/* A holder goes with its registering process: the module and nxquotad alike. */
FIXTURE(kill_registrant) {};

FIXTURE_VARIANT(kill_registrant) {};

FIXTURE_VARIANT_ADD(kill_registrant, module) {};

FIXTURE_VARIANT_ADD(kill_registrant, daemon) {};

FIXTURE_SETUP(kill_registrant)
{
	tn_devnode_admin();
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	TN_FLOOR_MS(KEY, 300);
	CHECK_OK(sc_cg_create(CP));
	CHECK_OK(sc_cg_create(CGG));
	CHECK_OK(sc_cg_create(CB));
	CHECK_OK(sc_set_budget(KEY, CP " max=100M"));
	CHECK_OK(sc_set_budget(KEY, CB " max=100M"));
	CHECK_OK(sc_set_budget(KEY, CGG " max=100M min=60M"));
	CHECK(pipe(c2m) == 0 && pipe(m2c) == 0);
}

FIXTURE_TEARDOWN(kill_registrant)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CP));
	CHECK_OK(sc_cg_remove(CGG));
	CHECK_OK(sc_cg_remove(CB));
}

TEST_F(kill_registrant, charge_goes_with_the_registrant)
{
	struct sc_peer g;
	struct sc_rep r;
	uint64_t last = 0;
	pid_t p, k;

	/* 1. SIGKILL of the registrant */
	p = start(CP, 40 * M, &k);
	WAIT_U64(sc_dev_path(KEY, "used"), 40 * M);
	kill(p, SIGKILL);
	CHECK_EQ(sc_wait(p), 128 + SIGKILL);
	if (sc_wait_u64(sc_dev_path(KEY, "used"), 0, 5000, &last) < 0)
		FAIL("registrant SIGKILLed, its forked child keeps the file: "
		     "used stays %llu (expected 0)", (unsigned long long)last);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
	CHECK_EQ(NODE_U64(KEY, CG_ID(CP), "current"), 0);
	if (!tn_running(k))
		FAIL("the keeper child is gone (exited)");
	CHECK_OK(sc_send(m2c[1], 1));
	CHECK_EQ(RECV(c2m[0]), ENOENT);
	CHECK_OK(sc_send(m2c[1], 0));
	while (tn_running(k))
		usleep(10000);
	sc_log("1. registrant SIGKILLed: its 40M gone, the child keeping the "
	       "file gets ENOENT");

	/* 2. the kill policy hits the registrant, the charge goes with it */
	p = start(CB, 90 * M, &k);
	WAIT_U64(sc_dev_path(KEY, "used"), 90 * M);
	CHECK_OK(sc_write(sc_node_path(KEY, CG_ID(CB), "kill_on_ignore"),
			  "1"));
	tn_peer_start(&g, "G", CGG, KEY, 0, 1, 1);
	r = PEER_CALL(&g, SC_PEER_CHARGE, 40 * M, 3000ULL * 1000000);
	sc_log("2. G's wait for 40M: %s after %llu ms; kills %llu",
	       sc_rcname(r.rc), (unsigned long long)(r.v[1] / 1000000),
	       (unsigned long long)DEV_U64(KEY, "kills"));
	if (r.rc)
		FAIL("G (min 60M) waiting for 40M from B, which ignores its "
		     "ticket with kill_on_ignore on and a child keeping its "
		     "file: %s after %llu ms (kills %llu, used %llu)",
		     sc_rcname(r.rc), (unsigned long long)(r.v[1] / 1000000),
		     (unsigned long long)DEV_U64(KEY, "kills"),
		     (unsigned long long)DEV_U64(KEY, "used"));
	CHECK_EQ(sc_wait(p), 128 + SIGKILL);
	if (!tn_running(k))
		FAIL("B's child (not the registrant) was killed too");
	CHECK_EQ(DEV_U64(KEY, "kills"), 1);
	CHECK_EQ(DEV_U64(KEY, "used"), 40 * M);
	CHECK_OK(sc_send(m2c[1], 0));
	while (tn_running(k))
		usleep(10000);
	PEER_STOP(&g);
	CHECK_EQ(DEV_U64(KEY, "used"), 0);
	CHECK_EQ(DEV_U64(KEY, "holders"), 0);
}

TEST_HARNESS_MAIN

// SPDX-License-Identifier: GPL-2.0
/*
 * atk_kmem: a tenant cannot grow kernel memory without limit, and what it
 * makes counts in its own memory cgroup.
 *
 * Tenant T (uid 65534) in /atk-km, memory.max = 16M:
 *  1. no holders_max set (the module-wide default, 1024, applies): T
 *     registers holders on one file until refused: exactly 1024, then
 *     EMFILE; on a second file: EMFILE at once (the limit is the
 *     cgroup's, not the file's).
 *  2. root sets holders_max=12000: T registers 10000 more (a new file
 *     whenever one is full) and /atk-km's memory.current grows by at
 *     least 64 bytes per holder (GFP_KERNEL_ACCOUNT; 10000 holders so
 *     that the memcg's per-cpu charge batch, 256K, does not hide it).
 *  3. T closes its files: holders 0.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-akm"
#define CG	"/atk-km"
#define LIMIT	1024
#define MORE	10000

static int t2m[2], m2t[2];

static int tenant(void *arg)
{
	uint64_t id, n1 = 0, n2 = 0;
	int fd1, fd2, efd, fds[64], nfd = 0, i;
	long rc1, rc2, rc;

	(void)arg;
	tn_tenant(CG);
	fd1 = sc_open();
	fd2 = sc_open();
	if (fd1 < 0 || fd2 < 0)
		FAIL("tenant: open: %s", sc_errname(-(fd1 < 0 ? fd1 : fd2)));
	efd = sc_eventfd();
	while ((rc1 = sc_register(fd1, KEY, efd, 0, &id)) == 0 &&
	       n1 < 100000)
		n1++;
	while ((rc2 = sc_register(fd2, KEY, efd, 0, &id)) == 0 &&
	       n2 < 100000)
		n2++;
	CHECK_OK(sc_send(t2m[1], n1));
	CHECK_OK(sc_send(t2m[1], -rc1));
	CHECK_OK(sc_send(t2m[1], n2));
	CHECK_OK(sc_send(t2m[1], -rc2));
	if (RECV(m2t[0]) == 0)
		return 0;	/* part 1 failed: stop here */
	/* 2. root raised holders_max */
	fds[nfd++] = fd2;
	for (i = 0; i < MORE; i++) {
		rc = sc_register(fds[nfd - 1], KEY, efd, 0, &id);
		if (rc == -EMFILE && nfd < 64) {
			fds[nfd] = sc_open();
			CHECK_OK(fds[nfd]);
			nfd++;
			rc = sc_register(fds[nfd - 1], KEY, efd, 0, &id);
		}
		if (rc)
			FAIL("tenant: holder %d of %d more: %s", i, MORE,
			     sc_errname((int)-rc));
	}
	CHECK_OK(sc_send(t2m[1], nfd));
	RECV(m2t[0]);
	close(fd1);
	for (i = 0; i < nfd; i++)
		close(fds[i]);
	CHECK_OK(sc_send(t2m[1], 0));
	RECV(m2t[0]);
	return 0;
}

static uint64_t memcur(void)
{
	uint64_t v;
	int rc = sc_read_u64(sc_cg_path(CG, "memory.current"), &v);

	if (rc < 0)
		FAIL("read %s: %s", sc_cg_path(CG, "memory.current"),
		     sc_errname(-rc));
	return v;
}

/* The module's memory in the tenant's memcg: the module only (sc_module_only[]). */
FIXTURE(kmem) {
	int had_memory;
};

FIXTURE_VARIANT(kmem) {};

FIXTURE_VARIANT_ADD(kmem, module) {};

FIXTURE_SETUP(kmem)
{
	char ctl[256];

	tn_devnode_admin();
	if (sc_read(SC_CGROOT "/cgroup.controllers", ctl, sizeof(ctl)) < 0 ||
	    !strstr(ctl, "memory"))
		SKIP("no memory controller in cgroup2");
	CHECK(sc_read(SC_CGROOT "/cgroup.subtree_control", ctl,
		      sizeof(ctl)) >= 0);
	self->had_memory = strstr(ctl, "memory") != NULL;
	if (!self->had_memory)
		CHECK_OK(sc_write(SC_CGROOT "/cgroup.subtree_control",
				  "+memory"));
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_write(sc_cg_path(CG, "memory.max"), "16M"));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M"));
	CHECK(pipe(t2m) == 0 && pipe(m2t) == 0);
}

FIXTURE_TEARDOWN(kmem)
{
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
	if (!self->had_memory)
		sc_write(SC_CGROOT "/cgroup.subtree_control", "-memory");
}

TEST_F_TIMEOUT(kmem, holders_charged_to_the_tenant, 55)
{
	uint64_t n1, e1, n2, e2, m0, m1, per;
	pid_t pid;

	/* 1. the default holders_max */
	pid = sc_spawn(tenant, NULL);
	n1 = RECV(t2m[0]);
	e1 = RECV(t2m[0]);
	n2 = RECV(t2m[0]);
	e2 = RECV(t2m[0]);
	sc_log("1. file 1: %llu holders then %s; file 2: %llu then %s",
	       (unsigned long long)n1, sc_errname((int)e1),
	       (unsigned long long)n2, sc_errname((int)e2));
	if (n1 != LIMIT || e1 != EMFILE || n2 != 0 || e2 != EMFILE) {
		CHECK_OK(sc_send(m2t[1], 0));
		FAIL("holders_max's default (1024) in a cgroup: file 1 took "
		     "%llu then %s, file 2 %llu more then %s (expected 1024 "
		     "then EMFILE, 0 then EMFILE)", (unsigned long long)n1,
		     sc_errname((int)e1), (unsigned long long)n2,
		     sc_errname((int)e2));
	}
	CHECK_EQ(DEV_U64(KEY, "holders"), LIMIT);

	/* 2. what it makes counts in its memcg */
	CHECK_OK(sc_set_budget(KEY, CG " holders_max=12000"));
	usleep(100 * 1000);
	m0 = memcur();
	CHECK_OK(sc_send(m2t[1], 1));
	RECV(t2m[0]);
	m1 = memcur();
	CHECK_EQ(DEV_U64(KEY, "holders"), LIMIT + MORE);
	per = m1 > m0 ? (m1 - m0) / MORE : 0;
	sc_log("2. %d more holders: memory.current %llu -> %llu (%llu bytes "
	       "per holder; memory.max 16M)", MORE, (unsigned long long)m0,
	       (unsigned long long)m1, (unsigned long long)per);
	if (per < 64)
		FAIL("memory.current of the tenant's cgroup grew by %lld bytes "
		     "for %d holders (%llu each): their kernel memory is not "
		     "charged to it", (long long)(m1 - m0), MORE,
		     (unsigned long long)per);

	/* 3. close */
	CHECK_OK(sc_send(m2t[1], 1));
	RECV(t2m[0]);
	WAIT_U64(sc_dev_path(KEY, "holders"), 0);
	sc_log("3. closed: holders 0, memory.current %llu",
	       (unsigned long long)memcur());
	CHECK_OK(sc_send(m2t[1], 1));
	CHECK_CHILD_OK(pid);
}

TEST_HARNESS_MAIN

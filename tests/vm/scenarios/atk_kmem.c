// SPDX-License-Identifier: GPL-2.0
/*
 * atk_kmem: a tenant cannot grow kernel memory without limit, and what it
 * makes counts in its own memory cgroup.
 *
 * Tenant T (uid 65534) in /atk-km, memory.max = 16M, no holders_max set
 * (the module-wide default, 1024, applies):
 *  1. T registers holders on one file until refused: exactly 1024, then
 *     EMFILE; on a second file: EMFILE at once (the limit is the
 *     cgroup's, not the file's).
 *  2. /atk-km's memory.current grew by at least 128 bytes per holder made
 *     (the holders are allocated with GFP_KERNEL_ACCOUNT).
 *  3. Closing both files: holders 0.
 */
#include "scen.h"
#include "tenant.h"

#define KEY	"t-akm"
#define CG	"/atk-km"
#define LIMIT	1024

static int t2m[2], m2t[2];

static int tenant(void *arg)
{
	uint64_t id, n1 = 0, n2 = 0;
	long rc1, rc2;
	int fd1, fd2, efd;

	(void)arg;
	tn_tenant(CG);
	fd1 = sc_open();
	fd2 = sc_open();
	if (fd1 < 0 || fd2 < 0)
		FAIL("tenant: open: %s", sc_errname(-(fd1 < 0 ? fd1 : fd2)));
	efd = sc_eventfd();
	CHECK_OK(sc_send(t2m[1], 0));
	RECV(m2t[0]);
	while ((rc1 = sc_register(fd1, KEY, efd, 0, &id)) == 0 &&
	       n1 < 100000)
		n1++;
	CHECK_OK(sc_send(t2m[1], n1));
	CHECK_OK(sc_send(t2m[1], -rc1));
	RECV(m2t[0]);
	while ((rc2 = sc_register(fd2, KEY, efd, 0, &id)) == 0 &&
	       n2 < 100000)
		n2++;
	CHECK_OK(sc_send(t2m[1], n2));
	CHECK_OK(sc_send(t2m[1], -rc2));
	RECV(m2t[0]);
	close(fd1);
	close(fd2);
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

int main(int argc, char **argv)
{
	uint64_t n1, e1, n2, e2, m0, m1, m2, per;
	int had_memory;
	char ctl[256];
	pid_t pid;

	sc_init(argc, argv);
	tn_devnode_admin();
	if (sc_read(SC_CGROOT "/cgroup.controllers", ctl, sizeof(ctl)) < 0 ||
	    !strstr(ctl, "memory"))
		SKIP("no memory controller in cgroup2");
	CHECK(sc_read(SC_CGROOT "/cgroup.subtree_control", ctl,
		      sizeof(ctl)) >= 0);
	had_memory = strstr(ctl, "memory") != NULL;
	if (!had_memory)
		CHECK_OK(sc_write(SC_CGROOT "/cgroup.subtree_control",
				  "+memory"));
	CHECK_OK(sc_dev_register(KEY, "100M"));
	TN_DEV_OPEN(KEY);
	CHECK_OK(sc_cg_create(CG));
	CHECK_OK(sc_write(sc_cg_path(CG, "memory.max"), "16M"));
	CHECK_OK(sc_set_budget(KEY, CG " max=100M"));
	CHECK(pipe(t2m) == 0 && pipe(m2t) == 0);

	pid = sc_spawn(tenant, NULL);
	RECV(t2m[0]);
	usleep(100 * 1000);
	m0 = memcur();
	CHECK_OK(sc_send(m2t[1], 1));
	n1 = RECV(t2m[0]);
	e1 = RECV(t2m[0]);
	m1 = memcur();
	CHECK_OK(sc_send(m2t[1], 1));
	n2 = RECV(t2m[0]);
	e2 = RECV(t2m[0]);
	per = n1 ? (m1 > m0 ? (m1 - m0) / n1 : 0) : 0;
	sc_log("file 1: %llu holders then %s; file 2: %llu then %s; "
	       "memory.current %llu -> %llu (%llu bytes per holder)",
	       (unsigned long long)n1, sc_errname((int)e1),
	       (unsigned long long)n2, sc_errname((int)e2),
	       (unsigned long long)m0, (unsigned long long)m1,
	       (unsigned long long)per);
	if (n1 != LIMIT || e1 != EMFILE)
		FAIL("one file: %llu holders then %s (expected %d, then "
		     "EMFILE: holders_max's default)", (unsigned long long)n1,
		     sc_errname((int)e1), LIMIT);
	if (n2 != 0 || e2 != EMFILE)
		FAIL("a second file in the same cgroup: %llu more holders "
		     "then %s (expected none: EMFILE)",
		     (unsigned long long)n2, sc_errname((int)e2));
	CHECK_EQ(DEV_U64(KEY, "holders"), LIMIT);
	if (per < 128)
		FAIL("memory.current of the tenant's cgroup grew by %llu "
		     "bytes for %llu holders (%llu each): their kernel memory "
		     "is not charged to it", (unsigned long long)(m1 - m0),
		     (unsigned long long)n1, (unsigned long long)per);
	CHECK_OK(sc_send(m2t[1], 1));
	RECV(t2m[0]);
	WAIT_U64(sc_dev_path(KEY, "holders"), 0);
	usleep(200 * 1000);
	m2 = memcur();
	sc_log("closed: memory.current %llu", (unsigned long long)m2);
	if (m2 > m0 + (m1 - m0) / 2)
		sc_log("NOTE: memory.current did not come down by half "
		       "(slab pages are freed lazily)");
	CHECK_OK(sc_send(m2t[1], 1));
	CHECK_CHILD_OK(pid);
	CHECK_OK(sc_dev_unregister(KEY));
	CHECK_OK(sc_cg_remove(CG));
	if (!had_memory)
		sc_write(SC_CGROOT "/cgroup.subtree_control", "-memory");
	PASS();
}

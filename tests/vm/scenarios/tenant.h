/* SPDX-License-Identifier: GPL-2.0 */
/*
 * tenant.h - helpers for the issue-10 scenarios (atk_*, race_*, fuzz_*)
 * and benches: a node's admin setup (the /dev/nxquota group, a device's
 * default_max and limits), unprivileged tenants (uid 65534 in their own
 * cgroup, optionally in the nxquota group), registration with a device
 * node fd, and scen.h's peers started as tenants.
 *
 * Include after scen.h.  The names of the trust rules (NXQ_HOLDER_DEVFD,
 * devfd, default_max, holders_max=, ...) are the ones fixed in the
 * issue-10 contract; where the ABI header does not have them yet the
 * helpers say so (-ENOSYS) and the scenario fails on it.
 */
#ifndef NXQ_TESTS_VM_TENANT_H
#define NXQ_TESTS_VM_TENANT_H

#include <pthread.h>
#include <stddef.h>
#include <sys/syscall.h>
#include <sys/sysmacros.h>
#include <sys/time.h>
#include <linux/capability.h>

/* The group /dev/nxquota is given to, as the udev rule does ("nxquota"). */
#define TN_GID		990
#define TN_UID		65534

/* An env knob (passed into the VM through /etc/nxq.conf): a number. */
static SC_UNUSED uint64_t tn_knob(const char *name, uint64_t dflt)
{
	const char *s = getenv(name);
	char *end;
	unsigned long long v;

	if (!s || !*s)
		return dflt;
	v = strtoull(s, &end, 10);
	return *end ? dflt : v;
}

/* ---- the admin side ---------------------------------------------------- */

static struct stat tn_devnode_saved;
static int tn_devnode_changed;

static void tn_devnode_restore(void)
{
	if (!tn_devnode_changed || getpid() != sc_main_pid)
		return;
	if (chown(SC_DEVNODE, tn_devnode_saved.st_uid,
		  tn_devnode_saved.st_gid) < 0 ||
	    chmod(SC_DEVNODE, tn_devnode_saved.st_mode & 07777) < 0)
		sc_log("NOTE: could not restore %s: %s", SC_DEVNODE,
		       sc_errname(errno));
	tn_devnode_changed = 0;
}

/*
 * What a node's admin (the udev rule) does: /dev/nxquota root:nxquota
 * 0660.  Restored when the scenario exits.
 */
static SC_UNUSED void tn_devnode_admin(void)
{
	if (stat(SC_DEVNODE, &tn_devnode_saved) < 0)
		FAIL("stat %s: %s", SC_DEVNODE, sc_errname(errno));
	tn_devnode_changed = 1;
	atexit(tn_devnode_restore);
	if (chown(SC_DEVNODE, 0, TN_GID) < 0 || chmod(SC_DEVNODE, 0660) < 0)
		FAIL("chown/chmod %s: %s", SC_DEVNODE, sc_errname(errno));
}

/* "KEY CAPACITY [MAJOR:MINOR]" to devices/register, tracked. */
static SC_UNUSED int tn_dev_register(const char *key, const char *cap,
				     const char *devt)
{
	int rc;

	if (!devt)
		return sc_dev_register(key, cap);
	rc = sc_writef(SC_DEVICES "/register", "%s %s %s", key, cap, devt);
	if (!rc)
		sc_track_key(key);
	return rc;
}

/*
 * A device whose cgroups without a budget may charge up to its capacity
 * (default_max "max": the operator's choice).  A module without
 * default_max (ABI 1) is unlimited by default: nothing to write.
 */
static SC_UNUSED void tn_dev_open_default_at(const char *file, int line,
					     const char *key)
{
	int rc = sc_write(sc_dev_path(key, "default_max"), "max");

	if (rc && rc != -ENOENT)
		sc_fail_at(file, line, "write max to %s: %s",
			   sc_dev_path(key, "default_max"), sc_errname(-rc));
}
#define TN_DEV_OPEN(key) tn_dev_open_default_at(__FILE__, __LINE__, key)

/*
 * Set limits (holders_max=, waiters_max=, priority_max=, wait_max_ms=) on
 * a cgroup: "PATH k=v ...".  A module of ABI 1 has none: noted, not
 * fatal, so that the attack behind can still be shown on it.
 */
static SC_UNUSED void tn_limits_at(const char *file, int line,
				   const char *key, const char *spec)
{
	uint64_t abi = 0;
	int rc = sc_write(sc_dev_path(key, "set_budget"), spec);

	if (!rc)
		return;
	sc_read_u64(SC_SYSFS "/abi_version", &abi);
	if (rc == -EINVAL && abi < 2) {
		sc_log("NOTE: module ABI %llu has no per-cgroup limits "
		       "(\"%s\" refused); going on without",
		       (unsigned long long)abi, spec);
		return;
	}
	sc_fail_at(file, line, "set_budget \"%s\": %s", spec,
		   sc_errname(-rc));
}
#define TN_LIMITS(key, spec) tn_limits_at(__FILE__, __LINE__, key, spec)

/* Set a device's ticket_timeout_ms (the floor of every ticket deadline). */
#define TN_FLOOR_MS(key, ms) \
	CHECK_OK(sc_writef(sc_dev_path(key, "ticket_timeout_ms"), "%u", \
			   (unsigned int)(ms)))

/* ---- tenants ------------------------------------------------------------ */

/*
 * Become a tenant: uid/gid 65534, no capabilities; supplementary group
 * TN_GID (may open /dev/nxquota) when in_group, and extra_gid if > 0.
 */
static SC_UNUSED void tn_drop(int in_group, gid_t extra_gid)
{
	gid_t g[2];
	int n = 0;
	char buf[4096], *p;

	if (in_group)
		g[n++] = TN_GID;
	if (extra_gid > 0)
		g[n++] = extra_gid;
	if (setgroups(n, g) < 0 || setresgid(TN_UID, TN_UID, TN_UID) < 0 ||
	    setresuid(TN_UID, TN_UID, TN_UID) < 0)
		FAIL("drop privileges: %s", sc_errname(errno));
	prctl(PR_SET_PDEATHSIG, SIGKILL);	/* cleared by setuid */
	if (sc_read("/proc/self/status", buf, sizeof(buf)) < 0)
		FAIL("read /proc/self/status: %s", sc_errname(errno));
	p = strstr(buf, "CapEff:");
	if (!p || strncmp(p + 7, "\t0000000000000000", 17))
		FAIL("capabilities left after setuid: %.30s", p ? p : "?");
}

/* Enter cg (as root), then become a tenant in the nxquota group. */
static SC_UNUSED void tn_tenant(const char *cg)
{
	if (cg)
		CHECK_OK(sc_cg_enter(cg));
	tn_drop(1, 0);
}

/* Does the ABI header have the devfd registration of ABI 2? */
#ifdef NXQ_HOLDER_DEVFD
#define TN_HAVE_DEVFD 1
#else
#define TN_HAVE_DEVFD 0
#endif

/* scen.h's registration with flags and a devfd (-ENOSYS on ABI 1). */
#define TN_NO_DEVFD	SC_NO_DEVFD
#define tn_register_raw	sc_register_ex

static SC_UNUSED long tn_register_devfd(int fd, const char *key, int efd,
					unsigned int prio, int devfd,
					uint64_t *id)
{
#if TN_HAVE_DEVFD
	return tn_register_raw(fd, key, efd, prio, NXQ_HOLDER_DEVFD, devfd,
			       id);
#else
	(void)fd; (void)key; (void)efd; (void)prio; (void)devfd; (void)id;
	return -ENOSYS;
#endif
}

/* The devfd registration must exist in the ABI (else FAIL: ABI 1). */
#define TN_NEED_DEVFD() do {						\
	if (!TN_HAVE_DEVFD)						\
		FAIL("the ABI has no device-node proof of access "	\
		     "(NXQ_HOLDER_DEVFD, nxq_holder_reg.devfd): "	\
		     "NXQ_ABI_VERSION %d", NXQ_ABI_VERSION);		\
} while (0)

/* ---- tenant peers --------------------------------------------------------- */

/* scen.h's serve modes, by the names the issue-10 scenarios use. */
#define TN_SERVE_DELAY		SC_SERVE_DELAY
#define TN_SERVE_PARTIAL	SC_SERVE_PARTIAL
#define TN_SERVE_IGNORE		SC_SERVE_IGNORE
#define TN_PEER_SERVE		SC_PEER_SERVE

static SC_UNUSED void tn_become_tenant(void)
{
	tn_drop(1, 0);
}

/*
 * scen.h's peer, as a tenant (uid 65534, nxquota group) if tenant: in
 * cgroup cg with one holder on key (priority prio, an eventfd if
 * with_efd).  FAILs if it cannot register.
 */
static SC_UNUSED void tn_peer_start(struct sc_peer *p, const char *name,
				    const char *cg, const char *key,
				    unsigned int prio, int with_efd,
				    int tenant)
{
	sc_peer_start_as(p, name, cg, key, prio, with_efd,
			 tenant ? tn_become_tenant : NULL);
}

/* Run fn(arg) in a child; it must exit 0. */
#define TN_RUN(fn, arg) do {						\
	pid_t _p = sc_spawn(fn, arg);					\
	CHECK_CHILD_OK(_p);						\
} while (0)

/* The peer's process must still be alive (not killed by the module). */
#define TN_ALIVE(p) do {						\
	int _st;							\
	pid_t _w = waitpid((p)->pid, &_st, WNOHANG);			\
	if (_w == (p)->pid)						\
		FAIL("peer %s died: %s %d", (p)->name,			\
		     WIFSIGNALED(_st) ? "signal" : "exit status",	\
		     WIFSIGNALED(_st) ? WTERMSIG(_st) :			\
		     WEXITSTATUS(_st));					\
	if (kill((p)->pid, 0) < 0)					\
		FAIL("peer %s is gone: %s", (p)->name,			\
		     sc_errname(errno));				\
} while (0)

/*
 * Is pid still running (not exited, not a zombie)?  A process whose
 * parent dies goes to the harness's main process, the subreaper, which
 * reaps it only after the test: kill(pid, 0) would still find it.
 */
static SC_UNUSED int tn_running(pid_t pid)
{
	char path[64], st[512], *p;
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", (int)pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	r = read(fd, st, sizeof(st) - 1);
	close(fd);
	if (r <= 0)
		return 0;
	st[r] = 0;
	p = strrchr(st, ')');
	return p && p[1] == ' ' && p[2] != 'Z' && p[2] != 'X';
}

/* The charge a peer's holder has, by STATUS; FAIL if it cannot tell. */
#define TN_PEER_CHARGE(p) (PEER_OK(p, SC_PEER_STATUS, 0, 0).v[0])

/* A node's number, or 0 when the node is gone. */
#define TN_NODE_U64(key, cgid, attr) \
	(sc_node_exists(key, cgid) ? NODE_U64(key, cgid, attr) : 0)

/* ---- capabilities without libcap ------------------------------------- */

/* Keep only the capabilities in mask (bits CAP_*), as uid 65534. */
static SC_UNUSED void tn_drop_keep_caps(uint64_t mask)
{
	struct __user_cap_header_struct h = {
		.version = _LINUX_CAPABILITY_VERSION_3 };
	struct __user_cap_data_struct d[2];

	if (prctl(PR_SET_KEEPCAPS, 1) < 0)
		FAIL("PR_SET_KEEPCAPS: %s", sc_errname(errno));
	if (setgroups(0, NULL) < 0 || setresgid(TN_UID, TN_UID, TN_UID) < 0 ||
	    setresuid(TN_UID, TN_UID, TN_UID) < 0)
		FAIL("setuid: %s", sc_errname(errno));
	memset(d, 0, sizeof(d));
	d[0].effective = d[0].permitted = (uint32_t)mask;
	d[1].effective = d[1].permitted = (uint32_t)(mask >> 32);
	if (syscall(SYS_capset, &h, d) < 0)
		FAIL("capset: %s", sc_errname(errno));
	prctl(PR_SET_PDEATHSIG, SIGKILL);
}

/* Median of n u64 (sorts v). */
static int tn_cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

static SC_UNUSED uint64_t tn_median(uint64_t *v, int n)
{
	qsort(v, n, sizeof(*v), tn_cmp_u64);
	return v[n / 2];
}

/* ---- an attacker's queue of waiters (atk_stall, atk_waiters) ---- */

/*
 * Shared (sc_shared) between the scenario and the attacker it spawns with
 * sc_spawn(tn_waiters_attacker, ws): the attacker, a tenant of cg, fills
 * 10 MiB (the max the scenario gives cg) on key, then n threads, each
 * with a holder of its own, wait for 1 MiB more (120 s).  The threads
 * count how many started and how their charges ended.
 */
struct tn_waiters {
	const char *key, *cg;
	int n;
	int started, eagain, other;
};

struct tn_waiter {
	struct tn_waiters *ws;
	int fd;
	uint64_t id;
};

static void *tn_wait_thread(void *arg)
{
	struct tn_waiter *w = arg;
	long rc;

	__atomic_add_fetch(&w->ws->started, 1, __ATOMIC_SEQ_CST);
	rc = sc_charge_wait(w->fd, w->id, SC_MIB, 120ULL * 1000000000, NULL);
	__atomic_add_fetch(rc == -EAGAIN ? &w->ws->eagain : &w->ws->other, 1,
			   __ATOMIC_SEQ_CST);
	return NULL;
}

/* The attacker: fills its max, then n threads wait; then sleeps. */
static SC_UNUSED int tn_waiters_attacker(void *arg)
{
	struct tn_waiters *ws = arg;
	struct tn_waiter *w = calloc(ws->n, sizeof(*w));
	int fd, efd, i;
	pthread_attr_t at;
	pthread_t th;
	uint64_t fill;

	CHECK(w);
	tn_tenant(ws->cg);
	fd = sc_open();
	if (fd < 0)
		FAIL("attacker: open: %s", sc_errname(-fd));
	efd = sc_eventfd();
	CHECK_OK(sc_register(fd, ws->key, efd, 0, &fill));
	CHECK_OK(sc_charge(fd, fill, 10 * SC_MIB, NULL));
	pthread_attr_init(&at);
	pthread_attr_setstacksize(&at, 64 * 1024);
	for (i = 0; i < ws->n; i++) {
		w[i].ws = ws;
		w[i].fd = fd;
		CHECK_OK(sc_register(fd, ws->key, efd, 0, &w[i].id));
		if (pthread_create(&th, &at, tn_wait_thread, &w[i]))
			FAIL("pthread_create %d: %s", i, sc_errname(errno));
	}
	for (;;)
		pause();
	return 0;
}

/* SIGKILL a spawned process and reap it. */
static SC_UNUSED void tn_kill(pid_t pid)
{
	kill(pid, SIGKILL);
	CHECK_EQ(sc_wait(pid), 128 + SIGKILL);
}

#endif /* NXQ_TESTS_VM_TENANT_H */

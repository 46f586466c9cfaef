/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the suites of daemon/tests that run the daemon as the authority
 * share: cgroups the case makes and enters (root and a writable cgroup2
 * hierarchy, else the case is skipped), a state file written by the case
 * (state.c's format), and the requests of <linux/nxquota.h> over
 * <linux/nxquotad.h>.
 */
#ifndef _NXQD_CLIENT_UTIL_H
#define _NXQD_CLIENT_UTIL_H

#include <poll.h>
#include <pthread.h>
#include <sys/eventfd.h>
#include <time.h>

#include "client_harness.h"

#define KEY	"host0"
/* The bound on connections per process the case sets (-P). */
#define NXQD_CONN_PER_PROC_T	16

struct tcg {
	char rel[96];		/* "/nxqd-test.PID.N" */
	char dir[512];		/* its directory */
	char orig[1024];	/* cgroup.procs of where we were */
};

static inline bool cg_root(char *root, size_t len)
{
	char line[4096], *f[10], *p;
	bool found = false;
	FILE *mi = fopen("/proc/self/mountinfo", "re");
	int n, i;

	if (!mi)
		return false;
	while (!found && fgets(line, sizeof(line), mi)) {
		n = 0;
		for (p = strtok(line, "\n "); p && n < 10; p = strtok(NULL, "\n "))
			f[n++] = p;
		for (i = 6; i + 1 < n; i++) {
			if (!strcmp(f[i], "-")) {
				if (!strcmp(f[i + 1], "cgroup2")) {
					snprintf(root, len, "%s", f[4]);
					found = true;
				}
				break;
			}
		}
	}
	fclose(mi);
	return found;
}

static inline int write_str(const char *file, const char *s)
{
	int fd = open(file, O_WRONLY | O_CLOEXEC), err = 0;

	if (fd < 0)
		return -errno;
	if (write(fd, s, strlen(s)) != (ssize_t)strlen(s))
		err = -errno;
	close(fd);
	return err;
}

/* Make a cgroup and move this process into it; skip without root. */
static inline void cg_enter(struct kunit *test, struct tcg *cg)
{
	char root[256], line[600], pid[32];
	FILE *f;

	if (geteuid() || !cg_root(root, sizeof(root)))
		kunit_skip(test, "needs root and a cgroup2 mount");
	/* unique across the suites of one binary */
	snprintf(cg->rel, sizeof(cg->rel), "/nxqd-test.%d.%llx", (int)getpid(),
		 (unsigned long long)ktime_get_ns());
	snprintf(cg->dir, sizeof(cg->dir), "%s%s", root, cg->rel);
	cg->orig[0] = '\0';
	f = fopen("/proc/self/cgroup", "re");
	KUNIT_ASSERT_NOT_NULL(test, f);
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, "0::", 3)) {
			line[strcspn(line, "\n")] = '\0';
			snprintf(cg->orig, sizeof(cg->orig), "%s%s/cgroup.procs",
				 root, strcmp(line + 3, "/") ? line + 3 : "");
		}
	fclose(f);
	KUNIT_ASSERT_NE(test, cg->orig[0], '\0');
	if (mkdir(cg->dir, 0755))
		kunit_skip(test, "cannot make a cgroup in %s", root);
	snprintf(line, sizeof(line), "%s/cgroup.procs", cg->dir);
	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	KUNIT_ASSERT_EQ(test, write_str(line, pid), 0);
}

static inline void cg_leave(struct tcg *cg)
{
	char pid[32];

	snprintf(pid, sizeof(pid), "%d", (int)getpid());
	write_str(cg->orig, pid);
	rmdir(cg->dir);
}

/* The state file: device KEY of @cap bytes (@devt or "-"), @path at @max. */
static inline void write_state(struct kunit *test, struct daemon *d, u64 cap,
			const char *devt, const char *path, u64 max)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/state", d->dir);
	f = fopen(p, "we");
	KUNIT_ASSERT_NOT_NULL(test, f);
	fprintf(f, "nxquotad-state 1\n"
		"device " KEY " capacity=%llu devt=%s default_max=max ticket_timeout_ms=1000\n",
		(unsigned long long)cap, devt);
	/* no limit words: as a file written before the spec had them */
	if (path)
		fprintf(f, "budget " KEY " %s max=%llu min=0 kill_on_ignore=0\n",
			path, (unsigned long long)max);
	KUNIT_ASSERT_EQ(test, fclose(f), 0);
}

/* One more budget line in the state file. */
static inline void add_budget(struct kunit *test, struct daemon *d, const char *path,
		       u64 max)
{
	char p[128];
	FILE *f;

	snprintf(p, sizeof(p), "%s/state", d->dir);
	f = fopen(p, "ae");
	KUNIT_ASSERT_NOT_NULL(test, f);
	/* some limit words, in another order than nxquotad writes them */
	fprintf(f, "budget " KEY " %s max=%llu min=0 kill_on_ignore=0 wait_max_ms=- holders_max=-\n",
		path, (unsigned long long)max);
	KUNIT_ASSERT_EQ(test, fclose(f), 0);
}

/* A daemon with KEY of 1 MB and a max of @max on @cg. */
static inline void start_with(struct kunit *test, struct daemon *d, struct tcg *cg,
		       u64 max, const char *devt)
{
	prepare(test, d);
	write_state(test, d, 1000000, devt, cg ? cg->rel : NULL, max);
	d->pid = spawn(test, d);
	wait_up(test, d);
}

/* ---- requests ---- */

/* Register on @fd with eventfd @efd (-1: none) and @devfd if >= 0. */
static inline int reg_fds(int fd, int efd, int devfd, u64 *id, const int *fds,
		   int nfds)
{
	struct nxq_holder_reg r = {
		.size = sizeof(r), .eventfd = efd, .priority = 0,
	};
	size_t rlen;
	int err;

	strscpy(r.device, KEY, sizeof(r.device));
	if (devfd >= 0) {
		r.flags = NXQ_HOLDER_DEVFD;
		r.devfd = devfd;
	}
	err = call_fds(fd, NXQ_IOC_HOLDER_REGISTER, 0, &r, sizeof(r), &r,
		       &rlen, fds, nfds);
	if (!err && id)
		*id = r.holder_id;
	return err;
}

static inline int reg(int fd, int efd, u64 *id)
{
	return reg_fds(fd, efd, -1, id, &efd, efd >= 0);
}

static inline int charge(int fd, u64 id, u64 bytes, u32 flags, u64 timeout,
		  u64 *charged)
{
	struct nxq_charge c = {
		.size = sizeof(c), .flags = flags, .holder_id = id,
		.bytes = bytes, .timeout_ns = timeout,
	};
	size_t rlen;
	int err;

	err = call(fd, NXQ_IOC_CHARGE, 0, &c, sizeof(c), &c, &rlen);
	if (!err && charged)
		*charged = c.charged;
	return err;
}

static inline int uncharge(int fd, u64 id, u64 bytes, u64 *charged)
{
	struct nxq_charge c = {
		.size = sizeof(c), .holder_id = id, .bytes = bytes,
	};
	size_t rlen;
	int err;

	err = call(fd, NXQ_IOC_UNCHARGE, 0, &c, sizeof(c), &c, &rlen);
	if (!err && charged)
		*charged = c.charged;
	return err;
}

static inline int status(int fd, u64 id, struct nxq_status *st)
{
	size_t rlen;

	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->holder_id = id;
	return call(fd, NXQ_IOC_STATUS, 0, st, sizeof(*st), st, &rlen);
}

static inline int unreg(int fd, u64 id)
{
	struct nxq_holder_id u = { .size = sizeof(u), .holder_id = id };
	size_t rlen;

	return call(fd, NXQ_IOC_HOLDER_UNREGISTER, 0, &u, sizeof(u), NULL,
		    &rlen);
}

/* device_used seen through holder @id, polled until it is @want (2 s). */
static inline u64 wait_used(int fd, u64 id, u64 want)
{
	struct nxq_status st;
	int i;

	for (i = 0; i < 200; i++) {
		if (status(fd, id, &st))
			return ~0ULL;
		if (st.device_used == want)
			break;
		usleep_range(10000, 11000);
	}
	return st.device_used;
}

static inline u64 now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000ULL + ts.tv_nsec / 1000000;
}

/* The start time of @pid (/proc/PID/stat field 22), as the record has it. */
static inline unsigned long long proc_start(pid_t pid)
{
	unsigned long long start = 0;
	char p[64], buf[1024], *s;
	FILE *f;
	int i;

	snprintf(p, sizeof(p), "/proc/%d/stat", (int)pid);
	f = fopen(p, "re");
	if (!f)
		return 0;
	s = fgets(buf, sizeof(buf), f);
	fclose(f);
	s = s ? strrchr(buf, ')') : NULL;
	/* the space after ")" starts field 3; field 22 is 19 spaces on */
	for (i = 0; s && i < 20; i++)
		s = strchr(s + 1, ' ');
	if (s)
		sscanf(s + 1, "%llu", &start);
	return start;
}

/* Holders of @pid in the daemon's record (@d's record file). */
static inline int listed(struct daemon *d, pid_t pid)
{
	struct { unsigned long long id, charge; } h[256];
	unsigned long long start, id, charge;
	char p[128], line[256], dev[80];
	int n = 0, i, k, got;
	FILE *f;

	/* a log: a later line for a holder replaces it, a charge of 0 ends it */
	snprintf(p, sizeof(p), "%s/record", d->dir);
	f = fopen(p, "re");
	if (!f)
		return errno == ENOENT ? 0 : -1;
	while (fgets(line, sizeof(line), f)) {
		if (sscanf(line, "holder %d %llu %llu %79s %llu", &got, &start,
			   &id, dev, &charge) != 5 || got != pid)
			continue;
		for (i = 0; i < n && h[i].id != id; i++)
			;
		if (i == n && n < 256)
			h[n++].id = id;
		if (i < n)
			h[i].charge = charge;
	}
	fclose(f);
	for (i = 0, k = 0; i < n; i++)
		k += !!h[i].charge;
	return k;
}

/*
 * listed(), polled until it is @want (2 s).
 */
static inline int listed_wait(struct daemon *d, pid_t pid, int want)
{
	int i, n = -1;

	for (i = 0; i < 200; i++) {
		n = listed(d, pid);
		if (n == want)
			break;
		usleep_range(10000, 11000);
	}
	return n;
}

/* count_fds() polled until it is @want (2 s): holders are freed after
 * an RCU grace period, their eventfd with them.
 */
static inline int fds_wait(pid_t pid, int want)
{
	int i, n = -1;

	for (i = 0; i < 200; i++) {
		n = count_fds(pid);
		if (n == want)
			break;
		usleep_range(10000, 11000);
	}
	return n;
}

/* ---- version 1: the restore protocol (<linux/nxquotad.h>) ---- */

/* Register at version 1 with @flags; @old_id is the id to restore. */
static inline int reg_v1(int fd, int efd, __u16 flags, u64 old_id, u64 *id)
{
	struct nxq_holder_reg r = {
		.size = sizeof(r), .eventfd = efd, .holder_id = old_id,
	};
	size_t rlen;
	int err;

	strscpy(r.device, KEY, sizeof(r.device));
	err = call_fds(fd, NXQ_IOC_HOLDER_REGISTER, req_vf(1, flags), &r,
		       sizeof(r), &r, &rlen, &efd, efd >= 0);
	if (!err && id)
		*id = r.holder_id;
	return err;
}

static inline int charge_v1(int fd, u64 id, u64 bytes, __u16 flags,
			    u32 cflags, u64 timeout, u64 *charged)
{
	struct nxq_charge c = {
		.size = sizeof(c), .flags = cflags, .holder_id = id,
		.bytes = bytes, .timeout_ns = timeout,
	};
	size_t rlen;
	int err;

	err = call(fd, NXQ_IOC_CHARGE, req_vf(1, flags), &c, sizeof(c), &c,
		   &rlen);
	if (!err && charged)
		*charged = c.charged;
	return err;
}

/* NXQD_REQ_RESTORED: this process restored all it will. */
static inline int restored_v1(int fd)
{
	struct nxq_version v = { .size = sizeof(v) };
	size_t rlen;

	return call(fd, NXQ_IOC_VERSION, req_vf(1, NXQD_REQ_RESTORED), &v,
		    sizeof(v), NULL, &rlen);
}

/* Send a request without waiting for its reply (it is read later). */
static inline int send_req(int fd, __u32 cmd, __u32 reserved,
			   const void *arg, size_t len)
{
	unsigned char msg[sizeof(struct nxqd_req) + 256];
	struct nxqd_req req = { .cmd = cmd, .reserved = reserved };

	memcpy(msg, &req, sizeof(req));
	memcpy(msg + sizeof(req), arg, len);
	return send(fd, msg, sizeof(req) + len, MSG_NOSIGNAL) ==
	       (ssize_t)(sizeof(req) + len) ? 0 : -errno;
}

/* The reply to a request sent with send_req(): its err; 1 if none in @ms. */
static inline int recv_rep(int fd, int ms, void *out, size_t len)
{
	unsigned char rep[sizeof(struct nxqd_rep) + 256];
	struct pollfd p = { .fd = fd, .events = POLLIN };
	struct nxqd_rep r;
	ssize_t n;

	if (poll(&p, 1, ms) != 1)
		return 1;
	n = recv(fd, rep, sizeof(rep), 0);
	if (n < (ssize_t)sizeof(r))
		return 1;
	memcpy(&r, rep, sizeof(r));
	if (out)
		memcpy(out, rep + sizeof(r), min_t(size_t, len, n - sizeof(r)));
	return r.err;
}

/*
 * Set @path's max on KEY through the control socket: the ack's error, its
 * extack message into @msg (or NULL).
 */
static inline int ctl_set_max(struct daemon *d, const char *path, u64 max,
		       char *msg, size_t len)
{
	unsigned char attrs[512];
	size_t off = 0;
	int fd = dial(d->ctl, SOCK_SEQPACKET), err;

	if (fd < 0)
		return fd;
	off = nl_put(attrs, off, NXQUOTA_A_BUDGET_DEVICE, KEY, sizeof(KEY));
	off = nl_put(attrs, off, NXQUOTA_A_BUDGET_CGROUP_PATH, path,
		     strlen(path) + 1);
	off = nl_put(attrs, off, NXQUOTA_A_BUDGET_MAX, &max, sizeof(max));
	err = nl_call(fd, NXQUOTA_CMD_BUDGET_SET, 0, attrs, off, NULL, NULL,
		      msg, len);
	close(fd);
	return err;
}

#endif /* _NXQD_CLIENT_UTIL_H */

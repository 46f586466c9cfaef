// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's client processes.  A process is who the kernel says made a
 * connection: SO_PEERCRED's pid, pinned by the connection's SO_PEERPIDFD
 * (Linux 6.5) or, before, by pidfd_open() of that pid checked against the
 * process's start time (it must have started before the connection was
 * accepted, so a reused pid is not taken for the connector).  One struct
 * nxqd_proc per process, in a table by pid, with a reference from each of
 * its connections and holders; its pidfd is in an epoll set of its own
 * (nxqd_proc_ep), which the loop watches, and when the process exits it
 * is marked dead, dropped from the table and the exit hook ends its
 * holders (client.c).  nxqd_proc_reap() handles, at once, the exits that
 * are ready (O(exited)): before the control socket reads the ledger and
 * before a charge is refused.  Its cgroup is read through the
 * pidfd (PIDFD_GET_INFO, Linux 6.13) or from /proc/PID/cgroup.
 *
 * The control socket pins its connectors the same way (nxqd_proc_pin(),
 * no table) and reads their capability on each message through the pin
 * (nxqd_proc_admin()).
 *
 * Everything here runs on the loop thread.
 */
#include <linux/types.h>
#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <linux/nsfs.h>
#include <time.h>
#include <unistd.h>

#include "nxqd.h"

#ifndef SYS_pidfd_open
#define SYS_pidfd_open		434
#endif
#ifndef SYS_pidfd_send_signal
#define SYS_pidfd_send_signal	424
#endif

/* PIDFD_GET_INFO (Linux 6.13), its first version of struct pidfd_info. */
struct nxqd_pidfd_info {
	__u64 mask;
	__u64 cgroupid;
	__u32 pid, tgid, ppid, ruid, rgid, euid, egid, suid, sgid;
	__u32 fsuid, fsgid;
	__s32 exit_code;
};
#define NXQD_PIDFD_GET_INFO	_IOWR(0xFF, 11, struct nxqd_pidfd_info)
#define NXQD_PIDFD_INFO_CGROUPID	(1ULL << 2)

#define NXQD_PROC_BUCKETS	1024

static struct nxqd_proc *nxqd_procs[NXQD_PROC_BUCKETS];
static void (*nxqd_proc_exit_hook)(struct nxqd_proc *p);
/* The listed processes' pidfds (data.ptr: the proc), watched on the loop. */
static struct nxqd_watch nxqd_proc_ep = { .fd = -1 };
static bool nxqd_no_pidfd_info;	/* the kernel has no PIDFD_GET_INFO */

static unsigned int nxqd_proc_bucket(pid_t pid)
{
	return (unsigned int)pid % NXQD_PROC_BUCKETS;
}

static void nxqd_proc_ep_ready(struct nxqd_watch *w, u32 revents)
{
	nxqd_proc_reap();
}

int nxqd_proc_init(void (*on_exit)(struct nxqd_proc *p))
{
	nxqd_proc_exit_hook = on_exit;
	if (nxqd_proc_ep.fd >= 0)
		return 0;
	nxqd_proc_ep.fd = epoll_create1(EPOLL_CLOEXEC);
	if (nxqd_proc_ep.fd < 0)
		return -errno;
	nxqd_proc_ep.events = EPOLLIN;
	nxqd_proc_ep.fn = nxqd_proc_ep_ready;
	return nxqd_watch_add(&nxqd_proc_ep);
}

/* Put the pidfd of @p in nxqd_proc_ep, or take it out. */
static int nxqd_proc_watch(struct nxqd_proc *p)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = p };

	if (epoll_ctl(nxqd_proc_ep.fd, EPOLL_CTL_ADD, p->pidfd, &ev))
		return -errno;
	p->watched = true;
	return 0;
}

static void nxqd_proc_unwatch(struct nxqd_proc *p)
{
	if (!p->watched)
		return;
	epoll_ctl(nxqd_proc_ep.fd, EPOLL_CTL_DEL, p->pidfd, NULL);
	p->watched = false;
}

u64 nxqd_proc_ticks(void)
{
	struct timespec ts;
	long hz = sysconf(_SC_CLK_TCK);

	clock_gettime(CLOCK_BOOTTIME, &ts);
	return (u64)ts.tv_sec * hz + (u64)ts.tv_nsec / (NSEC_PER_SEC / hz);
}

u64 nxqd_proc_start_time(pid_t pid)
{
	char file[64], buf[1024], *p;
	unsigned long long start;
	ssize_t n;
	int fd, i;

	snprintf(file, sizeof(file), "/proc/%d/stat", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	p = strrchr(buf, ')');	/* comm may hold blanks and ')' */
	if (!p)
		return 0;
	/* field 3 is after ") "; the start time is field 22 */
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start;
}

static bool nxqd_pidfd_exited(int pidfd)
{
	struct pollfd p = { .fd = pidfd, .events = POLLIN };

	return poll(&p, 1, 0) != 0;
}

int nxqd_proc_pidfd(pid_t pid, u64 start)
{
	int fd = syscall(SYS_pidfd_open, pid, 0);

	if (fd < 0)
		return -1;
	/* the pid is still the process started then, after the open */
	if (!start || nxqd_proc_start_time(pid) != start ||
	    nxqd_pidfd_exited(fd)) {
		close(fd);
		return -1;
	}
	return fd;
}

static void nxqd_proc_unhash(struct nxqd_proc *p)
{
	struct nxqd_proc **pp = &nxqd_procs[nxqd_proc_bucket(p->tgid)];

	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == p) {
			*pp = p->hnext;
			p->hnext = NULL;
			return;
		}
	}
}

static void nxqd_proc_free(void *arg)
{
	struct nxqd_proc *p = arg;

	close(p->pidfd);
	if (p->cgfd >= 0)
		close(p->cgfd);
	free(p->cgns_root);
	free(p);
}

void nxqd_proc_hold(struct nxqd_proc *p)
{
	p->refs++;
}

void nxqd_proc_put(struct nxqd_proc *p)
{
	if (--p->refs)
		return;
	if (!p->dead)
		nxqd_proc_unhash(p);
	nxqd_proc_unwatch(p);
	nxqd_loop_defer_free(p, nxqd_proc_free);
}

static void nxqd_proc_exited(struct nxqd_proc *p)
{
	if (p->dead)
		return;
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: pid %d exited\n", p->tgid);
	p->dead = true;
	nxqd_proc_unwatch(p);
	nxqd_proc_unhash(p);
	nxqd_proc_hold(p);
	if (nxqd_proc_exit_hook)
		nxqd_proc_exit_hook(p);
	nxqd_proc_put(p);
}

/*
 * nxqd_proc_reap() - handle every listed process that has exited, now
 *
 * A process's pidfd polls readable from its exit on (exit_notify()),
 * before its parent's wait() can return, but the loop may serve a request
 * that is ready at the same time first.  The control socket calls this
 * before it reads the ledger, so that a dump never shows a process its
 * parent has reaped as holding anything, and a charge before it is
 * refused, so that a worker respawned by a supervisor that reaped the
 * old one is not refused the old one's charge (the module ends the
 * holders in the exiting task).  O(exited): nxqd_proc_ep reports only
 * the pidfds that are readable; a process whose pidfd stays readable is
 * unwatched by its handling, so it is not reported twice.
 *
 * Return: how many exits were handled.
 */
unsigned int nxqd_proc_reap(void)
{
	struct epoll_event ev[64];
	unsigned int seen = 0;
	int n, i;

	do {
		n = epoll_wait(nxqd_proc_ep.fd, ev, ARRAY_SIZE(ev), 0);
		for (i = 0; i < n; i++) {
			struct nxqd_proc *p = ev[i].data.ptr;

			/* unwatched by an earlier one: freed after the turn */
			if (!p->watched)
				continue;
			nxqd_proc_exited(p);
			seen++;
		}
	} while (n == (int)ARRAY_SIZE(ev));
	return seen;
}

int nxqd_proc_pin(pid_t pid, int pidfd, u64 ticks, u64 *start)
{
	if (pidfd < 0) {
		pidfd = syscall(SYS_pidfd_open, pid, 0);
		if (pidfd < 0)
			return errno == ESRCH ? -ESRCH : -errno;
	}
	/*
	 * The process started no later than the connection was accepted,
	 * and is still the pidfd's once its start time is read.
	 */
	*start = nxqd_proc_start_time(pid);
	if (!*start || *start > ticks || nxqd_pidfd_exited(pidfd)) {
		close(pidfd);
		return -ESRCH;
	}
	return pidfd;
}

bool nxqd_proc_alive(int pidfd)
{
	return pidfd >= 0 && !nxqd_pidfd_exited(pidfd);
}

struct nxqd_proc *nxqd_proc_get(pid_t pid, int pidfd, u64 ticks)
{
	unsigned int b = nxqd_proc_bucket(pid);
	struct nxqd_proc *p;
	u64 start;
	int err;

	pidfd = nxqd_proc_pin(pid, pidfd, ticks, &start);
	if (pidfd < 0)
		return ERR_PTR(pidfd);
	for (p = nxqd_procs[b]; p; p = p->hnext) {
		if (p->tgid == pid && p->start == start) {
			close(pidfd);
			p->refs++;
			return p;
		}
	}
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(pidfd);
		return ERR_PTR(-ENOMEM);
	}
	p->tgid = pid;
	p->owner.nr = pid;
	p->start = start;
	p->pidfd = pidfd;
	p->cgfd = -1;
	p->refs = 1;
	INIT_LIST_HEAD(&p->holders);
	{
		char file[64];

		snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)pid);
		p->cgfd = open(file, O_RDONLY | O_CLOEXEC);
	}
	err = p->cgfd < 0 ? -ESRCH : nxqd_proc_watch(p);
	if (err || nxqd_pidfd_exited(pidfd)) {
		if (!err)
			nxqd_proc_unwatch(p);
		nxqd_proc_free(p);
		return ERR_PTR(err ? err : -ESRCH);
	}
	p->hnext = nxqd_procs[b];
	nxqd_procs[b] = p;
	return p;
}

int nxqd_proc_cgroup_id(struct nxqd_proc *p, u64 *id)
{
	struct nxqd_pidfd_info info = { .mask = NXQD_PIDFD_INFO_CGROUPID };

	if (nxqd_no_pidfd_info)
		return -EOPNOTSUPP;
	if (ioctl(p->pidfd, NXQD_PIDFD_GET_INFO, &info)) {
		if (errno == ESRCH)
			return -ESRCH;
		nxqd_no_pidfd_info = true;	/* ENOTTY, EINVAL: before 6.13 */
		return -EOPNOTSUPP;
	}
	if (!(info.mask & NXQD_PIDFD_INFO_CGROUPID)) {
		nxqd_no_pidfd_info = true;
		return -EOPNOTSUPP;
	}
	*id = info.cgroupid;
	return 0;
}

int nxqd_proc_cgroup_path(struct nxqd_proc *p, char *buf, size_t len)
{
	return nxqd_cgroup_read(p->cgfd, buf, len);
}

/*
 * @p's cgroup as its own cgroup namespace shows it: /proc/PID/cgroup is
 * written relative to the reader's namespace, so the loop thread reads it
 * from inside @p's (setns() through the pidfd) and comes back at once.
 */
static int nxqd_proc_cgns_view(struct nxqd_proc *p, char *view, size_t len)
{
	static int self = -1;
	int err;

	if (self < 0) {
		self = open("/proc/thread-self/ns/cgroup", O_RDONLY | O_CLOEXEC);
		if (self < 0)
			return -errno;
	}
	if (setns(p->pidfd, CLONE_NEWCGROUP))
		return -errno;
	err = nxqd_cgroup_read(p->cgfd, view, len);
	/* the loop must never go on in a tenant's namespace */
	if (setns(self, CLONE_NEWCGROUP))
		abort();
	return err;
}

int nxqd_proc_cgns_root(struct nxqd_proc *p, const char **root)
{
	char file[64], full[PATH_MAX], again[PATH_MAX], view[PATH_MAX];
	static u64 self_ino;
	struct stat st;
	size_t fl, vl;
	int err;

	if (!self_ino) {
		if (stat("/proc/thread-self/ns/cgroup", &st))
			return -errno;
		self_ino = st.st_ino;
	}
	snprintf(file, sizeof(file), "/proc/%d/ns/cgroup", (int)p->tgid);
	if (stat(file, &st) || !nxqd_proc_alive(p->pidfd))
		return -ESRCH;
	if (p->cgns_root && p->cgns_ino == st.st_ino)
		goto out;
	free(p->cgns_root);
	p->cgns_root = NULL;
	if (st.st_ino == self_ino) {
		p->cgns_root = strdup("/");
		goto done;
	}
	err = nxqd_proc_cgroup_path(p, full, sizeof(full));
	if (!err)
		err = nxqd_proc_cgns_view(p, view, sizeof(view));
	if (!err)
		err = nxqd_proc_cgroup_path(p, again, sizeof(again));
	if (err)
		return err;
	if (strcmp(full, again))
		return -EAGAIN;
	fl = strlen(full);
	vl = strlen(view);
	/* its view is a tail of ours, or it is outside its own root ("/..") */
	if (!strcmp(view, "/"))
		p->cgns_root = strdup(full);
	else if (vl < fl && !strcmp(full + fl - vl, view))
		p->cgns_root = strndup(full, fl - vl);
	else if (vl == fl && !strcmp(full, view))
		p->cgns_root = strdup("/");
	else
		return -ENOENT;
done:
	if (!p->cgns_root)
		return -ENOMEM;
	p->cgns_ino = st.st_ino;
out:
	*root = p->cgns_root;
	return 0;
}

bool nxqd_proc_cred_trusted(pid_t pid)
{
	static struct stat me;
	static bool have_me;
	struct stat st;
	char file[64];
	int fd, ufd, up;
	bool ok = false;

	if (!have_me) {
		if (stat("/proc/self/ns/user", &me))
			return false;
		have_me = true;
	}
	snprintf(file, sizeof(file), "/proc/%d/ns/pid", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	/* its pid namespace and each above it, up to ours */
	for (;;) {
		ufd = ioctl(fd, NS_GET_USERNS);
		if (ufd < 0)
			break;	/* owned by a namespace we cannot see */
		if (fstat(ufd, &st) || st.st_ino != me.st_ino ||
		    st.st_dev != me.st_dev) {
			close(ufd);
			break;	/* someone else's root could name it */
		}
		close(ufd);
		up = ioctl(fd, NS_GET_PARENT);
		if (up < 0) {
			/* EPERM: no parent we can see -- ours is reached */
			ok = errno == EPERM;
			break;
		}
		close(fd);
		fd = up;
	}
	close(fd);
	return ok;
}

void nxqd_proc_kill(struct nxqd_proc *p)
{
	syscall(SYS_pidfd_send_signal, p->pidfd, SIGKILL, NULL, 0);
}

/*
 * nxqd_proc_admin() - CAP_SYS_ADMIN in the initial user namespace, now
 *
 * The module's capable(CAP_SYS_ADMIN): the bit in the process's effective
 * set (/proc/PID/status, CapEff: its thread group leader's -- a process
 * any of whose threads holds the capability can use it through that one)
 * and the process in nxquotad's own user namespace, which is the initial
 * one where the daemon runs as root (a process that made a user namespace
 * of its own has every capability there and none here).  What is read is
 * @pidfd's process's only if the process is still live once it has been
 * read: /proc/PID is opened first and read through (a directory of a
 * process that has been reaped reads nothing, even if its pid is
 * another's now), and the pidfd is polled after the reads.
 *
 * Return: 1 if it has the capability, 0 if not, -ESRCH if it exited.
 */
int nxqd_proc_admin(pid_t pid, int pidfd)
{
	static struct stat own;
	static bool have_own;
	unsigned long long eff = 0;
	char path[64], line[256];
	struct stat ns;
	bool found = false, same;
	int dir, fd;
	FILE *f;

	if (!have_own) {
		if (stat("/proc/self/ns/user", &own))
			return 0;
		have_own = true;
	}
	snprintf(path, sizeof(path), "/proc/%d", (int)pid);
	dir = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dir < 0 || !nxqd_proc_alive(pidfd)) {
		if (dir >= 0)
			close(dir);
		return -ESRCH;
	}
	if (fstatat(dir, "ns/user", &ns, 0))
		ns.st_ino = 0;
	same = ns.st_ino == own.st_ino && ns.st_dev == own.st_dev;
	if (!same) {
		close(dir);
		return nxqd_proc_alive(pidfd) ? 0 : -ESRCH;
	}
	fd = openat(dir, "status", O_RDONLY | O_CLOEXEC);
	close(dir);
	f = fd >= 0 ? fdopen(fd, "r") : NULL;
	if (!f) {
		if (fd >= 0)
			close(fd);
		return nxqd_proc_alive(pidfd) ? 0 : -ESRCH;
	}
	while (!found && fgets(line, sizeof(line), f))
		found = sscanf(line, "CapEff: %llx", &eff) == 1;
	fclose(f);
	/* after the reads: what they saw was the pidfd's process */
	if (!nxqd_proc_alive(pidfd))
		return -ESRCH;
	return found && (eff >> 21 & 1);	/* CAP_SYS_ADMIN */
}

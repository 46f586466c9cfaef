// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's event loop: one thread polls every descriptor (epoll,
 * level-triggered), runs the timers that are due (a waiting charge is a
 * timer and a waiter in the ledger: client_cmd.c), then frees what was
 * deferred.  SIGTERM and SIGINT come as a signalfd.  Also the socket
 * helpers both sockets use: systemd's socket passing and readiness
 * protocols, and binding.
 *
 * Objects: watches and timers belong to whoever embeds them; the loop
 * only points at them.  A watch deleted during a turn may still have an
 * event in that turn's batch: it is marked dead and skipped, and what
 * embeds it is freed through nxqd_loop_defer_free() after the batch.
 */
#include <linux/types.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/signalfd.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include "nxqd.h"

#define NXQD_EVENTS	64

struct nxqd_deferred {
	void *p;
	void (*fn)(void *p);
};

static struct {
	int epfd;
	bool stop, busy;
	u64 turn;
	struct rb_root_cached timers;	/* by deadline, then arming order */
	u64 timer_seq;
	struct nxqd_deferred *defer;
	size_t ndefer, capdefer;
	struct nxqd_watch sig;
	void (*on_signal)(int sig);
} nxqd_loop = {
	.epfd = -1,
	.timers = RB_ROOT_CACHED,
};

int nxqd_watch_add(struct nxqd_watch *w)
{
	struct epoll_event ev = { .events = w->events, .data.ptr = w };

	w->dead = false;
	return epoll_ctl(nxqd_loop.epfd, EPOLL_CTL_ADD, w->fd, &ev) ? -errno : 0;
}

int nxqd_watch_mod(struct nxqd_watch *w, u32 events)
{
	struct epoll_event ev = { .events = events, .data.ptr = w };

	if (w->events == events)
		return 0;
	w->events = events;
	return epoll_ctl(nxqd_loop.epfd, EPOLL_CTL_MOD, w->fd, &ev) ? -errno : 0;
}

void nxqd_watch_del(struct nxqd_watch *w)
{
	if (w->dead)
		return;
	epoll_ctl(nxqd_loop.epfd, EPOLL_CTL_DEL, w->fd, NULL);
	w->dead = true;
}

void nxqd_timer_init(struct nxqd_timer *t, void (*fn)(struct nxqd_timer *t))
{
	RB_CLEAR_NODE(&t->rb);
	t->fn = fn;
	t->at = 0;
}

bool nxqd_timer_armed(const struct nxqd_timer *t)
{
	return !RB_EMPTY_NODE(&t->rb);
}

void nxqd_timer_cancel(struct nxqd_timer *t)
{
	if (RB_EMPTY_NODE(&t->rb))
		return;
	rb_erase_cached(&t->rb, &nxqd_loop.timers);
	RB_CLEAR_NODE(&t->rb);
}

static bool nxqd_timer_less(struct rb_node *a, const struct rb_node *b)
{
	const struct nxqd_timer *x = rb_entry(a, struct nxqd_timer, rb);
	const struct nxqd_timer *y = rb_entry(b, struct nxqd_timer, rb);

	return x->at < y->at || (x->at == y->at && x->seq < y->seq);
}

/*
 * Timers are as many as the charges waiting (each tenant's), so arming
 * one is O(log n) in a tree, and the earliest is at hand: the loop never
 * walks them.  Equal deadlines run in the order armed.
 */
void nxqd_timer_arm(struct nxqd_timer *t, u64 at)
{
	nxqd_timer_cancel(t);
	t->at = at;
	t->seq = ++nxqd_loop.timer_seq;
	rb_add_cached(&t->rb, &nxqd_loop.timers, nxqd_timer_less);
}

static struct nxqd_timer *nxqd_timer_first(void)
{
	struct rb_node *n = rb_first_cached(&nxqd_loop.timers);

	return n ? rb_entry(n, struct nxqd_timer, rb) : NULL;
}

void nxqd_loop_defer_free(void *p, void (*fn)(void *p))
{
	if (nxqd_loop.ndefer == nxqd_loop.capdefer) {
		size_t cap = nxqd_loop.capdefer ? 2 * nxqd_loop.capdefer : 64;
		struct nxqd_deferred *d = realloc(nxqd_loop.defer,
						  cap * sizeof(*d));

		if (!d)
			abort();	/* nothing sane to do: it would leak */
		nxqd_loop.defer = d;
		nxqd_loop.capdefer = cap;
	}
	nxqd_loop.defer[nxqd_loop.ndefer].p = p;
	nxqd_loop.defer[nxqd_loop.ndefer].fn = fn;
	nxqd_loop.ndefer++;
}

static void nxqd_loop_free_deferred(void)
{
	size_t i;

	/* a free may defer more */
	for (i = 0; i < nxqd_loop.ndefer; i++)
		nxqd_loop.defer[i].fn(nxqd_loop.defer[i].p);
	nxqd_loop.ndefer = 0;
}

static void nxqd_loop_signal(struct nxqd_watch *w, u32 revents)
{
	struct signalfd_siginfo si;

	while (read(w->fd, &si, sizeof(si)) == sizeof(si))
		if (nxqd_loop.on_signal)
			nxqd_loop.on_signal((int)si.ssi_signo);
}

unsigned int nxqd_busy_us = NXQD_BUSY_US;

int nxqd_loop_init(void)
{
	sigset_t set;

	nxqd_loop.epfd = epoll_create1(EPOLL_CLOEXEC);
	if (nxqd_loop.epfd < 0)
		return -errno;
	sigemptyset(&set);
	sigaddset(&set, SIGTERM);
	sigaddset(&set, SIGINT);
	pthread_sigmask(SIG_BLOCK, &set, NULL);
	nxqd_loop.sig.fd = signalfd(-1, &set, SFD_NONBLOCK | SFD_CLOEXEC);
	if (nxqd_loop.sig.fd < 0)
		return -errno;
	nxqd_loop.sig.events = EPOLLIN;
	nxqd_loop.sig.fn = nxqd_loop_signal;
	if (nxqd_watch_add(&nxqd_loop.sig))
		return -errno;
	return 0;
}

void nxqd_loop_exit(void)
{
	nxqd_loop_free_deferred();
	free(nxqd_loop.defer);
	nxqd_loop.defer = NULL;
	nxqd_loop.capdefer = 0;
	if (nxqd_loop.sig.fd >= 0)
		close(nxqd_loop.sig.fd);
	if (nxqd_loop.epfd >= 0)
		close(nxqd_loop.epfd);
	nxqd_loop.epfd = -1;
}

u64 nxqd_loop_turn(void)
{
	return nxqd_loop.turn;
}

void nxqd_loop_stop(void)
{
	nxqd_loop.stop = true;
}

/* One turn: wait up to @max_ms for events, run them, then the timers. */
static void nxqd_loop_once(int max_ms)
{
	struct epoll_event evs[NXQD_EVENTS];
	struct nxqd_timer *t = nxqd_timer_first();
	int n, i, ms = max_ms;
	u64 now, next;

	if (t) {
		next = t->at;
		now = nxqd_now();
		if (next <= now) {
			ms = 0;
		} else {
			u64 d = (next - now + NSEC_PER_MSEC - 1) / NSEC_PER_MSEC;

			if (ms < 0 || d < (u64)ms)
				ms = (int)min_t(u64, d, INT_MAX);
		}
	}
	n = 0;
	if (nxqd_busy_us && nxqd_loop.busy && ms) {
		/* a request just came: the next one may be a few us away */
		u64 end = nxqd_now() + (u64)nxqd_busy_us * NSEC_PER_USEC;

		do
			n = epoll_wait(nxqd_loop.epfd, evs, ARRAY_SIZE(evs), 0);
		while (!n && nxqd_now() < end);
	}
	if (!n)
		n = epoll_wait(nxqd_loop.epfd, evs, ARRAY_SIZE(evs), ms);
	nxqd_loop.busy = n > 0;
	nxqd_loop.turn++;
	for (i = 0; i < n; i++) {
		struct nxqd_watch *w = evs[i].data.ptr;

		if (!w->dead)
			w->fn(w, evs[i].events);
	}
	now = nxqd_now();
	while ((t = nxqd_timer_first()) && t->at <= now) {
		nxqd_timer_cancel(t);
		t->fn(t);
	}
	nxqd_loop_free_deferred();
}

void nxqd_loop_run(void (*on_signal)(int sig))
{
	nxqd_loop.on_signal = on_signal;
	nxqd_loop.stop = false;
	while (!nxqd_loop.stop)
		nxqd_loop_once(-1);
}

/* ---- sockets ---- */

int nxqd_listen_fds(const char *name)
{
	const char *pid = getenv("LISTEN_PID"), *fds = getenv("LISTEN_FDS");
	const char *names = getenv("LISTEN_FDNAMES"), *p;
	size_t nlen = strlen(name);
	long n, i;
	char *end;

	if (!pid || !fds || !names)
		return -1;
	if (strtol(pid, &end, 10) != getpid() || *end)
		return -1;
	n = strtol(fds, &end, 10);
	if (*end || n <= 0 || n > 64)
		return -1;
	for (i = 0, p = names; i < n && p; i++) {
		if (!strncmp(p, name, nlen) && (p[nlen] == ':' || !p[nlen])) {
			int fd = 3 + (int)i, type = 0;
			socklen_t len = sizeof(type);

			if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &len) ||
			    type != SOCK_SEQPACKET)
				return -1;
			fcntl(fd, F_SETFD, FD_CLOEXEC);
			return fd;
		}
		p = strchr(p, ':');
		if (p)
			p++;
	}
	return -1;
}

int nxqd_bind(const char *path, mode_t mode, long gid, int backlog)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd, probe, err, tries;

	if (strlen(path) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, path, strlen(path) + 1);
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (bind(fd, (struct sockaddr *)&sa, sizeof(sa))) {
		if (errno != EADDRINUSE)
			goto fail;
		/*
		 * A socket file left by a daemon that died, or a live one?
		 * One that is dying still accepts connections until its last
		 * thread has exited (its leader can be a zombie before the
		 * others let go of the file table), so a listener that stays
		 * is looked at for up to a second before it counts as live.
		 */
		for (tries = 0;; tries++) {
			probe = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC,
				       0);
			if (probe < 0 ||
			    connect(probe, (struct sockaddr *)&sa, sizeof(sa)))
				break;
			close(probe);
			if (tries == 20) {
				close(fd);
				return -EADDRINUSE;
			}
			usleep(50 * 1000);
		}
		if (probe >= 0)
			close(probe);
		unlink(path);
		if (bind(fd, (struct sockaddr *)&sa, sizeof(sa)))
			goto fail;
	}
	/* nobody can connect before listen(): no window with a wrong mode */
	if ((gid >= 0 && chown(path, -1, gid)) || chmod(path, mode) ||
	    listen(fd, backlog)) {
		err = -errno;
		unlink(path);
		close(fd);
		return err;
	}
	return fd;
fail:
	err = -errno;
	close(fd);
	return err;
}

void nxqd_notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	socklen_t len;
	int fd;

	if (!path || (path[0] != '/' && path[0] != '@') ||
	    strlen(path) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, strlen(path));
	len = offsetof(struct sockaddr_un, sun_path) + strlen(path);
	if (path[0] == '@')
		sa.sun_path[0] = '\0';	/* an abstract socket */
	else
		len++;
	fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	if (sendto(fd, state, strlen(state), MSG_NOSIGNAL,
		   (struct sockaddr *)&sa, len) < 0 && nxqd_verbose)
		fprintf(stderr, "nxquotad: sd_notify %s: %s\n", path,
			strerror(errno));
	close(fd);
}

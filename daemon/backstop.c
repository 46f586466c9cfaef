// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's backstop (issue 28, item 2): what bypasses the shim -- a
 * static binary, a process that unset the preload, direct ioctls on
 * /dev/nvidia* -- allocates without asking the ledger.  The driver still
 * knows what each process holds: every -b milliseconds a thread of its
 * own reads NVML's compute processes and the device memory each uses
 * (../tools/nvml.c, the reader nxquotactl's unattributed bytes use), pins
 * each listed pid with a pidfd and reads its cgroup, and hands the
 * snapshot to the loop, which holds it against the ledger:
 *
 *  - a group is a budget node with a max of its own (its subtree), or,
 *    for processes with no budget on their path, their top-level cgroup
 *    under the device's default_max;
 *  - it is over when what NVML measures in it exceeds what it may hold:
 *    max(its max, what the ledger charged it) -- a max lowered below the
 *    charge is being asked back, not escaped -- plus the allowance (-x)
 *    for each of its processes (what a context loads that no one can
 *    charge: lazy modules, library workspaces);
 *  - the processes named are those whose own measure exceeds their own
 *    holders' charges and the allowance, the most uncharged first, until
 *    their uncharged bytes cover the excess.  A process that is charged
 *    for what it uses is never named, whatever its neighbours do; with
 *    -k the named are SIGKILLed through the pidfd pinned when they were
 *    read.
 *
 * Pid reuse: a pid NVML listed is pinned only if its process started
 * before the query began (nxqd_proc_pin(), a tick earlier), and its
 * cgroup is believed only if the pidfd has not exited after it was read;
 * a process given the pid after the query is not the one NVML measured.
 *
 * Objects: the thread's snapshot (struct bs_snap) is handed to the loop
 * under bs.lock and freed there; the groups of the last poll and the
 * processes flagged are the loop's.  Nothing here is taken under a
 * ledger lock but the ledger's reads.
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <dlfcn.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nxqd.h"
#include "../tools/nvml.h"

unsigned int nxqd_backstop_ms = NXQD_BACKSTOP_MS;
u64 nxqd_backstop_allow = NXQD_BACKSTOP_ALLOW;
bool nxqd_backstop_kill;

/* One process NVML listed on one device, pinned. */
struct bs_ent {
	char dev[NXQ_NVML_UUID_LEN];
	pid_t pid;
	u64 start;
	int pidfd;
	u64 bytes;			/* NVML's usedGpuMemory */
	char comm[20];
	char *cg;			/* its cgroup2 path when read */
	/* the loop's */
	u64 charged;			/* its holders' charges on dev */
	bool budgeted;			/* a budget on its path */
	bool named;
};

struct bs_snap {
	size_t n;
	struct bs_ent *e;
};

/* A process flagged at the last poll (events are sent once per state). */
struct bs_flag {
	char dev[NXQ_NVML_UUID_LEN];
	pid_t pid;
	u64 start;
	bool killed;
};

static struct {
	pthread_t thread;
	bool running;
	pthread_mutex_t lock;
	pthread_cond_t cond;		/* lock: stop */
	bool stop;			/* lock */
	struct bs_snap *ready;		/* lock: the latest, not yet judged */
	int efd;			/* the thread wakes the loop */
	struct nxqd_watch w;
	/* the loop's */
	struct nxqd_backstop_use *groups;
	size_t ngroups;
	struct bs_flag *flags;
	size_t nflags;
	u64 polls;
} bs = {
	.lock = PTHREAD_MUTEX_INITIALIZER,
	.efd = -1,
};

static void bs_snap_free(struct bs_snap *s)
{
	size_t i;

	if (!s)
		return;
	for (i = 0; i < s->n; i++) {
		if (s->e[i].pidfd >= 0)
			close(s->e[i].pidfd);
		free(s->e[i].cg);
	}
	free(s->e);
	free(s);
}

static void bs_comm(pid_t pid, char *buf, size_t size)
{
	char file[64];
	ssize_t n;
	int fd;

	snprintf(file, sizeof(file), "/proc/%d/comm", (int)pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	n = fd >= 0 ? read(fd, buf, size - 1) : -1;
	if (fd >= 0)
		close(fd);
	buf[n > 0 ? n : 0] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
}

/*
 * Pin one listed process and read its cgroup: 0 with @e filled, or -1 if
 * it is gone, started after @ticks - 1 (the query began at @ticks: a
 * later process is not the one measured) or its cgroup cannot be read.
 */
static int bs_pin(struct bs_ent *e, u64 ticks)
{
	char file[64], path[PATH_MAX];
	int fd, err;

	e->pidfd = nxqd_proc_pin(e->pid, -1, ticks ? ticks - 1 : 0, &e->start);
	if (e->pidfd < 0)
		return -1;
	snprintf(file, sizeof(file), "/proc/%d/cgroup", (int)e->pid);
	fd = open(file, O_RDONLY | O_CLOEXEC);
	err = fd < 0 ? -errno : nxqd_cgroup_read(fd, path, sizeof(path));
	if (fd >= 0)
		close(fd);
	bs_comm(e->pid, e->comm, sizeof(e->comm));
	/* still the pidfd's process: what was read under its pid was its */
	if (err || !nxqd_proc_alive(e->pidfd) || !(e->cg = strdup(path))) {
		close(e->pidfd);
		e->pidfd = -1;
		return -1;
	}
	return 0;
}

/* A snapshot of what NVML measures, or NULL with @why said. */
static struct bs_snap *bs_read(char *why, size_t size)
{
	u64 ticks = nxqd_proc_ticks();
	struct bs_snap *s;
	struct nxq_nvml nv;
	size_t i, j;

	if (nxq_nvml_read(&nv, why, size))
		return NULL;
	s = calloc(1, sizeof(*s));
	if (s)
		s->e = calloc(nv.nprocs ? nv.nprocs : 1, sizeof(*s->e));
	if (!s || !s->e) {
		free(s);
		nxq_nvml_free(&nv);
		snprintf(why, size, "out of memory");
		return NULL;
	}
	for (i = 0; i < nv.nprocs; i++) {
		const struct nxq_nvml_proc *p = &nv.procs[i];
		struct bs_ent *e = &s->e[s->n];

		/* no figure, nothing to hold against the budget */
		if (p->bytes == NXQ_NVML_NA || !p->bytes)
			continue;
		/* one process listed twice on a device (MIG): one entry */
		for (j = 0; j < s->n; j++)
			if (s->e[j].pid == (pid_t)p->pid &&
			    !strcmp(s->e[j].dev, nv.devs[p->dev].uuid))
				break;
		if (j < s->n) {
			s->e[j].bytes += p->bytes;
			continue;
		}
		snprintf(e->dev, sizeof(e->dev), "%s", nv.devs[p->dev].uuid);
		e->pid = p->pid;
		e->bytes = p->bytes;
		if (!bs_pin(e, ticks))
			s->n++;
	}
	nxq_nvml_free(&nv);
	return s;
}

/*
 * The thread: NVML is initialized once and kept (each read's own init is
 * then a reference, not a driver start), then read every period; a
 * failure is said once, until a read succeeds again.
 */
static void *bs_thread(void *arg)
{
	int (*init)(void) = NULL, (*shutdown)(void) = NULL;
	struct timespec next, now;
	bool failing = false;
	struct bs_snap *s, *old;
	char why[256];
	void *lib;
	u64 one = 1;

	(void)arg;
#ifdef NXQ_STATIC
	lib = NULL;	/* not in a static build: ../tools/nvml.c says why */
#else
	lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
#endif
	if (lib) {
		init = (int (*)(void))dlsym(lib, "nvmlInit_v2");
		shutdown = (int (*)(void))dlsym(lib, "nvmlShutdown");
		if (!init || !shutdown || init())
			init = NULL;
	}
	clock_gettime(CLOCK_MONOTONIC, &next);
	pthread_mutex_lock(&bs.lock);
	while (!bs.stop) {
		pthread_mutex_unlock(&bs.lock);
		s = bs_read(why, sizeof(why));
		if (!s && !failing)
			fprintf(stderr, "nxquotad: backstop: NVML unreadable, nothing measured until it is: %s\n",
				why);
		else if (s && failing)
			fprintf(stderr, "nxquotad: backstop: NVML read again\n");
		failing = !s;
		pthread_mutex_lock(&bs.lock);
		old = bs.ready;
		if (s) {
			bs.ready = s;
			if (write(bs.efd, &one, sizeof(one)) < 0)
				;	/* the counter is full: the loop is woken */
		}
		if (s && old) {
			bs.ready = s;
			pthread_mutex_unlock(&bs.lock);
			bs_snap_free(old);	/* a poll the loop skipped */
			pthread_mutex_lock(&bs.lock);
		}
		/*
		 * A period after the last one, or after now when NVML took
		 * longer than a period: no burst of polls to catch up (each
		 * would replace the snapshot the loop has not judged yet).
		 */
		clock_gettime(CLOCK_MONOTONIC, &now);
		if (now.tv_sec > next.tv_sec ||
		    (now.tv_sec == next.tv_sec && now.tv_nsec > next.tv_nsec))
			next = now;
		next.tv_nsec += (long)(nxqd_backstop_ms % 1000) * 1000000;
		next.tv_sec += nxqd_backstop_ms / 1000 +
			       next.tv_nsec / 1000000000;
		next.tv_nsec %= 1000000000;
		while (!bs.stop &&
		       pthread_cond_timedwait(&bs.cond, &bs.lock, &next) !=
		       ETIMEDOUT)
			;
	}
	pthread_mutex_unlock(&bs.lock);
	if (init)
		shutdown();
	return NULL;
}

/* @path is @dir or below it (both cgroup2 paths, "/" the root). */
static bool bs_under(const char *path, const char *dir)
{
	size_t n = strlen(dir);

	if (!strcmp(dir, "/"))
		return true;
	return !strncmp(path, dir, n) && (path[n] == '/' || !path[n]);
}

static u64 bs_add(u64 a, u64 b)
{
	return a + b < a ? U64_MAX : a + b;
}

static u64 bs_mul(u64 a, u64 n)
{
	return n && a > U64_MAX / n ? U64_MAX : a * n;
}

/* The groups of the last poll, for the counters they carry on. */
static struct nxqd_backstop_use *bs_find(struct nxqd_backstop_use *g,
					 size_t n, const char *dev, u64 id,
					 const char *path)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (!strcmp(g[i].device, dev) && g[i].cgroup_id == id &&
		    !strcmp(g[i].path, path))
			return &g[i];
	return NULL;
}

/* Add a group (its path copied); NULL out of memory. */
static struct nxqd_backstop_use *bs_group(struct nxqd_backstop_use **g,
					  size_t *n, size_t *cap,
					  const char *dev, const char *path,
					  u64 id)
{
	struct nxqd_backstop_use *u;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 16;

		u = realloc(*g, c * sizeof(*u));
		if (!u)
			return NULL;
		*g = u;
		*cap = c;
	}
	u = &(*g)[*n];
	memset(u, 0, sizeof(*u));
	snprintf(u->device, sizeof(u->device), "%s", dev);
	u->path = strdup(path);
	if (!u->path)
		return NULL;
	u->cgroup_id = id;
	(*n)++;
	return u;
}

/* Each entry of @s on @dev under @g's path is measured in @g. */
static void bs_measure(struct nxqd_backstop_use *g, struct bs_snap *s,
		       bool budget)
{
	size_t i;

	for (i = 0; i < s->n; i++) {
		struct bs_ent *e = &s->e[i];

		if (strcmp(e->dev, g->device) || !bs_under(e->cg, g->path) ||
		    (!budget && (e->budgeted || !strcmp(e->cg, "/"))))
			continue;
		g->measured = bs_add(g->measured, e->bytes);
		g->processes++;
		if (budget)
			e->budgeted = true;
	}
}

/*
 * The groups of @s's processes on @dev: its budget nodes with a max, and
 * the top-level cgroups of processes with no budget under default_max.
 * Context: the ledger lock and @dev's lock are held.
 */
static int bs_groups(struct nxq_device *dev, struct bs_snap *s,
		     struct nxqd_backstop_use **g, size_t *n, size_t *cap)
{
	struct nxqd_backstop_use *u;
	struct nxq_holder *h;
	struct nxq_node *node;
	unsigned long id;
	char top[PATH_MAX];
	size_t i, first = *n;

	for (i = 0; i < s->n; i++) {
		struct bs_ent *e = &s->e[i];

		if (strcmp(e->dev, dev->key))
			continue;
		/* its own holders, by process (pid and start time) */
		list_for_each_entry(h, &dev->holders, link) {
			struct nxqd_proc *p = nxqd_proc_of_owner(h->owner);

			if (p && p->tgid == e->pid && p->start == e->start)
				e->charged = bs_add(e->charged, h->charge);
		}
	}
	xa_for_each(&dev->nodes, id, node) {
		const char *path = nxqd_cgroup_key_path(node->key);

		if (!node->max_set && !node->min)
			continue;
		/* a min alone: bounded by the ancestors, not default_max */
		for (i = 0; i < s->n; i++)
			if (!strcmp(s->e[i].dev, dev->key) &&
			    bs_under(s->e[i].cg, path))
				s->e[i].budgeted = true;
		if (!node->max_set || node->max == NXQ_UNLIMITED)
			continue;
		u = bs_group(g, n, cap, dev->key, path, node->id);
		if (!u)
			return -ENOMEM;
		u->limit = node->max;
		u->charged = node->usage;
		bs_measure(u, s, true);
		if (!u->processes) {
			free(u->path);
			(*n)--;
		}
	}
	if (dev->default_max == NXQ_UNLIMITED)
		return 0;
	for (i = 0; i < s->n; i++) {
		struct bs_ent *e = &s->e[i];

		/* the root cgroup's (the host's) are no top-level cgroup's */
		if (strcmp(e->dev, dev->key) || e->budgeted ||
		    !strcmp(e->cg, "/"))
			continue;
		snprintf(top, sizeof(top), "%s", e->cg);
		top[strcspn(top + 1, "/") + 1] = '\0';
		if (bs_find(*g + first, *n - first, dev->key, 0, top))
			continue;
		u = bs_group(g, n, cap, dev->key, top, 0);
		if (!u)
			return -ENOMEM;
		u->limit = dev->default_max;
		bs_measure(u, s, false);
	}
	return 0;
}

/* Sort: the most uncharged first. */
static u64 bs_uncharged(const struct bs_ent *e)
{
	u64 ok = bs_add(e->charged, nxqd_backstop_allow);

	return e->bytes > ok ? e->bytes - ok : 0;
}

static int bs_cmp(const void *a, const void *b)
{
	u64 x = bs_uncharged(*(struct bs_ent *const *)a);
	u64 y = bs_uncharged(*(struct bs_ent *const *)b);

	return x < y ? 1 : x > y ? -1 : 0;
}

/* The escaped event, on the control socket's "events" group. */
static void bs_event(const struct nxqd_backstop_use *g,
		     const struct bs_ent *e, bool killed)
{
	struct nxq_abi_msg m = { .pad = NXQUOTA_A_EVENT_PAD };
	const struct { u16 type; u8 kind; u64 v; } a[] = {
		{ NXQUOTA_A_EVENT_TYPE, NXQ_ABI_U32, NXQUOTA_EVENT_TYPE_ESCAPED },
		{ NXQUOTA_A_EVENT_DEVICE, NXQ_ABI_STR, 0 },
		{ NXQUOTA_A_EVENT_CGROUP_ID, NXQ_ABI_U64, g->cgroup_id },
		{ NXQUOTA_A_EVENT_PID, NXQ_ABI_U32, (u32)e->pid },
		{ NXQUOTA_A_EVENT_BYTES, NXQ_ABI_U64, bs_uncharged(e) },
		{ NXQUOTA_A_EVENT_VALUE, NXQ_ABI_U64, g->measured },
		{ NXQUOTA_A_EVENT_REASON, NXQ_ABI_U32, killed ? SIGKILL : 0 },
		{ NXQUOTA_A_EVENT_TIMESTAMP_NS, NXQ_ABI_U64, nxqd_now() },
	};
	size_t i;

	for (i = 0; i < ARRAY_SIZE(a); i++) {
		/* a budget-less group's cgroup has no node: no id to send */
		if (a[i].type == NXQUOTA_A_EVENT_CGROUP_ID && !a[i].v)
			continue;
		m.a[m.n].type = a[i].type;
		m.a[m.n].kind = a[i].kind;
		m.a[m.n].v = a[i].v;
		m.a[m.n].s = a[i].kind == NXQ_ABI_STR ? g->device : NULL;
		m.n++;
	}
	nxqd_ctl_send(&m);
}

static struct bs_flag *bs_flagged(const struct bs_ent *e)
{
	size_t i;

	for (i = 0; i < bs.nflags; i++)
		if (bs.flags[i].pid == e->pid &&
		    bs.flags[i].start == e->start &&
		    !strcmp(bs.flags[i].dev, e->dev))
			return &bs.flags[i];
	return NULL;
}

/*
 * Name (and with -k kill) the processes of group @g, over by @over, the
 * most uncharged first until they cover it.  @v: scratch, room for every
 * entry of @s.  Flags of this poll go to @nf.
 */
static void bs_name(struct nxqd_backstop_use *g, u64 over, struct bs_snap *s,
		    struct bs_ent **v, struct bs_flag *nf, size_t *nnf)
{
	size_t i, n = 0;
	u64 cover = 0;

	for (i = 0; i < s->n; i++) {
		struct bs_ent *e = &s->e[i];

		if (!strcmp(e->dev, g->device) && bs_under(e->cg, g->path) &&
		    (g->cgroup_id || (!e->budgeted && strcmp(e->cg, "/"))) &&
		    bs_uncharged(e))
			v[n++] = e;
	}
	qsort(v, n, sizeof(*v), bs_cmp);
	if (!n && !g->unnamed)
		fprintf(stderr, "nxquotad: backstop: %s: %s measures %llu bytes through NVML, over the %llu it may hold, but no process there uses more than its charges and the allowance: none named\n",
			g->device, g->path, (unsigned long long)g->measured,
			(unsigned long long)g->allowed);
	g->unnamed = !n;
	for (i = 0; i < n && cover < over; i++) {
		struct bs_ent *e = v[i];
		struct bs_flag *was = bs_flagged(e), *f;
		bool killed = false;

		cover = bs_add(cover, bs_uncharged(e));
		if (e->named)		/* by a group above or below */
			continue;
		e->named = true;
		if (nxqd_backstop_kill &&
		    !syscall(SYS_pidfd_send_signal, e->pidfd, SIGKILL, NULL, 0))
			killed = true;
		f = &nf[(*nnf)++];
		snprintf(f->dev, sizeof(f->dev), "%s", e->dev);
		f->pid = e->pid;
		f->start = e->start;
		f->killed = killed || (was && was->killed);
		if (was && (was->killed || !killed))
			continue;	/* said at an earlier poll */
		g->flagged++;
		if (killed)
			g->killed++;
		fprintf(stderr, "nxquotad: backstop: %s: %s measures %llu bytes through NVML, over the %llu it may hold (%llu, %u process(es) at %llu each): pid %d (%s) uses %llu bytes beyond its charges (%llu): %s\n",
			g->device, g->path, (unsigned long long)g->measured,
			(unsigned long long)g->allowed,
			(unsigned long long)max(g->limit, g->charged),
			g->processes, (unsigned long long)nxqd_backstop_allow,
			(int)e->pid, e->comm,
			(unsigned long long)bs_uncharged(e),
			(unsigned long long)e->charged,
			killed ? "killed" : "named");
		bs_event(g, e, killed);
	}
}

/* Hold a snapshot against the ledger (on the loop). */
static void bs_judge(struct bs_snap *s)
{
	struct nxqd_backstop_use *g = NULL, *old;
	struct bs_flag *nf = NULL;
	struct bs_ent **v = NULL;
	size_t n = 0, cap = 0, nnf = 0, i;
	struct nxq_device *dev;
	int err = 0;

	mutex_lock(&nxqd_ledger.lock);
	list_for_each_entry(dev, &nxqd_ledger.devices, link) {
		spin_lock(&dev->lock);
		err = bs_groups(dev, s, &g, &n, &cap);
		spin_unlock(&dev->lock);
		if (err)
			break;
	}
	mutex_unlock(&nxqd_ledger.lock);
	v = calloc(s->n ? s->n : 1, sizeof(*v));
	nf = calloc(s->n ? s->n : 1, sizeof(*nf));
	if (err || !v || !nf) {
		fprintf(stderr, "nxquotad: backstop: out of memory: this poll is not judged\n");
		goto out;
	}
	for (i = 0; i < n; i++) {
		u64 allowed;

		old = bs_find(bs.groups, bs.ngroups, g[i].device,
			      g[i].cgroup_id, g[i].path);
		if (old) {
			g[i].flagged = old->flagged;
			g[i].killed = old->killed;
			g[i].unnamed = old->unnamed;
		}
		allowed = bs_add(max(g[i].limit, g[i].charged),
				 bs_mul(nxqd_backstop_allow, g[i].processes));
		g[i].allowed = allowed;
		if (g[i].measured > allowed)
			bs_name(&g[i], g[i].measured - allowed, s, v, nf, &nnf);
		else
			g[i].unnamed = false;
	}
	/* a group flagged before keeps its counters while none runs there */
	for (i = 0; i < bs.ngroups; i++) {
		struct nxqd_backstop_use *u;

		old = &bs.groups[i];
		if (!old->flagged ||
		    bs_find(g, n, old->device, old->cgroup_id, old->path))
			continue;
		u = bs_group(&g, &n, &cap, old->device, old->path,
			     old->cgroup_id);
		if (!u)
			break;
		u->limit = old->limit;
		u->flagged = old->flagged;
		u->killed = old->killed;
	}
	/* the new poll's groups and flags replace the last's */
	for (i = 0; i < bs.ngroups; i++)
		free(bs.groups[i].path);
	free(bs.groups);
	bs.groups = g;
	bs.ngroups = n;
	g = NULL;
	n = 0;
	free(bs.flags);
	bs.flags = nf;
	bs.nflags = nnf;
	nf = NULL;
	bs.polls++;
out:
	for (i = 0; i < n; i++)
		free(g[i].path);
	free(g);
	free(nf);
	free(v);
}

static void bs_wake(struct nxqd_watch *w, u32 revents)
{
	struct bs_snap *s;
	u64 v;

	(void)revents;
	if (read(w->fd, &v, sizeof(v)) < 0)
		return;
	pthread_mutex_lock(&bs.lock);
	s = bs.ready;
	bs.ready = NULL;
	pthread_mutex_unlock(&bs.lock);
	if (!s)
		return;
	bs_judge(s);
	bs_snap_free(s);
}

/**
 * nxqd_backstop_start() - start polling NVML every nxqd_backstop_ms
 *
 * Context: the loop, after nxqd_loop_init() (the thread keeps its
 * signals blocked).
 * Return: 0 (also when -b 0 turned it off), or -errno.
 */
int nxqd_backstop_start(void)
{
	pthread_condattr_t ca;
	int err;

	if (!nxqd_backstop_ms)
		return 0;
	bs.efd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	if (bs.efd < 0)
		return -errno;
	bs.w.fd = bs.efd;
	bs.w.events = EPOLLIN;
	bs.w.fn = bs_wake;
	err = nxqd_watch_add(&bs.w);
	if (err)
		goto fail;
	pthread_condattr_init(&ca);
	pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
	pthread_cond_init(&bs.cond, &ca);
	pthread_condattr_destroy(&ca);
	err = -pthread_create(&bs.thread, NULL, bs_thread, NULL);
	if (err) {
		nxqd_watch_del(&bs.w);
		goto fail;
	}
	bs.running = true;
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: backstop: NVML every %u ms, allowance %llu bytes per process, %s\n",
			nxqd_backstop_ms,
			(unsigned long long)nxqd_backstop_allow,
			nxqd_backstop_kill ? "kill" : "name only");
	return 0;
fail:
	close(bs.efd);
	bs.efd = -1;
	return err;
}

/**
 * nxqd_backstop_stop() - stop the thread and free what it measured
 *
 * Context: the loop.
 */
void nxqd_backstop_stop(void)
{
	size_t i;

	if (!bs.running)
		return;
	pthread_mutex_lock(&bs.lock);
	bs.stop = true;
	pthread_cond_signal(&bs.cond);
	pthread_mutex_unlock(&bs.lock);
	pthread_join(bs.thread, NULL);
	bs.running = false;
	nxqd_watch_del(&bs.w);
	close(bs.efd);
	bs.efd = -1;
	bs_snap_free(bs.ready);
	bs.ready = NULL;
	for (i = 0; i < bs.ngroups; i++)
		free(bs.groups[i].path);
	free(bs.groups);
	free(bs.flags);
	bs.groups = NULL;
	bs.flags = NULL;
	bs.ngroups = bs.nflags = 0;
}

/**
 * nxqd_backstop_each() - each group the last poll measured
 * @fn: called with each (valid during the call)
 * @ctx: passed to @fn
 *
 * For the metrics: a budget node with a max that NVML found processes
 * under, or a top-level cgroup under default_max (cgroup_id 0), and the
 * groups whose counters are not zero.
 * Context: the loop.
 * Return: the polls judged so far (0: none yet, or the backstop is off).
 */
u64 nxqd_backstop_each(void (*fn)(void *ctx,
				  const struct nxqd_backstop_use *u),
		       void *ctx)
{
	size_t i;

	for (i = 0; i < bs.ngroups; i++)
		fn(ctx, &bs.groups[i]);
	return bs.polls;
}

/**
 * nxqd_backstop_budget_msg() - a budget node's measure, into its dump
 * @device: the device's key
 * @cgroup_id: the node's cgroup id
 * @m: the node's message (nxq_abi_budget_msg()), to which the measured
 *	and escaped attributes are added when the last poll measured it
 *
 * Context: the loop.
 */
void nxqd_backstop_budget_msg(const char *device, u64 cgroup_id,
			      struct nxq_abi_msg *m)
{
	struct nxqd_backstop_use u;

	if (nxqd_backstop_measured(device, cgroup_id, &u) ||
	    m->n + 2 > NXQ_ABI_MSG_ATTRS)
		return;
	m->a[m->n++] = (struct nxq_abi_attr){
		.type = NXQUOTA_A_BUDGET_MEASURED, .kind = NXQ_ABI_U64,
		.v = u.measured };
	m->a[m->n++] = (struct nxq_abi_attr){
		.type = NXQUOTA_A_BUDGET_ESCAPED, .kind = NXQ_ABI_U64,
		.v = u.flagged };
}

/**
 * nxqd_backstop_measured() - what NVML measured under one budget node
 * @device: the device's key
 * @cgroup_id: the budget node's cgroup id
 * @out: filled in
 *
 * Context: the loop.
 * Return: 0, or -ENOENT when the last poll found no process there (or
 * the node has no max of its own, or the backstop is off).
 */
int nxqd_backstop_measured(const char *device, u64 cgroup_id,
			   struct nxqd_backstop_use *out)
{
	size_t i;

	for (i = 0; i < bs.ngroups; i++) {
		if (bs.groups[i].cgroup_id == cgroup_id &&
		    !strcmp(bs.groups[i].device, device)) {
			*out = bs.groups[i];
			return 0;
		}
	}
	return -ENOENT;
}

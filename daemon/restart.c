// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's restart: what each holder held (the record) and the grace
 * window after a restart (the protocol is in <linux/nxquotad.h>).
 *
 * The record, STATEDIR/record, has a line per live holder:
 *
 *   nxquotad-record 2
 *   holder PID START ID DEVICE CHARGE
 *
 * START is the process's start time (/proc/PID/stat field 22), ID the
 * holder's id on this daemon, CHARGE what it held as the daemon last
 * answered it.  It is written (tmp, rename; no fsync: it is for a crash of
 * the daemon, not of the node, which ends its clients too) at most every
 * record_ms after a change, and when the daemon stops -- never on the
 * charge path: a change only marks it dirty.  The holders come from
 * client.c through struct nxqd_restart_ops (this file is below it).
 *
 * A start that finds a record keeps its processes still alive (same pid
 * and start time; each is watched by a pidfd) and opens the grace window
 * for grace_ms.  While it is open only restores pass: a version 1 restore
 * up to what the record has for the holder it claimed; a version 0
 * process's first charge on a holder it registered again, up to what the
 * record has for an unclaimed holder of it on that device (more than any
 * claims the largest and is a restore beyond the record; -EAGAIN leaves
 * the first charge to come).  Other charges
 * are held (struct nxqd_held): restores beyond the record in one queue,
 * by excess, growth in another, in order -- or, version 0 without a wait,
 * refused with -EAGAIN.  The window closes when every listed process is
 * restored (version 1: NXQD_REQ_RESTORED; version 0: it registered as
 * many holders as it had and charged after the last, or
 * NXQD_RESTORE_SETTLE_MS passed) or gone, or at its end; then the held
 * restores are released, then the growth.
 *
 * Everything here runs on the loop thread.
 */
#include <linux/types.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

#include "nxqd.h"

#define RECORD_MAGIC		"nxquotad-record 2"
/* The most holders a record keeps. */
#define NXQD_RECORD_MAX		(1 << 20)
/* Version 0: a last holder with nothing to charge counts after this. */
#define NXQD_RESTORE_SETTLE_MS	200

struct nxqd_rs_proc;

struct nxqd_rec_holder {
	struct list_head link;		/* in its process's holders */
	struct nxqd_rs_proc *proc;
	u64 id;				/* on the daemon that went away */
	char device[NXQ_DEVICE_KEY_MAX];
	u64 charge;			/* what it held then */
	u64 restored;			/* what its restores took back */
	bool claimed;			/* a registration took it */
};

struct nxqd_rs_proc {
	struct list_head link;		/* rs.procs */
	pid_t pid;
	u64 start;
	struct nxqd_watch w;		/* its pidfd, while the window is open */
	struct list_head holders;
	unsigned int nr_holders;
	unsigned int seen;		/* v0: registrations since */
	u64 last_ns;			/* v0: the last of them */
	unsigned int held;		/* its restores the window holds */
	bool done;			/* restored */
	bool dead;
};

struct nxqd_rs_stat {
	char device[NXQ_DEVICE_KEY_MAX];
	u64 restored, refused;
};

static struct {
	char file[PATH_MAX], tmp[PATH_MAX + 8];
	unsigned int grace_ms, record_ms;
	const struct nxqd_restart_ops *ops;
	struct list_head procs;
	enum { RS_CLOSED, RS_OPEN, RS_DRAIN } state;
	struct nxqd_timer end, settle, step, record;
	bool dirty, frozen;
	u64 last_write;
	struct list_head held_restore;	/* by excess, smallest first */
	struct list_head held_growth;	/* in order */
	struct nxqd_rs_stat *stats;
	size_t nstats;
} rs = {
	.procs = LIST_HEAD_INIT(rs.procs),
	.held_restore = LIST_HEAD_INIT(rs.held_restore),
	.held_growth = LIST_HEAD_INIT(rs.held_growth),
};

/* ---- the record ---- */

static void nxqd_record_emit(void *ctx, const struct nxqd_rec_line *l)
{
	fprintf(ctx, "holder %d %llu %llu %s %llu\n", l->pid,
		(unsigned long long)l->start, (unsigned long long)l->id,
		l->device, (unsigned long long)l->charge);
}

int nxqd_record_write(void)
{
	struct nxqd_rs_proc *p;
	struct nxqd_rec_holder *r;
	int fd, err = 0;
	FILE *f;

	if (!rs.file[0] || !rs.ops || rs.frozen)
		return 0;
	nxqd_timer_cancel(&rs.record);
	rs.dirty = false;
	rs.last_write = nxqd_now();
	fd = open(rs.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	f = fd >= 0 ? fdopen(fd, "w") : NULL;
	if (!f) {
		err = -errno;
		if (fd >= 0)
			close(fd);
		goto out;
	}
	fprintf(f, "%s\n", RECORD_MAGIC);
	rs.ops->list(nxqd_record_emit, f);
	/* listed processes not back yet stay listed while the window is */
	list_for_each_entry(p, &rs.procs, link) {
		if (rs.state == RS_CLOSED || p->done || p->dead)
			continue;
		list_for_each_entry(r, &p->holders, link) {
			struct nxqd_rec_line l = {
				.pid = p->pid, .start = p->start, .id = r->id,
				.device = r->device, .charge = r->charge,
			};

			if (!r->claimed)
				nxqd_record_emit(f, &l);
		}
	}
	if (fflush(f) || ferror(f))
		err = -errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(rs.tmp, rs.file))
		err = -errno;
out:
	if (err) {
		unlink(rs.tmp);
		fprintf(stderr, "nxquotad: cannot write the record %s: %s\n",
			rs.file, strerror(-err));
		/* again later */
		nxqd_record_dirty();
	}
	return err;
}

static void nxqd_record_due(struct nxqd_timer *t)
{
	nxqd_record_write();
}

int nxqd_record_final(void)
{
	int err = nxqd_record_write();

	rs.frozen = true;
	return err;
}

void nxqd_record_dirty(void)
{
	u64 at;

	if (rs.dirty || !rs.file[0] || rs.frozen)
		return;
	rs.dirty = true;
	at = rs.last_write + (u64)rs.record_ms * NSEC_PER_MSEC;
	nxqd_timer_arm(&rs.record, max(at, nxqd_now()));
}

/* ---- the window ---- */

static void nxqd_grace_check(void);
static int nxqd_rs_add(pid_t pid, u64 start, struct nxqd_rs_proc **pp);

static struct nxqd_rs_proc *nxqd_rs_find(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p;

	list_for_each_entry(p, &rs.procs, link)
		if (p->pid == pid && p->start == start)
			return p;
	return NULL;
}

static void nxqd_rs_exited(struct nxqd_watch *w, u32 revents)
{
	struct nxqd_rs_proc *p = container_of(w, struct nxqd_rs_proc, w);

	p->dead = true;
	nxqd_watch_del(&p->w);
	nxqd_grace_check();
}

static void nxqd_release(struct list_head *q)
{
	struct nxqd_held *h;

	while (!list_empty(q)) {
		h = list_first_entry(q, struct nxqd_held, link);
		list_del_init(&h->link);
		nxqd_timer_cancel(&h->timer);
		if (h->proc)
			h->proc->held--;
		h->release(h, 0);
	}
}

static void nxqd_grace_close(void)
{
	struct nxqd_rs_proc *p;

	rs.state = RS_CLOSED;
	nxqd_timer_cancel(&rs.end);
	nxqd_timer_cancel(&rs.settle);
	nxqd_timer_cancel(&rs.step);
	list_for_each_entry(p, &rs.procs, link)
		nxqd_watch_del(&p->w);
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: grace window closed\n");
	/* restores first, the smallest excess first; then growth */
	nxqd_release(&rs.held_restore);
	nxqd_release(&rs.held_growth);
	nxqd_record_dirty();
}

/* Version 0's rule; arms the settle timer for the next one due. */
static bool nxqd_rs_v0_done(struct nxqd_rs_proc *p, u64 now)
{
	u64 due;

	if (p->seen < p->nr_holders)
		return false;
	due = p->last_ns + NXQD_RESTORE_SETTLE_MS * NSEC_PER_MSEC;
	if (now >= due)
		return true;
	if (!nxqd_timer_armed(&rs.settle) || rs.settle.at > due)
		nxqd_timer_arm(&rs.settle, due);
	return false;
}

/*
 * The window's steps, on a timer (this may run in a charge's fiber, and
 * a step releases charges that may start fibers of their own):
 *  - OPEN until every listed process is restored, gone, or blocked on a
 *    restore the window holds (it restores holder by holder: it can go
 *    no further); then DRAIN: the held restores are released, the
 *    smallest excess first, and the blocked processes go on restoring,
 *    growth still held (a restore beyond the record is held again, and
 *    released again when every process left is blocked so);
 *  - CLOSED once every listed process is restored or gone: the growth
 *    is released.  The end (-G) closes it from either.
 */
static void nxqd_grace_step(struct nxqd_timer *t)
{
	struct nxqd_rs_proc *p;
	bool settled = true, blocked_only = true;
	u64 now = nxqd_now();

	if (rs.state == RS_CLOSED)
		return;
	list_for_each_entry(p, &rs.procs, link) {
		if (!p->done && !p->dead && nxqd_rs_v0_done(p, now))
			p->done = true;
		if (p->done || p->dead)
			continue;
		settled = false;
		if (!p->held)
			blocked_only = false;
	}
	if (settled) {
		nxqd_grace_close();
		return;
	}
	if (blocked_only && !list_empty(&rs.held_restore)) {
		if (nxqd_verbose && rs.state == RS_OPEN)
			fprintf(stderr, "nxquotad: grace window drains the restores it held\n");
		rs.state = RS_DRAIN;
		nxqd_release(&rs.held_restore);
	}
}

static void nxqd_grace_check(void)
{
	if (rs.state != RS_CLOSED)
		nxqd_timer_arm(&rs.step, nxqd_now());
}

static void nxqd_grace_end(struct nxqd_timer *t)
{
	if (rs.state != RS_CLOSED)
		nxqd_grace_close();
}

static void nxqd_grace_settle(struct nxqd_timer *t)
{
	nxqd_grace_check();
}

bool nxqd_grace_open(void)
{
	return rs.state != RS_CLOSED;
}

struct nxqd_rec_holder *nxqd_grace_claim(pid_t pid, u64 start, u64 old_id,
					 const char *device)
{
	struct nxqd_rs_proc *p = rs.state != RS_CLOSED ? nxqd_rs_find(pid, start) : NULL;
	struct nxqd_rec_holder *r;

	/*
	 * A restore from a process the record does not list (it registered
	 * after the record was last written): listed now, so the window
	 * waits for its NXQD_REQ_RESTORED (or its end) as for the others'.
	 */
	if (!p && rs.state != RS_CLOSED && !nxqd_rs_add(pid, start, &p)) {
		if (nxqd_watch_add(&p->w))
			p->dead = true;
		if (nxqd_verbose)
			fprintf(stderr, "nxquotad: pid %d restores, not in the record: listed\n",
				pid);
		return NULL;
	}
	if (!p || p->done)
		return NULL;
	list_for_each_entry(r, &p->holders, link) {
		if (r->id == old_id && !r->claimed &&
		    !strcmp(r->device, device)) {
			r->claimed = true;
			return r;
		}
	}
	return NULL;
}

void nxqd_grace_registered(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p = rs.state != RS_CLOSED ? nxqd_rs_find(pid, start) : NULL;

	if (!p)
		return;
	p->seen++;
	p->last_ns = nxqd_now();
	nxqd_grace_check();
}

void nxqd_grace_done(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p = rs.state != RS_CLOSED ? nxqd_rs_find(pid, start) : NULL;

	if (!p)
		return;
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: pid %d restored (version 1)\n", (int)pid);
	p->done = true;
	nxqd_grace_check();
}

void nxqd_grace_charged(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p = rs.state != RS_CLOSED ? nxqd_rs_find(pid, start) : NULL;

	/* version 0: a charge after its last registration */
	if (p && !p->done && p->seen >= p->nr_holders) {
		p->done = true;
		nxqd_grace_check();
	}
}

/*
 * Version 0: an unclaimed holder of the process on @device that held at
 * least @bytes, the one that held exactly that if there is one, else the
 * smallest.
 */
static struct nxqd_rec_holder *nxqd_rs_v0_claim(pid_t pid, u64 start,
						 const char *device, u64 bytes)
{
	struct nxqd_rs_proc *p = nxqd_rs_find(pid, start);
	struct nxqd_rec_holder *r, *best = NULL;

	if (!p)
		return NULL;
	list_for_each_entry(r, &p->holders, link) {
		if (r->claimed || r->charge < bytes || strcmp(r->device, device))
			continue;
		if (!best || r->charge < best->charge)
			best = r;
		if (r->charge == bytes)
			break;
	}
	if (best)
		best->claimed = true;
	return best;
}

/* Version 0: the unclaimed holder of the process on @device that held most. */
static struct nxqd_rec_holder *nxqd_rs_v0_largest(pid_t pid, u64 start,
						   const char *device)
{
	struct nxqd_rs_proc *p = nxqd_rs_find(pid, start);
	struct nxqd_rec_holder *r, *best = NULL;

	if (!p || p->done)
		return NULL;
	list_for_each_entry(r, &p->holders, link)
		if (!r->claimed && !strcmp(r->device, device) &&
		    (!best || r->charge > best->charge))
			best = r;
	return best;
}

enum nxqd_verdict nxqd_grace_charge(const struct nxqd_grace_ask *a,
				    struct nxqd_held *held)
{
	struct nxqd_rec_holder *r = a->rec;

	held->proc = NULL;
	if (rs.state == RS_CLOSED)
		return NXQD_PASS;
	if (a->v1) {
		held->restore = a->restore;
		held->excess = a->bytes;
		if (!a->restore)
			return NXQD_HOLD;
		if (r && r->restored + a->bytes <= r->charge) {
			r->restored += a->bytes;
			return NXQD_PASS_RESTORE;
		}
		if (r && r->charge > r->restored)
			held->excess -= r->charge - r->restored;
		held->proc = nxqd_rs_find(a->pid, a->start);
		return NXQD_HOLD;
	}
	/* version 0: the first charge on each holder is its restore */
	held->restore = false;
	held->excess = 0;
	if (a->first) {
		if (nxqd_rs_v0_claim(a->pid, a->start, a->device, a->bytes))
			return NXQD_PASS_RESTORE;
		/* more than any holder it had: a restore beyond the record */
		r = nxqd_rs_v0_largest(a->pid, a->start, a->device);
		if (r && a->timeout_ns) {
			r->claimed = true;
			held->restore = true;
			held->excess = a->bytes - r->charge;
			held->proc = r->proc;
			return NXQD_HOLD;
		}
	}
	/* (-EAGAIN leaves the holder's first charge to come) */
	if (!a->timeout_ns)
		return NXQD_AGAIN;
	return NXQD_HOLD;
}

static void nxqd_held_timeout(struct nxqd_timer *t)
{
	struct nxqd_held *h = container_of(t, struct nxqd_held, timer);

	list_del_init(&h->link);
	if (h->proc)
		h->proc->held--;
	h->release(h, -ETIMEDOUT);
	nxqd_grace_check();
}

void nxqd_grace_hold(struct nxqd_held *held, u64 timeout_ns)
{
	struct nxqd_held *pos;

	nxqd_timer_init(&held->timer, nxqd_held_timeout);
	if (held->restore) {
		list_for_each_entry(pos, &rs.held_restore, link)
			if (pos->excess > held->excess)
				break;
		list_add_tail(&held->link, &pos->link);
	} else {
		list_add_tail(&held->link, &rs.held_growth);
	}
	if (held->proc) {
		held->proc->held++;
		nxqd_grace_check();	/* it may be all that was awaited */
	}
	if (timeout_ns)
		nxqd_timer_arm(&held->timer, nxqd_now() + timeout_ns);
}

void nxqd_grace_unhold(struct nxqd_held *held)
{
	if (!list_empty(&held->link) && held->proc) {
		held->proc->held--;
		nxqd_grace_check();
	}
	list_del_init(&held->link);
	nxqd_timer_cancel(&held->timer);
}

static struct nxqd_rs_stat *nxqd_rs_stat(const char *device, bool make)
{
	struct nxqd_rs_stat *s;
	size_t i;

	for (i = 0; i < rs.nstats; i++)
		if (!strcmp(rs.stats[i].device, device))
			return &rs.stats[i];
	if (!make)
		return NULL;
	s = realloc(rs.stats, (rs.nstats + 1) * sizeof(*s));
	if (!s)
		return NULL;
	rs.stats = s;
	s = &rs.stats[rs.nstats++];
	memset(s, 0, sizeof(*s));
	strscpy(s->device, device, sizeof(s->device));
	return s;
}

void nxqd_grace_restore_result(const char *device, u64 bytes, int err)
{
	struct nxqd_rs_stat *s = nxqd_rs_stat(device, true);

	if (!s)
		return;
	if (err && nxqd_verbose)
		fprintf(stderr, "nxquotad: a restore of %llu on %s refused: %d\n",
			(unsigned long long)bytes, device, err);
	if (err)
		s->refused += bytes;
	else
		s->restored += bytes;
}

void nxqd_grace_stats(const char *device, u64 *restored, u64 *refused)
{
	struct nxqd_rs_stat *s = nxqd_rs_stat(device, false);

	*restored = s ? s->restored : 0;
	*refused = s ? s->refused : 0;
}

/*
 * List process @pid started at @start, its pidfd to be watched (not yet:
 * nxqd_watch_add() when the window opens, or at once if it is open).
 */
static int nxqd_rs_add(pid_t pid, u64 start, struct nxqd_rs_proc **pp)
{
	int fd = nxqd_proc_pidfd(pid, start);
	struct nxqd_rs_proc *p;

	if (fd < 0)
		return fd;
	p = calloc(1, sizeof(*p));
	if (!p) {
		close(fd);
		return -ENOMEM;
	}
	p->pid = pid;
	p->start = start;
	INIT_LIST_HEAD(&p->holders);
	p->w.fd = fd;
	p->w.events = EPOLLIN;
	p->w.fn = nxqd_rs_exited;
	p->w.dead = true;
	list_add_tail(&p->link, &rs.procs);
	*pp = p;
	return 0;
}

/* ---- start and stop ---- */

/* Read the record left in the state directory: the holders of the living. */
static int nxqd_record_load(void)
{
	unsigned long long start, id, charge;
	char line[256], dev[NXQ_DEVICE_KEY_MAX + 1];
	struct nxqd_rec_holder *r;
	struct nxqd_rs_proc *p;
	size_t n = 0;
	FILE *f;
	int pid, lineno = 0;

	f = fopen(rs.file, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	while (fgets(line, sizeof(line), f) && n < NXQD_RECORD_MAX) {
		if (!lineno++) {
			if (strncmp(line, RECORD_MAGIC, strlen(RECORD_MAGIC)))
				break;	/* not ours: nothing to restore */
			continue;
		}
		if (sscanf(line, "holder %d %llu %llu %64s %llu", &pid, &start,
			   &id, dev, &charge) != 5 || pid <= 0 ||
		    !nxq_device_key_valid(dev))
			continue;
		p = nxqd_rs_find(pid, start);
		if (!p) {
			int err = nxqd_rs_add(pid, start, &p);

			if (err == -ENOMEM)
				break;
			if (err)
				continue;	/* gone, or its pid reused */
		}
		r = calloc(1, sizeof(*r));
		if (!r)
			break;
		r->proc = p;
		r->id = id;
		strscpy(r->device, dev, sizeof(r->device));
		r->charge = charge;
		list_add_tail(&r->link, &p->holders);
		p->nr_holders++;
		n++;
	}
	fclose(f);
	return 0;
}

int nxqd_restart_init(const char *dir, unsigned int grace_ms,
		      unsigned int record_ms,
		      const struct nxqd_restart_ops *ops)
{
	struct nxqd_rs_proc *p;
	unsigned int alive = 0;
	char old[PATH_MAX + 16];
	int err;

	rs.ops = ops;
	rs.grace_ms = grace_ms;
	rs.record_ms = record_ms;
	nxqd_timer_init(&rs.end, nxqd_grace_end);
	nxqd_timer_init(&rs.settle, nxqd_grace_settle);
	nxqd_timer_init(&rs.step, nxqd_grace_step);
	nxqd_timer_init(&rs.record, nxqd_record_due);
	if (!dir)
		return 0;
	if (snprintf(rs.file, sizeof(rs.file), "%s/record", dir) >=
	    (int)sizeof(rs.file)) {
		rs.file[0] = '\0';
		return -ENAMETOOLONG;
	}
	snprintf(rs.tmp, sizeof(rs.tmp), "%s.tmp", rs.file);
	if (mkdir(dir, 0700) && errno != EEXIST)
		return -errno;
	/* the first protocol's list of pids, without amounts: no use now */
	snprintf(old, sizeof(old), "%s/clients", dir);
	unlink(old);
	err = nxqd_record_load();
	if (err)
		return err;
	list_for_each_entry(p, &rs.procs, link) {
		if (grace_ms && !nxqd_watch_add(&p->w))
			alive++;
		else
			p->dead = true;
	}
	if (alive) {
		rs.state = RS_OPEN;
		nxqd_timer_arm(&rs.end, nxqd_now() +
				       (u64)grace_ms * NSEC_PER_MSEC);
	}
	if (nxqd_verbose)
		fprintf(stderr,
			"nxquotad: %u recorded process(es) alive, grace %u ms\n",
			alive, rs.state != RS_CLOSED ? grace_ms : 0);
	return 0;
}

void nxqd_restart_exit(void)
{
	struct nxqd_rs_proc *p, *ptmp;
	struct nxqd_rec_holder *r, *rtmp;

	nxqd_timer_cancel(&rs.end);
	nxqd_timer_cancel(&rs.settle);
	nxqd_timer_cancel(&rs.step);
	nxqd_timer_cancel(&rs.record);
	rs.state = RS_CLOSED;
	list_for_each_entry_safe(p, ptmp, &rs.procs, link) {
		nxqd_watch_del(&p->w);
		close(p->w.fd);
		list_for_each_entry_safe(r, rtmp, &p->holders, link)
			free(r);
		list_del(&p->link);
		free(p);
	}
	free(rs.stats);
	rs.stats = NULL;
	rs.nstats = 0;
	rs.file[0] = '\0';
}

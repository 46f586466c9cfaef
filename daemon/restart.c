// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's restart: what each holder held (the record) and the grace
 * window after a restart (the protocol is in <linux/nxquotad.h>).
 *
 * The record, STATEDIR/record, is a log of lines:
 *
 *   nxquotad-record 3
 *   holder PID START ID DEVICE CHARGE
 *   ...
 *
 * START is the process's start time (/proc/PID/stat field 22), ID the
 * holder's id on the daemon that wrote the line, CHARGE what it held.  A
 * later line for the same (PID, START, ID) replaces an earlier one; a
 * CHARGE of 0 ends the holder.  A snapshot (tmp, rename: a compaction)
 * starts it; then each change of a holder's charge appends a line (one
 * write(), no fsync: it is for a crash of the daemon, not of the node)
 * before the change is answered (nxqd_record_note()), so a restore never
 * asks for more than the record says ("What the record can lose",
 * daemon/README.md).  Growth whose line fails is undone; the next note
 * compacts first.  Compactions run at most every record_ms once the log
 * is twice its snapshot (O(1) amortised), at the window's close and at
 * stop.
 *
 * A start that finds a record keeps its processes still alive (same pid
 * and start time; each is watched by a pidfd), the holders with a charge,
 * and opens the grace window for grace_ms.  While it is open only
 * restores are granted, and only to the process the record names, up to
 * what the record has for the holder it claims:
 *  - version 1: the registration (NXQD_REQ_RESTORE) claims the holder by
 *    its old id; a restore charge up to what the record has left for it
 *    passes at once; one for more is refused (-ERANGE): the process asks
 *    for what it never held.
 *  - version 0: a listed process's first charge on a holder it registered
 *    again claims an unclaimed holder of it on that device that held
 *    exactly that much, else the smallest that held more, and passes.
 * Every other charge -- growth, a restore from a process or for a holder
 * the record does not have, version 0's first charge for more than any
 * holder it had -- is held (struct nxqd_held) in arrival order until the
 * window closes, or refused with -EAGAIN (version 0 without a wait).  So
 * the room of every recorded byte is kept for its holder: nothing but
 * restores within the record is granted while the window is open, and
 * their sum is at most what the ledger held before the restart, whatever
 * order they come in.
 *
 * The window closes when every listed process is restored (each of its
 * recorded holders restored, or version 1's NXQD_REQ_RESTORED), gone, or
 * blocked on a charge the window holds (it can go no further), or at its
 * end; then the held charges are released in order.
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

#define RECORD_MAGIC		"nxquotad-record 3"
/* The most lines a record is read for. */
#define NXQD_RECORD_MAX		(1 << 22)
/* A log this much longer than its snapshot is compacted. */
#define NXQD_RECORD_SLACK	1024
#define NXQD_RS_BUCKETS		1024

struct nxqd_rs_proc;

struct nxqd_rec_holder {
	struct list_head link;		/* in its process's holders */
	struct nxqd_rs_proc *proc;
	u64 id;				/* on the daemon that went away */
	char device[NXQ_DEVICE_KEY_MAX];
	u64 charge;			/* what it held then */
	u64 restored;			/* what its restores took back */
	bool claimed;			/* a registration or first charge took it */
	bool settled;			/* its restore passed */
	bool retired;			/* its line was ended in the record */
};

struct nxqd_rs_proc {
	struct list_head link;		/* rs.procs */
	struct nxqd_rs_proc *hnext;	/* rs.hash */
	pid_t pid;
	u64 start;
	struct nxqd_watch w;		/* its pidfd, while the window is open */
	struct list_head holders;
	unsigned int nr_holders;
	unsigned int settled;		/* holders whose restore passed */
	unsigned int held;		/* its charges the window holds */
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
	struct nxqd_rs_proc *hash[NXQD_RS_BUCKETS];
	enum { RS_CLOSED, RS_OPEN } state;
	struct nxqd_timer end, step, record;
	int jfd;			/* the record, open to append */
	u64 lines, snap_lines;		/* in it; in its snapshot */
	u64 max_id;			/* the largest id it had at start */
	bool broken, frozen;
	u64 last_write;
	struct list_head held;		/* in order */
	struct nxqd_rs_stat *stats;
	size_t nstats;
} rs = {
	.procs = LIST_HEAD_INIT(rs.procs),
	.held = LIST_HEAD_INIT(rs.held),
	.jfd = -1,
};

/* ---- the record ---- */

static int nxqd_rec_fmt(char *buf, size_t len, const struct nxqd_rec_line *l)
{
	return snprintf(buf, len, "holder %d %llu %llu %s %llu\n", l->pid,
			(unsigned long long)l->start, (unsigned long long)l->id,
			l->device, (unsigned long long)l->charge);
}

static void nxqd_record_emit(void *ctx, const struct nxqd_rec_line *l)
{
	char buf[256];

	if (!l->charge)
		return;		/* a holder with nothing has nothing to restore */
	nxqd_rec_fmt(buf, sizeof(buf), l);
	fputs(buf, ctx);
	rs.snap_lines++;
}

/*
 * Compaction: a snapshot of every holder with a charge (and, while the
 * window is open, what listed processes have yet to restore) replaces the
 * record, and the log goes on in it.
 */
int nxqd_record_write(void)
{
	struct nxqd_rs_proc *p;
	struct nxqd_rec_holder *r;
	int fd, kfd = -1, err = 0;
	FILE *f;

	if (!rs.file[0] || !rs.ops || rs.frozen)
		return 0;
	nxqd_timer_cancel(&rs.record);
	rs.last_write = nxqd_now();
	rs.snap_lines = 0;
	fd = open(rs.tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd >= 0)
		kfd = fcntl(fd, F_DUPFD_CLOEXEC, 0);
	f = kfd >= 0 ? fdopen(fd, "w") : NULL;
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

			/*
			 * What has yet to pass stays; a restore that passed
			 * is under its new id (its line was written with
			 * the charge's answer).
			 */
			if (!r->settled) {
				nxqd_record_emit(f, &l);
				r->retired = false;
			} else {
				r->retired = true;	/* not in this one */
			}
		}
	}
	if (fflush(f) || ferror(f))
		err = -errno ? -errno : -EIO;
	if (fclose(f) && !err)
		err = -errno;
	if (!err && rename(rs.tmp, rs.file))
		err = -errno;
	if (!err && fcntl(kfd, F_SETFL, O_APPEND))
		err = -errno;
out:
	if (err) {
		if (kfd >= 0)
			close(kfd);
		unlink(rs.tmp);
		fprintf(stderr, "nxquotad: cannot write the record %s: %s\n",
			rs.file, strerror(-err));
		rs.broken = true;
		/* again later */
		nxqd_record_dirty();
		return err;
	}
	if (rs.jfd >= 0)
		close(rs.jfd);
	rs.jfd = kfd;
	rs.lines = rs.snap_lines;
	rs.broken = false;
	return 0;
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

	if (nxqd_timer_armed(&rs.record) || !rs.file[0] || rs.frozen)
		return;
	at = rs.last_write + (u64)rs.record_ms * NSEC_PER_MSEC;
	nxqd_timer_arm(&rs.record, max(at, nxqd_now()));
}

/* Append @len bytes of lines: 0, or -errno (the record must be compacted). */
static int nxqd_record_append(const char *buf, size_t len, unsigned int n)
{
	ssize_t w;

	if (rs.broken || rs.jfd < 0) {
		int err = nxqd_record_write();

		if (err)
			return err;
	}
	w = write(rs.jfd, buf, len);
	if (w != (ssize_t)len) {
		/* a short line may be in it: the next note compacts first */
		rs.broken = true;
		nxqd_record_dirty();
		return w < 0 ? -errno : -ENOSPC;
	}
	rs.lines += n;
	if (rs.lines > 2 * rs.snap_lines + NXQD_RECORD_SLACK)
		nxqd_record_dirty();
	return 0;
}

int nxqd_record_note(const struct nxqd_rec_line *l, struct nxqd_rec_holder *old)
{
	char buf[512];
	int len, err;

	if (!rs.file[0] || rs.frozen)
		return 0;
	len = nxqd_rec_fmt(buf, sizeof(buf), l);
	/* a restored holder's line under its old id ends with the first */
	if (old && !old->retired) {
		struct nxqd_rec_line o = {
			.pid = old->proc->pid, .start = old->proc->start,
			.id = old->id, .device = old->device, .charge = 0,
		};

		len += nxqd_rec_fmt(buf + len, sizeof(buf) - len, &o);
	}
	err = nxqd_record_append(buf, len, old && !old->retired ? 2 : 1);
	if (!err && old)
		old->retired = true;
	return err;
}

u64 nxqd_record_max_id(void)
{
	return rs.max_id;
}

/* ---- the window ---- */

static void nxqd_grace_check(void);

static struct nxqd_rs_proc **nxqd_rs_slot(pid_t pid)
{
	return &rs.hash[(u32)pid % NXQD_RS_BUCKETS];
}

static struct nxqd_rs_proc *nxqd_rs_find(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p;

	for (p = *nxqd_rs_slot(pid); p; p = p->hnext)
		if (p->pid == pid && p->start == start)
			return p;
	return NULL;
}

/* A listed process still restoring, or NULL. */
static struct nxqd_rs_proc *nxqd_rs_live(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p = nxqd_rs_find(pid, start);

	return p && !p->done && !p->dead ? p : NULL;
}

static void nxqd_rs_exited(struct nxqd_watch *w, u32 revents)
{
	struct nxqd_rs_proc *p = container_of(w, struct nxqd_rs_proc, w);

	p->dead = true;
	nxqd_watch_del(&p->w);
	nxqd_grace_check();
}

static void nxqd_grace_close(void)
{
	struct nxqd_rs_proc *p;
	struct nxqd_held *h;

	rs.state = RS_CLOSED;
	nxqd_timer_cancel(&rs.end);
	nxqd_timer_cancel(&rs.step);
	list_for_each_entry(p, &rs.procs, link)
		nxqd_watch_del(&p->w);
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: grace window closed\n");
	/* what was not restored is forgotten: out of the record first */
	nxqd_record_write();
	/* then the held charges, in the order they came */
	while (!list_empty(&rs.held)) {
		h = list_first_entry(&rs.held, struct nxqd_held, link);
		list_del_init(&h->link);
		nxqd_timer_cancel(&h->timer);
		if (h->proc)
			h->proc->held--;
		h->release(h, 0);
	}
}

/* The window's step, on a timer: closed once each listed process is done. */
static void nxqd_grace_step(struct nxqd_timer *t)
{
	struct nxqd_rs_proc *p;

	if (rs.state == RS_CLOSED)
		return;
	list_for_each_entry(p, &rs.procs, link)
		if (!p->done && !p->dead && !p->held)
			return;
	nxqd_grace_close();
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

bool nxqd_grace_open(void)
{
	return rs.state != RS_CLOSED;
}

/* @p is restored: what it did not claim is out of the record. */
static void nxqd_rs_done(struct nxqd_rs_proc *p)
{
	struct nxqd_rec_holder *r;

	p->done = true;
	list_for_each_entry(r, &p->holders, link) {
		struct nxqd_rec_line l = {
			.pid = p->pid, .start = p->start, .id = r->id,
			.device = r->device, .charge = 0,
		};

		if (!r->settled && !r->retired && !nxqd_record_note(&l, NULL))
			r->retired = true;
	}
	nxqd_grace_check();
}

static void nxqd_rs_settle(struct nxqd_rec_holder *r)
{
	struct nxqd_rs_proc *p = r->proc;

	if (r->settled)
		return;
	r->settled = true;
	if (++p->settled == p->nr_holders && !p->done) {
		if (nxqd_verbose)
			fprintf(stderr, "nxquotad: pid %d restored every holder it had\n",
				(int)p->pid);
		nxqd_rs_done(p);
	}
}

struct nxqd_rec_holder *nxqd_grace_claim(pid_t pid, u64 start, u64 old_id,
					 const char *device)
{
	struct nxqd_rs_proc *p = rs.state != RS_CLOSED ?
				 nxqd_rs_live(pid, start) : NULL;
	struct nxqd_rec_holder *r;

	/* a process the record does not name restores nothing */
	if (!p)
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

void nxqd_grace_done(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p = nxqd_rs_find(pid, start);

	/* (the window may have closed: it had restored every holder) */
	if (!p || p->dead)
		return;
	if (nxqd_verbose)
		fprintf(stderr, "nxquotad: pid %d restored (version 1)\n", (int)pid);
	if (rs.state != RS_CLOSED && !p->done)
		nxqd_rs_done(p);
}

/*
 * Version 0: an unclaimed holder of the process on @device that held
 * exactly @bytes, else the smallest that held more; claimed.
 */
static struct nxqd_rec_holder *nxqd_rs_v0_claim(struct nxqd_rs_proc *p,
						 const char *device, u64 bytes)
{
	struct nxqd_rec_holder *r, *best = NULL;

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

enum nxqd_verdict nxqd_grace_charge(const struct nxqd_grace_ask *a,
				    struct nxqd_held *held,
				    struct nxqd_rec_holder **claim)
{
	struct nxqd_rec_holder *r = a->rec;
	struct nxqd_rs_proc *p;

	held->proc = NULL;
	if (rs.state == RS_CLOSED)
		return NXQD_PASS;
	p = nxqd_rs_live(a->pid, a->start);
	if (a->v1 && a->restore && r && r->proc == p && p) {
		if (a->bytes > r->charge - r->restored) {
			if (nxqd_verbose)
				fprintf(stderr, "nxquotad: pid %d asks %llu back, the record has %llu: refused\n",
					(int)a->pid, (unsigned long long)a->bytes,
					(unsigned long long)(r->charge - r->restored));
			return NXQD_BEYOND;
		}
		r->restored += a->bytes;
		nxqd_rs_settle(r);
		return NXQD_PASS_RESTORE;
	}
	/* version 0: the first charge on each holder is its restore */
	if (!a->v1 && a->first && p) {
		r = nxqd_rs_v0_claim(p, a->device, a->bytes);
		if (r) {
			r->restored = a->bytes;
			*claim = r;
			nxqd_rs_settle(r);
			return NXQD_PASS_RESTORE;
		}
	}
	/* growth, or a restore the record does not have: after the window */
	if (!a->v1 && !a->timeout_ns)
		return NXQD_AGAIN;
	held->proc = p;
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
	nxqd_timer_init(&held->timer, nxqd_held_timeout);
	list_add_tail(&held->link, &rs.held);
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

/* ---- start and stop ---- */

/*
 * Process @pid started at @start, as the record names it: listed with a
 * pidfd to be watched when the window opens if it is still that process,
 * else kept as dead (its lines are skipped without another look).
 */
static struct nxqd_rs_proc *nxqd_rs_get(pid_t pid, u64 start)
{
	struct nxqd_rs_proc *p = nxqd_rs_find(pid, start);
	int fd;

	if (p)
		return p;
	p = calloc(1, sizeof(*p));
	if (!p)
		return NULL;
	fd = nxqd_proc_pidfd(pid, start);
	p->pid = pid;
	p->start = start;
	INIT_LIST_HEAD(&p->holders);
	p->w.fd = fd;
	p->w.events = EPOLLIN;
	p->w.fn = nxqd_rs_exited;
	p->w.dead = true;
	p->dead = fd < 0;
	list_add_tail(&p->link, &rs.procs);
	p->hnext = *nxqd_rs_slot(pid);
	*nxqd_rs_slot(pid) = p;
	return p;
}

static void nxqd_rs_free(struct nxqd_rs_proc *p)
{
	struct nxqd_rec_holder *r, *rtmp;

	list_for_each_entry_safe(r, rtmp, &p->holders, link)
		free(r);
	if (p->w.fd >= 0) {
		nxqd_watch_del(&p->w);
		close(p->w.fd);
	}
	list_del(&p->link);
	free(p);
}

/* One line of the record: the holder's charge now, 0 ends it. */
static int nxqd_record_apply(pid_t pid, u64 start, u64 id, const char *dev,
			     u64 charge)
{
	struct nxqd_rs_proc *p = nxqd_rs_get(pid, start);
	struct nxqd_rec_holder *r;

	if (!p)
		return -ENOMEM;
	rs.max_id = max(rs.max_id, id);
	if (p->dead)
		return 0;
	list_for_each_entry(r, &p->holders, link) {
		if (r->id != id)
			continue;
		if (charge && !strcmp(r->device, dev)) {
			r->charge = charge;
		} else if (!charge) {
			list_del(&r->link);
			p->nr_holders--;
			free(r);
		}
		return 0;
	}
	if (!charge)
		return 0;
	r = calloc(1, sizeof(*r));
	if (!r)
		return -ENOMEM;
	r->proc = p;
	r->id = id;
	strscpy(r->device, dev, sizeof(r->device));
	r->charge = charge;
	list_add_tail(&r->link, &p->holders);
	p->nr_holders++;
	return 0;
}

/* Read the record left in the state directory: the holders of the living. */
static int nxqd_record_load(void)
{
	unsigned long long start, id, charge;
	char line[256], dev[NXQ_DEVICE_KEY_MAX + 1];
	struct nxqd_rs_proc *p, *tmp;
	size_t len, n = 0;
	FILE *f;
	int pid, err = 0;

	f = fopen(rs.file, "re");
	if (!f)
		return errno == ENOENT ? 0 : -errno;
	if (!fgets(line, sizeof(line), f) ||
	    strncmp(line, RECORD_MAGIC "\n", sizeof(RECORD_MAGIC))) {
		fclose(f);
		fprintf(stderr, "nxquotad: %s is not a record of this version: nothing to restore\n",
			rs.file);
		return 0;
	}
	while (!err && fgets(line, sizeof(line), f) && n++ < NXQD_RECORD_MAX) {
		len = strlen(line);
		/* the last line may have been cut by the crash: not a line */
		if (!len || line[len - 1] != '\n')
			break;
		if (sscanf(line, "holder %d %llu %llu %64s %llu", &pid, &start,
			   &id, dev, &charge) != 5 || pid <= 0 ||
		    !nxq_device_key_valid(dev))
			continue;
		err = nxqd_record_apply(pid, start, id, dev, charge);
	}
	fclose(f);
	/* the dead, and processes left with nothing, are not waited for */
	list_for_each_entry_safe(p, tmp, &rs.procs, link) {
		if (!p->dead && p->nr_holders)
			continue;
		nxqd_rs_free(p);	/* (the hash is rebuilt below) */
	}
	memset(rs.hash, 0, sizeof(rs.hash));
	list_for_each_entry(p, &rs.procs, link) {
		p->hnext = *nxqd_rs_slot(p->pid);
		*nxqd_rs_slot(p->pid) = p;
	}
	return err;
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
	/*
	 * The log starts again from what is left to restore; if it cannot
	 * be written, growth is refused until it can (nxqd_record_note()).
	 */
	nxqd_record_write();
	return 0;
}

void nxqd_restart_exit(void)
{
	struct nxqd_rs_proc *p, *ptmp;

	nxqd_timer_cancel(&rs.end);
	nxqd_timer_cancel(&rs.step);
	nxqd_timer_cancel(&rs.record);
	rs.state = RS_CLOSED;
	list_for_each_entry_safe(p, ptmp, &rs.procs, link)
		nxqd_rs_free(p);
	memset(rs.hash, 0, sizeof(rs.hash));
	if (rs.jfd >= 0)
		close(rs.jfd);
	rs.jfd = -1;
	free(rs.stats);
	rs.stats = NULL;
	rs.nstats = 0;
	rs.file[0] = '\0';
}

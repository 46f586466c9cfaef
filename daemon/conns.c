// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's bounds on client connections: who may connect, so that no
 * tenant can keep another's new processes out (issue 32, item 4).
 *
 * A connection counts against its process (-P), its uid (-U), all of
 * them (-N) and its tenant subtree (-K): the cgroup of the connecting
 * process, unless that cgroup lies in a delegated subtree -- directories
 * someone other than root may write (owner not uid 0, or writable by
 * group or others): whoever holds one can make child cgroups and move its
 * processes among them at will -- in which case the top of that subtree
 * (the highest ancestor reached through such directories, never the
 * cgroup2 root).  Making cgroups therefore does not multiply a tenant's
 * share.  Subtrees are made by root only (the runtime's containers, the
 * delegations it grants).
 *
 * Reserve (-Q): a subtree's first -Q connections (at most -K) count but
 * are admitted whatever the bounds per uid and in all say; beyond them a
 * connection needs room under every bound.  So however many connections
 * some uids hold -- two uids filling -N, one uid in many subtrees filling
 * -U -- a neighbour's new process in another subtree still connects.
 * The connections in all are at most -N plus -Q per subtree; the daemon
 * raises its descriptor limit, and a connection it has no descriptor for
 * is refused and counted (client.c).
 *
 * Objects (the loop's): struct nxqd_count, one per uid and one per
 * subtree with connections, from the first connection to the last one's
 * close; a connection holds one reference on each (struct nxqd_slot).
 *
 * Layer: calls proc.c and dcgroup.c; client.c calls it.
 */
#include <linux/types.h>
#include <limits.h>
#include <stdio.h>
#include <sys/epoll.h>
#include <sys/stat.h>

#include "nxqd.h"

unsigned int nxqd_conns_max = NXQD_CONNS_MAX;
unsigned int nxqd_conn_per_cgroup = NXQD_CONN_PER_CGROUP;
unsigned int nxqd_conn_per_uid = NXQD_CONN_PER_UID;
unsigned int nxqd_conn_per_proc = NXQD_CONN_PER_PROC;
unsigned int nxqd_conn_reserve = NXQD_CONN_RESERVE;

#define NXQD_COUNT_BUCKETS	1024

struct nxqd_count {
	u64 key;
	unsigned int n;
	u64 turn;			/* per subtree: the loop's turn it was served */
	u64 park_until;			/* per subtree: nothing read before (ns) */
	struct list_head parked;	/* per subtree: its slots not polled */
	struct nxqd_timer unpark;	/* per subtree: at park_until */
	struct nxqd_count *next;
};

struct nxqd_counts {
	struct nxqd_count *b[NXQD_COUNT_BUCKETS];
};

static struct {
	struct nxqd_counts per_uid, per_tree;
	unsigned int nr;		/* connections in all */
} nxqd_cn;

/* A subtree's penalty is over: its connections are read again. */
static void nxqd_unpark(struct nxqd_timer *t)
{
	struct nxqd_count *c = container_of(t, struct nxqd_count, unpark);
	struct nxqd_slot *s, *tmp;

	list_for_each_entry_safe(s, tmp, &c->parked, park) {
		list_del_init(&s->park);
		nxqd_watch_mod(s->w, s->w->events | EPOLLIN);
	}
}

/* @key's count (made at 0 if absent), or NULL: out of memory. */
static struct nxqd_count *nxqd_count_get(struct nxqd_counts *t, u64 key)
{
	struct nxqd_count **pp = &t->b[key % NXQD_COUNT_BUCKETS], *c;

	for (c = *pp; c; c = c->next)
		if (c->key == key)
			return c;
	c = calloc(1, sizeof(*c));
	if (!c)
		return NULL;
	c->key = key;
	INIT_LIST_HEAD(&c->parked);
	nxqd_timer_init(&c->unpark, nxqd_unpark);
	c->next = *pp;
	*pp = c;
	return c;
}

/* One connection fewer on @c; it goes with its last. */
static void nxqd_count_put(struct nxqd_counts *t, struct nxqd_count *c)
{
	struct nxqd_count **pp = &t->b[c->key % NXQD_COUNT_BUCKETS];

	if (c->n && --c->n)
		return;
	for (; *pp; pp = &(*pp)->next) {
		if (*pp == c) {
			*pp = c->next;
			nxqd_timer_cancel(&c->unpark);
			free(c);
			return;
		}
	}
}

/* May someone other than root write this cgroup directory (make cgroups in it)? */
static bool nxqd_delegated(const struct stat *st)
{
	return st->st_uid != 0 || (st->st_mode & (S_IWGRP | S_IWOTH));
}

/*
 * The tenant subtree of the cgroup at @cg ("/a/b", relative to the
 * cgroup2 root): its id (the directory's inode, the cgroup id), 0 if the
 * directory cannot be found.
 */
static u64 nxqd_tree_of(const char *cg)
{
	const char *root = nxqd_cgroup_root();
	size_t rl = strlen(root);
	char full[PATH_MAX + 8], *slash;
	struct stat st;
	u64 id;

	if (snprintf(full, sizeof(full), "%s%s", root, strcmp(cg, "/") ? cg : "") >=
	    (int)sizeof(full) || stat(full, &st) || !S_ISDIR(st.st_mode))
		return 0;
	id = st.st_ino;
	while (nxqd_delegated(&st)) {
		slash = strrchr(full + rl, '/');
		if (!slash || slash == full + rl)
			break;		/* its parent is the root: the top */
		*slash = '\0';
		if (stat(full, &st) || !S_ISDIR(st.st_mode) || !nxqd_delegated(&st))
			break;
		id = st.st_ino;
	}
	return id;
}

/* The tenant subtree of @p now (0: its cgroup could not be read). */
static u64 nxqd_conn_tree(struct nxqd_proc *p)
{
	char cg[PATH_MAX];

	if (nxqd_proc_cgroup_path(p, cg, sizeof(cg)))
		return 0;
	return nxqd_tree_of(cg);
}

const char *nxqd_conn_admit(struct nxqd_slot *s, struct nxqd_proc *p, uid_t uid)
{
	unsigned int reserve = min(nxqd_conn_reserve, nxqd_conn_per_cgroup);
	struct nxqd_count *u, *t;
	const char *why;

	s->uid = s->tree = NULL;
	INIT_LIST_HEAD(&s->park);
	if (p->nr_conns >= nxqd_conn_per_proc)
		return "its process's (-P)";
	u = nxqd_count_get(&nxqd_cn.per_uid, uid);
	t = u ? nxqd_count_get(&nxqd_cn.per_tree, nxqd_conn_tree(p)) : NULL;
	if (!u || !t) {
		if (u && !u->n)
			nxqd_count_put(&nxqd_cn.per_uid, u);
		return "out of memory";
	}
	if (t->n >= nxqd_conn_per_cgroup)
		goto over;
	/* within its subtree's reserve: whatever its uid and the others hold */
	if (t->n >= reserve &&
	    (u->n >= nxqd_conn_per_uid || nxqd_cn.nr >= nxqd_conns_max))
		goto over;
	u->n++;
	t->n++;
	p->nr_conns++;
	nxqd_cn.nr++;
	s->uid = u;
	s->tree = t;
	return NULL;
over:
	why = t->n >= nxqd_conn_per_cgroup ? "its cgroup subtree's (-K)" :
	      u->n >= nxqd_conn_per_uid ? "its uid's (-U)" : "all clients' (-N)";
	if (!u->n)
		nxqd_count_put(&nxqd_cn.per_uid, u);
	if (!t->n)
		nxqd_count_put(&nxqd_cn.per_tree, t);
	return why;
}

void nxqd_conn_release(struct nxqd_slot *s, struct nxqd_proc *p)
{
	if (s->park.next)	/* admitted, or tried */
		list_del_init(&s->park);
	if (!s->uid)
		return;
	nxqd_count_put(&nxqd_cn.per_uid, s->uid);
	nxqd_count_put(&nxqd_cn.per_tree, s->tree);
	s->uid = s->tree = NULL;
	p->nr_conns--;
	nxqd_cn.nr--;
}

bool nxqd_conn_turn(struct nxqd_slot *s, struct nxqd_watch *w)
{
	struct nxqd_count *t = s->tree;
	u64 turn = nxqd_loop_turn();

	if (t->park_until && nxqd_now() < t->park_until) {
		/* not polled for reading until the subtree's timer */
		if (list_empty(&s->park)) {
			s->w = w;
			list_add_tail(&s->park, &t->parked);
		}
		nxqd_watch_mod(w, w->events & ~EPOLLIN);
		return false;
	}
	t->park_until = 0;
	if (t->turn == turn)
		return false;
	t->turn = turn;
	return true;
}

/*
 * Descriptors no command takes came with a request of @s's (more than
 * NXQD_FDS_RECV, or any with a command other than HOLDER_REGISTER): no
 * client of ours sends them, and each costs the loop their install and
 * close, and the kernel's release of those it dropped -- about twice a
 * plain request's time (issue 32: 4 loops passing 253 each cost a
 * neighbour's pair 2.1-2.6x on an idle 16-core host).  Nothing more is
 * read from that subtree's connections for NXQD_PENALTY_US (they are
 * not polled for reading meanwhile: the loop does not spin on them).
 * Nobody else is touched: the penalty is its own subtree's.
 */
void nxqd_conn_penalize(struct nxqd_slot *s)
{
	struct nxqd_count *t = s->tree;

	t->park_until = nxqd_now() + NXQD_PENALTY_US * NSEC_PER_USEC;
	nxqd_timer_arm(&t->unpark, t->park_until);
}

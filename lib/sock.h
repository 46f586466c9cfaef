/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * nxquotad's client: the kernel ops over its client socket ("nxquotad"),
 * in three files, each calling only those before it:
 *
 *   sock_conn.c     connections, one request and its reply, the pool
 *   sock_restore.c  the holders' table, reconnect and restore, the watcher
 *   sock.c          the kernel ops (nxq__sock_kops), open and close
 *
 * This header is theirs alone: the objects below and their calls.
 *
 * Framing is <linux/nxquotad.h>: one SOCK_SEQPACKET message per request (a
 * struct nxqd_req, then the ioctl's argument struct), one per reply.  Who
 * asks is the kernel's to say (the daemon reads SCM_CREDENTIALS, which the
 * kernel attaches because the daemon set SO_PASSCRED): nothing here sends
 * an identity.  NXQ_IOC_HOLDER_REGISTER carries the device node by
 * SCM_RIGHTS in the same message, and the eventfd before it only to a
 * daemon of protocol 0 or 1.
 *
 * Tickets (protocol 2): a holder is registered with NXQD_REQ_NOTIFY, and
 * the daemon tells it of a ticket by a notice (struct nxqd_notice) on the
 * connection it was registered on, at any time between messages.  The
 * library writes 1 to the holder's eventfd (h->evfd, our duplicate of the
 * arena's, never given to the daemon), which the context's pressure
 * thread watches as before.  A connection's messages are read by one
 * party at a time: the request that took it out of the pool
 * (nxq__sk_conn_take()), whose nxq__sk_xfer() tells each notice it meets
 * and goes on waiting for its reply; or, while it is in the pool, the
 * watcher, with s->mu held (nxq__sk_drain()).  The watcher's epoll set
 * asks for EPOLLIN on a connection only while it is pooled: taking it
 * out turns EPOLLIN off and giving it back on again (nxq__sk_conn_give(),
 * EPOLL_CTL_MOD, which reports data already there), so a notice that
 * comes after a reply, before the connection is back, is read by the
 * watcher then, and a reply never wakes the watcher.  With a daemon of
 * protocol 0 or 1 there are no notices: no EPOLLIN, no EPOLL_CTL_MOD, and
 * the eventfd is passed as before for the daemon to write.
 *
 * Objects (struct sk, the context's kpriv):
 *  - a pool of connections (at most SK_CONNS_MAX): a request pops one,
 *    or connects a new one, and pushes it back when answered.  Holders
 *    are valid on every connection of the process, so a charge waiting
 *    in the daemon holds one connection while the pressure thread reads
 *    and answers its tickets on another; waiting charges never hold the
 *    last one.  Connections are closed only by a reconnect and by close
 *    (a holder ends when its registering connection closes), and when the
 *    daemon refuses a new one (its bound on connections per process):
 *    the pool then keeps to the ones it has.
 *  - the holders (lib ids = table index + 1, stable across reconnects;
 *    the daemon's ids change): what is needed to register one again
 *    (device, priority, our duplicates of its eventfd and device node)
 *    and what the library holds charged through it.
 *
 * Reconnect (s->rw): every request holds s->rw for reading while in
 * flight; a request that sees the daemon go away (ECONNRESET, EPIPE,
 * ENOTCONN, end of file) drops it and takes it for writing in
 * nxq__sk_reconnect().  There no request is in flight, so every connection is
 * in the pool: all are closed (ending any holder still registered on
 * them), a new one is made (retrying up to NXQUOTA_RECONNECT_MS, default
 * 10000), every holder is registered again and its charge charged with
 * NXQ_CHARGE_NOWAIT, and the epoch is bumped.  The failed call is then
 * sent again as new if it is a charge (a charge the daemon was still
 * deciding was never granted), or dropped if it is an uncharge or a
 * ticket answer (the local charge already excludes it, so the restore
 * did too): nothing is granted twice and nothing is lost.
 *
 * The watcher (a thread of its own, sk_watch()): every connection is in an
 * epoll set for EPOLLRDHUP (and, while pooled, EPOLLIN: notices, above).
 * When one hangs up, the watcher takes s->rw
 * for writing (waiting out requests in flight, which fail on the same
 * hang-up), and if a pooled connection has really ended it reconnects and
 * restores at once: an idle process -- one making no call while the
 * daemon restarts -- restores within the daemon's grace window instead
 * of at its next call, which may come after the window or never.  A
 * hang-up of one connection alone (the daemon's bound refusing a new one)
 * finds the others alive and does nothing.  While the daemon stays away
 * (s->broken) the watcher tries again every SK_WATCH_RETRY_MS.
 *
 * Protocol (<linux/nxquotad.h>): NXQ_IOC_VERSION at NXQD_PROTO_VERSION on
 * each new daemon (nxq__sk_hello()); one of version 1 refuses it
 * (-EPROTONOSUPPORT, naming its version) and is spoken to at 1, one of
 * the first protocol refuses any version (-EINVAL) and is spoken to at 0.
 * From version 1 a restore says so (and registers again with
 * NXQD_REQ_NOTIFY at version 2): the
 * registration carries NXQD_REQ_RESTORE and the holder's id on the daemon
 * that went, its charge NXQD_REQ_RESTORE (the daemon grants up to what it
 * recorded for that holder, and may hold the answer until the others have
 * restored), and NXQ_IOC_VERSION with NXQD_REQ_RESTORED ends the restore,
 * so the daemon's grace window closes as soon as every process is back;
 * growth meanwhile waits in the daemon instead of failing.
 *
 * A restore charge answered -EAGAIN (the daemon's grace after a restart
 * holds back a process it did not list) is asked again with
 * NXQ_CHARGE_WAIT, up to NXQUOTA_RECONNECT_MS.
 *
 * A restore the daemon refuses (the memory no longer fits: another
 * process took it meanwhile, a budget was lowered) leaves the holder's
 * charge "unbacked": held by the library, not charged by the daemon.  It
 * is reported once (one line on stderr per context, and the arena sees
 * a pressure ticket: its stats count it, its event hook gets
 * NXQ_EVENT_TICKET with reason NXQ_TICKET_REASON_BUDGET): the holder's
 * eventfd is signalled and the next ticket read returns a ticket made
 * here asking for the unbacked bytes, so the arena gives back what it can
 * through its normal pressure path (pool, idle memory, reclaim
 * callbacks).  Its answer is settled here: released bytes reduce the
 * unbacked part first, and what remains unbacked is asked of the daemon
 * again (NOWAIT).  Until it is granted, the holder's next charge asks
 * for the unbacked bytes too, and its uncharges take from them first.
 *
 * Lock order: s->rw, then s->mu (the pool, the holder table and every
 * holder's fields, each connection's pooled and its EPOLLIN).  No lock but
 * s->rw (read) is held across a request; s->mu is held while a notice is
 * told (a holder found by the daemon's id, its eventfd written: neither
 * waits).  The watcher holds none while it waits, and only s->mu to read
 * a pooled connection.
 *
 * Fork: the context belongs to the parent (nxq__forked(): every op
 * answers -ECHILD in a child); nxq_ctx_close() in the child only closes
 * its copies of the descriptors (sk_forget()), sending nothing.
 */
#ifndef NXQ_SOCK_H
#define NXQ_SOCK_H

#include <pthread.h>
#include <stdint.h>
#include <sys/un.h>

#include "internal.h"
#include <linux/nxquotad.h>

#define SK_CONNS_MAX	8
#define SK_SYN_GEN	(1ULL << 63)	/* generations of restore tickets */
#define SK_IOC(cmd)	((uint32_t)(cmd))
#define SK_WATCH_RETRY_MS 200	/* the watcher's pace while the daemon is away */

struct sk_conn {
	int fd;
	int fresh;			/* no reply read on it yet */
	int waiting;			/* held by a waiting charge */
	int pooled;			/* s->mu: in the pool (the watcher reads it) */
	int epollin;			/* s->mu: EPOLLIN asked of the watcher's set */
	struct sk_conn *next;		/* in the pool */
	struct sk_conn *all;		/* every connection (for sk_forget) */
};

struct sk_holder {
	struct nxq_holder_reg reg;	/* device, priority, flags as registered */
	int evfd, devfd;		/* our duplicates, or -1 (evfd: what notices write) */
	int live;
	uint64_t dmn_id;		/* the daemon's id now; 0: it does not know us */
	uint64_t charged;		/* bytes the library holds charged through it */
	uint64_t unbacked;		/* the part of charged the daemon did not take back */
	uint64_t reclaimable;		/* last reported by the arena */
	uint64_t syn_gen;		/* the restore ticket read, or 0 */
	int syn_pending;		/* a restore ticket waits to be read */
};

struct sk {
	struct sockaddr_un addr;
	pthread_rwlock_t rw;		/* read: a request in flight; write: reconnect */
	pthread_mutex_t mu;
	pthread_cond_t cv;		/* a connection came back */
	struct sk_conn *pool, *all;
	int nconns;
	int cap;			/* SK_CONNS_MAX, lower once the daemon refused one */
	int nwait;			/* connections held by waiting charges */
	unsigned int epoch;		/* bumped by each reconnect */
	uint16_t proto;			/* the daemon's protocol (<linux/nxquotad.h>): 0, 1, 2 */
	int broken;			/* the last reconnect failed */
	struct sk_holder **h;
	int nh, hcap;
	uint64_t reconnect_ms;
	uint64_t syn_next;
	int reported;
	/* the watcher */
	int epfd;			/* every connection, for EPOLLIN and EPOLLRDHUP */
	int stopfd;			/* an eventfd: stop (in that set too) */
	int watching;			/* the thread runs */
	int stopping;			/* close: the reconnect loop gives up */
	pthread_t watcher;
	/* for the tests (s->mu) */
	unsigned long reconnects, restores_refused, conns_made, conns_refused;
	unsigned long notices_req, notices_idle;	/* told in a request, by the watcher */
};

static inline int is_gone(int r)
{
	return r == -ECONNRESET || r == -EPIPE || r == -ENOTCONN || r == -ECONNREFUSED ||
	       r == -ENOENT;
}

/* sock_conn.c: connections and one request (see the functions' comments). */
int nxq__sk_xfer(struct sk *s, int fd, uint16_t ver, uint16_t flags, uint32_t cmd, void *arg,
		 uint32_t len, uint32_t outlen, const int *fds, int nfds, int *errp,
		 uint16_t *repver);
/* A request at the protocol this connection's daemon speaks, no flags. */
#define sk_xfer(fd, ...) nxq__sk_xfer(s, fd, s->proto, 0, __VA_ARGS__, NULL)
void nxq__sk_drain(struct sk *s, struct sk_conn *c);
int nxq__sk_hello(struct sk *s, int fd, struct nxq_version *v, int *errp);
int nxq__sk_connect(const struct sk *s);
struct sk_conn *nxq__sk_conn_new(struct sk *s, int fd);
void nxq__sk_conn_unlink(struct sk *s, struct sk_conn *c);
struct sk_conn *nxq__sk_conn_take(struct sk *s);
void nxq__sk_conn_give(struct sk *s, struct sk_conn *c);
int nxq__sk_req(struct sk *s, uint16_t flags, uint32_t cmd, void *arg, uint32_t len,
		uint32_t outlen, const int *fds, int nfds, int *errp);
int nxq__sk_hreq(struct sk *s, uint32_t cmd, void *arg, uint32_t len, uint32_t outlen,
		 int *errp);

/* sock_restore.c: the holders, reconnect and restore, the watcher. */
struct sk_holder *nxq__sk_holder_get(struct sk *s, uint64_t id);
int nxq__sk_holder_fds(const struct sk *s, const struct sk_holder *h,
		       struct nxq_holder_reg *reg, int fds[2], uint16_t *flags);
int nxq__sk_reconnect(struct nxq_ctx *ctx, unsigned int epoch);
int nxq__sk_readopt(struct nxq_ctx *ctx, uint64_t holder);
int nxq__sk_watch_start(struct sk *s);

#endif /* NXQ_SOCK_H */

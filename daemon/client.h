/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Between the client socket's files, lowest first (a file calls only
 * those below it):
 *
 *   client_obj.c  the holders' table, a connection's references, replies
 *   client_cmd.c  the handlers of the ABI's command table (kmod/abi.c)
 *   client.c      the transport, who the caller is, connections, the socket
 *
 * Objects (all the loop's):
 *  - struct nxqd_conn: one per connection, from accept to its close; a
 *    reference from the loop and one from a request in progress (held by
 *    the grace window, or waiting in the ledger).
 *  - struct nxqd_hent: one per holder, in the holders' table (id ->
 *    hent) from registration to its end -- HOLDER_UNREGISTER, the close of
 *    the connection it was registered on, or the exit of its process --
 *    each of which detaches (uncharges) it.  It holds the table's
 *    reference on the holder and a reference on its process.  Any
 *    connection of the registering process may use it.  A holder
 *    registered with NXQD_REQ_NOTIFY (version 2) is told of its tickets
 *    on its registering connection: signal.c hands its hent to
 *    nxqd_hent_notice() on the loop, which sends a struct nxqd_notice
 *    with MSG_DONTWAIT, or, while the socket has no room (or a reply
 *    waits for room), keeps the hent on the connection's notes list and
 *    polls for EPOLLOUT.  One notice per holder at a time: none is queued
 *    while one waits, nor sent while one was sent and the holder's ticket
 *    was not read since (NXQ_IOC_TICKET_READ, from any connection):
 *    what a tenant can make the daemon keep is a flag per holder, and
 *    what it can make it send, one message per ticket read.
 *  - struct nxqd_rq: a request that could not be answered in its turn:
 *    held by the grace window (restart.c), or a charge waiting in the
 *    ledger: its struct nxq_waiter is queued there (nxq_charge_begin()),
 *    and its timer runs at the waiter's wake time (nxq_charge_tick()) or
 *    at once when the ledger settles it (the waiter's done hook), and
 *    answers it (nxq_charge_end()).  Nothing sleeps and no thread or
 *    stack is spent on it.  It holds a reference on its holder and its
 *    connection.  While one is in progress its connection is not read; a
 *    hang-up ends the wait (nxq_charge_cancel()) and nothing is granted.
 *  - struct nxqd_ctx: one request's context, on the loop's stack for the
 *    time of its handling.
 */
#ifndef _NXQD_CLIENT_H
#define _NXQD_CLIENT_H

#include <sys/socket.h>
#include <sys/un.h>

#include "nxqd.h"

/*
 * Descriptors received in one message: the most a command takes (the
 * registration's eventfd and device proof).  More are not installed
 * (MSG_CTRUNC: the kernel drops them) and the message is refused whole;
 * each installed one costs a close(), so a tenant that passes SCM_MAX_FD
 * with every request makes the daemon close 2, not 8 (issue 32).
 */
#define NXQD_FDS_RECV		2

struct nxqd_conn {
	struct nxqd_watch w;
	struct list_head link;		/* nxqd_cl.conns */
	struct nxqd_proc *proc;		/* the peer */
	struct ucred peer;		/* SO_PEERCRED */
	struct nxqd_slot slot;		/* its place in conns.c's counts */
	struct list_head holders;	/* registered on it */
	unsigned int nr_holders;
	struct nxqd_rq *busy;		/* a request in progress */
	void *out;			/* a reply the socket had no room for */
	size_t outlen;
	struct list_head notes;		/* hents whose notice waits for room */
	unsigned int refs;
	bool closed;
};

struct nxqd_hent {
	u64 id;
	struct nxq_holder *h;		/* the table's reference */
	struct nxqd_proc *proc;		/* a reference */
	struct nxqd_conn *conn;		/* the registering connection */
	struct list_head conn_link, proc_link;
	struct nxqd_hent *hnext;
	char device[NXQ_DEVICE_KEY_MAX];
	u64 charged;			/* as last answered */
	bool asked;			/* v0: a charge was asked on it */
	struct nxqd_rec_holder *rec;	/* v1: its restore's claim */
	bool noted;			/* v2: a notice sent, its ticket not
					 * read since
					 */
	struct list_head note_link;	/* v2: on conn->notes while its
					 * notice waits for room
					 */
};

struct nxqd_rq {
	struct nxqd_conn *c;		/* a reference */
	struct nxq_holder *h;		/* a reference */
	u64 id;
	struct nxqd_proc *proc;		/* the holder's process, a reference */
	pid_t pid;			/* its pid and start time */
	u64 start;
	const struct nxq_abi_cmd *op;
	union nxq_abi_arg karg;
	u32 usize;
	u16 version, flags;
	u64 t0;				/* received (ns) */
	bool restore;			/* a restore within the record */
	struct nxqd_held held;
	struct nxq_waiter w;		/* while it waits in the ledger */
	struct nxqd_timer timer;	/* its wake time, or due: settled */
	bool waiting;			/* w is queued (nxq_charge_begin()) */
	int err;
};

#define NXQD_HENT_BUCKETS	4096

struct nxqd_client {
	int lfd;
	struct nxqd_watch lw;
	char path[sizeof(((struct sockaddr_un *)0)->sun_path)];
	struct list_head conns;
	struct nxqd_hent *hents[NXQD_HENT_BUCKETS];
	u64 next_id;
	bool ids_started;
	u64 conns_refused, creds_refused;
	int spare_fd;			/* given up when out of descriptors */
	/* one request at a time: the loop's buffers */
	unsigned char msg[sizeof(struct nxqd_req) + NXQD_ARG_MAX + 1]
		__aligned(8);
	unsigned char rep[sizeof(struct nxqd_rep) + NXQD_ARG_MAX]
		__aligned(8);
};

extern struct nxqd_client nxqd_cl;

/* One request's context: who sent it and the descriptors it carried. */
struct nxqd_ctx {
	struct nxqd_conn *c;
	struct ucred cred;		/* its SCM_CREDENTIALS */
	bool have_cred;
	struct nxqd_proc *caller;	/* who asks, or NULL: refused */
	bool caller_ref;		/* a reference of ours on it */
	u16 version, flags;
	int fds[NXQD_FDS_RECV];
	int nr_fds;
	bool fds_trunc;
	u64 t0;
};

/* ---- client_obj.c ---- */

struct nxqd_hent **nxqd_hent_slot(u64 id);
struct nxqd_hent *nxqd_hent_find(u64 id);
/* Drop a reference on a holder (its signal with the last). */
void nxqd_holder_put(struct nxq_holder *h);
/* signal.c's tell: a notice for the hent @owner, sent or kept. */
void nxqd_hent_notice(void *owner);
/* End a holder: out of the table, detached (uncharged), references gone. */
void nxqd_hent_end(struct nxqd_hent *e);
/*
 * Build and send the reply to @op with @err; its output from @karg, then
 * @tlen bytes of @tail.
 */
int nxqd_reply(struct nxqd_conn *c, int err, const struct nxq_abi_cmd *op,
	       const void *karg, u32 usize, const void *tail, size_t tlen);
/* The reply to a charge, with what refused it (version 1). */
int nxqd_reply_charge(struct nxqd_conn *c, int err, struct nxqd_proc *p,
		      struct nxq_holder *h, struct nxq_charge *a, u32 usize);
void nxqd_conn_put(struct nxqd_conn *c);
/* Its request in progress was answered: read it again. */
void nxqd_conn_resume(struct nxqd_conn *c);
/*
 * Poll @c for what its state asks: a hang-up always, room while a reply
 * or a notice waits for it, requests while none is in progress, no
 * reply waits and its subtree is not penalized.
 */
void nxqd_conn_watch(struct nxqd_conn *c);
/*
 * Send what waits on @c for room: its reply, then its notices.  Return:
 * 0 (sent, or waiting still), or the send's -errno: the peer is gone.
 */
int nxqd_conn_flush(struct nxqd_conn *c);

/* ---- client_cmd.c ---- */

/* A request in progress is answered. */
void nxqd_rq_done(struct nxqd_rq *q);
/* A charge waiting in the ledger ends as interrupted, and is answered. */
void nxqd_rq_cancel(struct nxqd_rq *q);
/*
 * One request of @len bytes (in nxqd_cl.msg).  Return: the errno to
 * answer with, or 1 when it is answered already (or will be).
 */
int nxqd_handle(struct nxqd_ctx *r, size_t len);

#endif /* _NXQD_CLIENT_H */

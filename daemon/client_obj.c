// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's client socket, its lowest part (client.h says the rest): the
 * state the loop keeps for it (nxqd_cl), the holders' table (id -> hent)
 * and a holder's end, the ledger's hooks on a holder (its signal, its
 * process), what restart.c reads back of the table, a connection's
 * references, what is polled on it, and what is sent on it: replies and
 * ticket notices (version 2).
 *
 * A connection sends, in this order of precedence: a reply the socket
 * had no room for (c->out: nothing more is read until it is sent), then
 * the notices that wait for room (c->notes), each with MSG_DONTWAIT.  A
 * notice is sent whether or not a request is in progress on the
 * connection (a charge waiting there is no reason for its process not to
 * hear of a ticket); the client tells a notice from a reply by
 * NXQD_REP_TICKET, so a notice may come before or after any reply.
 * Nothing here waits for a tenant: a socket without room is polled for
 * EPOLLOUT, and what waits is one buffer (the reply) and one flag per
 * holder (its notice).
 */
#include <linux/types.h>
#include <linux/nxquota.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include "client.h"

struct nxqd_client nxqd_cl = {
	.lfd = -1,
	.conns = LIST_HEAD_INIT(nxqd_cl.conns),
	.spare_fd = -1,
};

/* ---- holders ---- */

struct nxqd_hent **nxqd_hent_slot(u64 id)
{
	return &nxqd_cl.hents[id % NXQD_HENT_BUCKETS];
}

struct nxqd_hent *nxqd_hent_find(u64 id)
{
	struct nxqd_hent *e;

	for (e = *nxqd_hent_slot(id); e; e = e->hnext)
		if (e->id == id)
			return e;
	return NULL;
}

static void nxqd_free_priv(struct nxq_holder *h)
{
	if (h->priv)
		nxqd_tsig_put(h->priv);
}

void nxqd_holder_put(struct nxq_holder *h)
{
	nxq_holder_put(h, nxqd_free_priv);
}

/*
 * The ledger's holder_signal hook (device lock held): queue its notice,
 * or a +1 on its eventfd (signal.c); nothing is sent from here.
 */
void nxqd_holder_signal(struct nxq_holder *h)
{
	if (h->priv)
		nxqd_tsig_signal(h->priv);
}

/* The ledger's holder_kill hook: SIGKILL the registering process. */
void nxqd_holder_kill(struct nxq_holder *h)
{
	nxqd_proc_kill(nxqd_proc_of_owner(h->owner));
}

/* End a holder: out of the table, detached (uncharged), references gone. */
void nxqd_hent_end(struct nxqd_hent *e)
{
	struct nxqd_hent **pp = nxqd_hent_slot(e->id);
	struct nxqd_rec_line l = {
		.pid = e->proc->tgid, .start = e->proc->start, .id = e->id,
		.device = e->device, .charge = 0,
	};

	/* out of the record (a failed write leaves a line a restore can't claim) */
	if (e->charged)
		nxqd_record_note(&l, e->rec);
	for (; *pp; pp = &(*pp)->hnext) {
		if (*pp == e) {
			*pp = e->hnext;
			break;
		}
	}
	list_del(&e->conn_link);
	list_del(&e->proc_link);
	e->conn->nr_holders--;
	/* no notice for it from now on, none waiting */
	if (e->h->priv)
		nxqd_tsig_own(e->h->priv, NULL);
	if (!list_empty(&e->note_link)) {
		list_del_init(&e->note_link);
		nxqd_conn_watch(e->conn);
	}
	nxq_holder_end(e->h, nxqd_free_priv);	/* the table's reference */
	nxqd_proc_put(e->proc);
	free(e);
}

static void nxqd_record_list(void (*emit)(void *ctx,
					  const struct nxqd_rec_line *l),
			     void *ctx)
{
	struct nxqd_hent *e;
	size_t i;

	for (i = 0; i < NXQD_HENT_BUCKETS; i++) {
		for (e = nxqd_cl.hents[i]; e; e = e->hnext) {
			struct nxqd_rec_line l = {
				.pid = e->proc->tgid, .start = e->proc->start,
				.id = e->id, .device = e->device,
				.charge = e->charged,
			};

			if (!e->proc->dead)
				emit(ctx, &l);
		}
	}
}

static const struct nxqd_restart_ops nxqd_client_restart_ops = {
	.list = nxqd_record_list,
};

const struct nxqd_restart_ops *nxqd_client_restart(void)
{
	return &nxqd_client_restart_ops;
}

/* ---- what is sent: replies, notices ---- */

void nxqd_conn_watch(struct nxqd_conn *c)
{
	u32 ev = EPOLLRDHUP;

	if (c->closed)
		return;
	if (c->out || !list_empty(&c->notes))
		ev |= EPOLLOUT;
	/* (a subtree's penalty takes EPOLLIN off until it ends: conns.c) */
	if (!c->busy && !c->out && list_empty(&c->slot.park))
		ev |= EPOLLIN;
	nxqd_watch_mod(&c->w, ev);
}

/* A send's error that says only "no room now": wait for EPOLLOUT. */
static bool nxqd_no_room(int err)
{
	return err == EAGAIN || err == ENOBUFS || err == ENOMEM ||
	       err == EINTR;
}

/*
 * Send @c's notices while the socket has room and no reply waits before
 * them; what is left waits for EPOLLOUT.  A notice the peer can no longer
 * take (it hung up: its hang-up closes the connection) is dropped with
 * its connection.
 */
static void nxqd_conn_notes(struct nxqd_conn *c)
{
	struct nxqd_notice n = {
		.rep.version = NXQD_PROTO_VERSION,
		.rep.flags = NXQD_REP_TICKET,
	};
	struct nxqd_hent *e;
	ssize_t sent;

	while (!c->closed && !c->out && !list_empty(&c->notes)) {
		e = list_first_entry(&c->notes, struct nxqd_hent, note_link);
		n.holder_id = e->id;
		sent = send(c->w.fd, &n, sizeof(n),
			    MSG_DONTWAIT | MSG_NOSIGNAL);
		if (sent < 0 && nxqd_no_room(errno))
			break;
		list_del_init(&e->note_link);
		e->noted = sent == (ssize_t)sizeof(n);
	}
	nxqd_conn_watch(c);
}

/*
 * signal.c's tell, on the loop: the ledger opened or raised the ticket of
 * the hent @owner.  Coalesced: nothing while a notice of it waits for
 * room, or was sent and its ticket not read since (the tenant has yet to
 * read what this raise changed).
 */
void nxqd_hent_notice(void *owner)
{
	struct nxqd_hent *e = owner;

	if (e->noted || !list_empty(&e->note_link))
		return;
	list_add_tail(&e->note_link, &e->conn->notes);
	nxqd_conn_notes(e->conn);
}

int nxqd_conn_flush(struct nxqd_conn *c)
{
	ssize_t n;

	if (c->out) {
		n = send(c->w.fd, c->out, c->outlen,
			 MSG_DONTWAIT | MSG_NOSIGNAL);
		if (n < 0 && nxqd_no_room(errno))
			return 0;
		free(c->out);
		c->out = NULL;
		if (n < 0)
			return -errno;
	}
	nxqd_conn_notes(c);
	return 0;
}

/*
 * Send a reply; -EAGAIN keeps it for when the socket has room (the
 * connection is then not read), another error means the peer is gone.
 */
static int nxqd_send(struct nxqd_conn *c, const void *buf, size_t len)
{
	ssize_t n;

	if (c->closed)
		return -EPIPE;
	n = send(c->w.fd, buf, len, MSG_DONTWAIT | MSG_NOSIGNAL);
	if (n == (ssize_t)len)
		return 0;
	if (n < 0 && errno == EAGAIN) {
		c->out = malloc(len);
		if (!c->out)
			return -ENOMEM;
		memcpy(c->out, buf, len);
		c->outlen = len;
		nxqd_conn_watch(c);
		return 0;
	}
	return n < 0 ? -errno : -EPIPE;
}

/*
 * Build and send the reply to @op with @err; its output from @karg (on
 * success, or a failure copied back: nxq_abi_err_out()), then @tlen bytes
 * of @tail (a refused charge's path), which must fit NXQD_ARG_MAX with
 * the struct.
 */
int nxqd_reply(struct nxqd_conn *c, int err,
		      const struct nxq_abi_cmd *op, const void *karg,
		      u32 usize, const void *tail, size_t tlen)
{
	struct nxqd_rep *rp = (void *)nxqd_cl.rep;
	size_t outlen = 0;

	memset(rp, 0, sizeof(*rp));
	rp->err = err;
	rp->version = NXQD_PROTO_VERSION;
	if (op && op->out && (!err || nxq_abi_err_out(op, usize, err))) {
		outlen = min_t(size_t, usize, op->ksize);
		memcpy(nxqd_cl.rep + sizeof(*rp), karg, outlen);
		if (tlen && outlen == usize && outlen + tlen <= NXQD_ARG_MAX) {
			memcpy(nxqd_cl.rep + sizeof(*rp) + outlen, tail, tlen);
			outlen += tlen;
		}
	}
	return nxqd_send(c, nxqd_cl.rep, sizeof(*rp) + outlen);
}

/* ---- a connection's references ---- */

static void nxqd_conn_free(void *arg)
{
	struct nxqd_conn *c = arg;

	nxqd_proc_put(c->proc);
	close(c->w.fd);
	free(c->out);
	free(c);
}

void nxqd_conn_put(struct nxqd_conn *c)
{
	if (--c->refs)
		return;
	nxqd_loop_defer_free(c, nxqd_conn_free);
}

/* Its request in progress was answered: read it again. */
void nxqd_conn_resume(struct nxqd_conn *c)
{
	nxqd_conn_watch(c);
	nxqd_conn_put(c);
}


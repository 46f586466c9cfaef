// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotad's client socket, its lowest part (client.h says the rest): the
 * state the loop keeps for it (nxqd_cl), the holders' table (id -> hent)
 * and a holder's end, the ledger's hooks on a holder (its eventfd, its
 * process), what restart.c reads back of the table, a connection's
 * references and the replies sent on it.
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
		nxqd_efd_put(h->priv);
}

void nxqd_holder_put(struct nxq_holder *h)
{
	nxq_holder_put(h, nxqd_free_priv);
}

/* The ledger's holder_signal hook: queue a +1 on its eventfd. */
void nxqd_holder_signal(struct nxq_holder *h)
{
	if (h->priv)
		nxqd_efd_signal(h->priv);
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

/* ---- replies ---- */

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
		nxqd_watch_mod(&c->w, EPOLLOUT | EPOLLRDHUP);
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
	if (!c->closed && !c->out)
		nxqd_watch_mod(&c->w, EPOLLIN | EPOLLRDHUP);
	nxqd_conn_put(c);
}


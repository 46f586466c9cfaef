// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * The kernel ops over nxquotad's client socket ("nxquotad"): each op of
 * struct nxq_kops as requests to the daemon, with the holders' charges
 * kept so that a restore can give them back; open, close and the child's
 * forget.  The objects, reconnect and the protocol are described in
 * sock.h; the transport is sock_conn.c, the restore sock_restore.c.
 *
 * Layer 2 (kernel ops, reached through nxq__sock_kops): calls
 * sock_restore.c, sock_conn.c, err.c and options.c.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <sys/socket.h>

#include "gpu_node.h"
#include "sock.h"

const char *nxq__sock_default = NXQD_SOCKET_PATH;

/*
 * Start a request: s->rw held for reading, the epoch noted.  A context
 * whose last reconnect failed tries once more first.
 */
static int sk_begin(struct nxq_ctx *ctx, unsigned int *epoch)
{
	struct sk *s = ctx->kpriv;

	if (nxq__forked(ctx))
		return nxq__fork_err();
	for (;;) {
		pthread_rwlock_rdlock(&s->rw);
		*epoch = s->epoch;
		if (!s->broken)
			return 0;
		pthread_rwlock_unlock(&s->rw);
		int r = nxq__sk_reconnect(ctx, *epoch);

		if (r)
			return r;
	}
}

static void sk_end(struct nxq_ctx *ctx)
{
	pthread_rwlock_unlock(&((struct sk *)ctx->kpriv)->rw);
}

/*
 * Start a request about a holder of ours: sk_begin(), then the holder.
 * 0 with *hp set and s->rw held; sk_begin()'s error; or -ENOENT (no such
 * live holder), s->rw released.
 */
static int sk_hbegin(struct nxq_ctx *ctx, uint64_t holder, unsigned int *epoch,
		     struct sk_holder **hp)
{
	int r = sk_begin(ctx, epoch);

	if (r)
		return r;
	*hp = nxq__sk_holder_get(ctx->kpriv, holder);
	if (!*hp) {
		sk_end(ctx);
		return -ENOENT;
	}
	return 0;
}

/*
 * The end of a request that is not sent again (s->rw released): the
 * daemon gone in flight is reconnected to, and the restore settles it;
 * else the transport's error or the daemon's answer.
 */
static int sk_settle(struct nxq_ctx *ctx, unsigned int epoch, int r, int err)
{
	if (is_gone(r))
		return nxq__sk_reconnect(ctx, epoch);
	return r ? r : err;
}

/* ---- the ops ---- */

static int sk_version(struct nxq_ctx *ctx, struct nxq_version *v)
{
	struct sk *s = ctx->kpriv;
	unsigned int epoch;
	int err = 0, r;

	r = sk_begin(ctx, &epoch);
	if (r)
		return r;
	r = nxq__sk_req(s, 0, SK_IOC(NXQ_IOC_VERSION), v, sizeof(*v), sizeof(*v), NULL, 0, &err);
	sk_end(ctx);
	return r ? r : err;
}

static int sk_register(struct nxq_ctx *ctx, struct nxq_holder_reg *reg)
{
	struct sk *s = ctx->kpriv;
	struct sk_holder *h = calloc(1, sizeof(*h));
	struct nxq_holder_reg out;
	int fds[2], n, minor, err = 0, r;
	uint16_t nf;
	unsigned int epoch;
	char node[32];

	if (!h)
		return -ENOMEM;
	h->reg = *reg;
	h->reg.flags &= ~NXQ_HOLDER_DEVFD;
	h->reg.devfd = 0;
	h->evfd = h->devfd = -1;
	if (reg->eventfd >= 0) {
		h->evfd = fcntl(reg->eventfd, F_DUPFD_CLOEXEC, 3);
		if (h->evfd < 0) {
			r = -errno;
			free(h);
			return r;
		}
	}
	/* As for the module: a GPU's device takes a holder only with its node open. */
	minor = nxq__gpu_minor(reg->device);
	if (minor >= 0) {
		snprintf(node, sizeof(node), "/dev/nvidia%d", minor);
		h->devfd = open(node, O_RDONLY | O_CLOEXEC);
	}
	for (;;) {
		r = sk_begin(ctx, &epoch);
		if (r)
			break;
		/* protocol 2: told on the connection, our eventfd kept (sock.h) */
		n = nxq__sk_holder_fds(s, h, &out, fds, &nf);
		r = nxq__sk_req(s, nf, SK_IOC(NXQ_IOC_HOLDER_REGISTER), &out, sizeof(out),
				sizeof(out), fds, n, &err);
		if (!r && !err && !out.holder_id)
			err = -EPROTO;
		if (!r && !err) {
			pthread_mutex_lock(&s->mu);
			if (s->nh == s->hcap) {
				int cap = s->hcap ? s->hcap * 2 : 16;
				struct sk_holder **t = realloc(s->h, (size_t)cap * sizeof(*t));

				if (!t) {
					pthread_mutex_unlock(&s->mu);
					err = -ENOMEM;
					/* the holder ends with its connection at worst;
					 * unregister it now */
					{
						struct nxq_holder_id hid = {
							.size = sizeof(hid),
							.holder_id = out.holder_id };
						int e2;

						nxq__sk_req(s, 0, SK_IOC(NXQ_IOC_HOLDER_UNREGISTER),
							    &hid, sizeof(hid), 0, NULL, 0, &e2);
					}
					sk_end(ctx);
					break;
				}
				s->h = t;
				s->hcap = cap;
			}
			h->dmn_id = out.holder_id;
			h->live = 1;
			s->h[s->nh++] = h;
			reg->holder_id = (uint64_t)s->nh;
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return 0;
		}
		sk_end(ctx);
		if (!r)
			break;		/* the daemon's answer */
		if (!is_gone(r))
			break;
		r = nxq__sk_reconnect(ctx, epoch);
		if (r)
			break;
	}
	if (h->evfd >= 0)
		close(h->evfd);
	if (h->devfd >= 0)
		close(h->devfd);
	free(h);
	return r ? r : err;
}

static int sk_unregister(struct nxq_ctx *ctx, uint64_t holder)
{
	struct sk *s = ctx->kpriv;
	struct nxq_holder_id hid = { .size = sizeof(hid) };
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	r = sk_hbegin(ctx, holder, &epoch, &h);
	if (r)
		return r;
	pthread_mutex_lock(&s->mu);
	h->live = 0;	/* a reconnect from now on leaves it out */
	hid.holder_id = h->dmn_id;
	pthread_mutex_unlock(&s->mu);
	if (hid.holder_id)
		r = nxq__sk_req(s, 0, SK_IOC(NXQ_IOC_HOLDER_UNREGISTER), &hid, sizeof(hid), 0, NULL,
				0, &err);
	/* No other call uses it now (the arena is detached): free it; ids are not reused. */
	pthread_mutex_lock(&s->mu);
	s->h[holder - 1] = NULL;
	pthread_mutex_unlock(&s->mu);
	sk_end(ctx);
	if (h->evfd >= 0)
		close(h->evfd);
	if (h->devfd >= 0)
		close(h->devfd);
	free(h);
	/* gone: ended with the connection; the restore leaves it out */
	return sk_settle(ctx, epoch, r, err);
}

static int sk_charge_flags(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes,
			   uint64_t timeout_ns, uint32_t probe, struct nxq_refusal *why)
{
	struct sk *s = ctx->kpriv;
	uint64_t deadline = timeout_ns ? nxq__now_ns() + timeout_ns : 0;
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r, tries = 0, readopted = 0;

	if (why)
		memset(why, 0, sizeof(*why));
	for (;;) {
		/*
		 * A refusal's node path comes after the struct (nxquotad.h),
		 * into path[]; the path field only says there is room.
		 */
		struct {
			struct nxq_charge c;
			char path[NXQD_ARG_MAX - sizeof(struct nxq_charge)];
		} b;
		struct nxq_charge c = { .size = sizeof(c), .flags = NXQ_CHARGE_NOWAIT | probe };
		uint64_t take;

		r = sk_hbegin(ctx, holder, &epoch, &h);
		if (r)
			return r;
		pthread_mutex_lock(&s->mu);
		if (!h->dmn_id) {
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			if (readopted++ || nxq__sk_readopt(ctx, holder))
				return nxq__err(-ENOLINK, "nxquota: nxquotad did not take this holder "
						"back after its restart");
			continue;
		}
		/* Bytes held but unbacked since a restore are asked for first. */
		take = h->unbacked;
		h->unbacked = 0;
		c.holder_id = h->dmn_id;
		pthread_mutex_unlock(&s->mu);
		if (bytes + take < bytes) {
			r = -EOVERFLOW;
			goto undo;
		}
		c.bytes = bytes + take;
		if (deadline) {
			uint64_t now = nxq__now_ns();

			c.flags = NXQ_CHARGE_WAIT;
			c.timeout_ns = deadline > now ? deadline - now : 1;
		}
		if (why && (ctx->features & NXQ_FEAT_CHARGE_V1)) {
			/* no longer than why->path: one that does not fit is not named */
			c.path = (uintptr_t)b.path;
			c.path_size = sizeof(why->path);
		}
		b.c = c;
		r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_CHARGE), &b, sizeof(b.c), sizeof(b), &err);
		if (!r && err && c.path) {
			memcpy(why->path, b.path, sizeof(why->path));
			why->path[sizeof(why->path) - 1] = 0;
			nxq__refusal_from(why, &b.c);
		}
		if (!r && !err) {
			pthread_mutex_lock(&s->mu);
			h->charged += bytes;
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return 0;
		}
undo:
		pthread_mutex_lock(&s->mu);
		h->unbacked += take;
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		if (!r)
			return err;
		if (!is_gone(r))
			return r;
		/* Never granted: ask again, as new, once the holders are back. */
		if (++tries > 3)	/* a daemon that forgets us at once, again and again */
			return nxq__err(r, "nxquota: nxquotad keeps losing this holder");
		r = nxq__sk_reconnect(ctx, epoch);
		if (r)
			return r;
		if (deadline && nxq__now_ns() >= deadline)
			return -ETIMEDOUT;
	}
}

static int sk_charge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes, uint64_t timeout_ns,
		     struct nxq_refusal *why)
{
	return sk_charge_flags(ctx, holder, bytes, timeout_ns, 0, why);
}

/* As sk_charge() (bytes left unbacked by a restore go with it), with PROBE. */
static int sk_probe(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	return sk_charge_flags(ctx, holder, bytes, 0, NXQ_CHARGE_PROBE, NULL);
}

static int sk_uncharge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	struct sk *s = ctx->kpriv;
	struct nxq_charge c = { .size = sizeof(c) };
	struct sk_holder *h;
	unsigned int epoch;
	uint64_t local;
	int err = 0, r;

	r = sk_hbegin(ctx, holder, &epoch, &h);
	if (r)
		return r;
	pthread_mutex_lock(&s->mu);
	if (bytes > h->charged) {
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		return -EINVAL;
	}
	/* Taken off here first: a restore from now on leaves these bytes out. */
	h->charged -= bytes;
	local = bytes < h->unbacked ? bytes : h->unbacked;
	h->unbacked -= local;
	c.holder_id = h->dmn_id;
	c.bytes = bytes - local;
	pthread_mutex_unlock(&s->mu);
	if (c.bytes && c.holder_id)
		r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_UNCHARGE), &c, sizeof(c), sizeof(c), &err);
	sk_end(ctx);
	/* gone: not sent again: the restore charged without it */
	return sk_settle(ctx, epoch, r, err);
}

static int sk_set_reclaimable(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	struct sk *s = ctx->kpriv;
	struct nxq_reclaimable rc = { .size = sizeof(rc) };
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	r = sk_hbegin(ctx, holder, &epoch, &h);
	if (r)
		return r;
	pthread_mutex_lock(&s->mu);
	h->reclaimable = bytes;
	rc.holder_id = h->dmn_id;
	/* the daemon's charge is what is backed */
	rc.bytes = bytes;
	if (rc.bytes > h->charged - h->unbacked)
		rc.bytes = h->charged - h->unbacked;
	pthread_mutex_unlock(&s->mu);
	if (rc.holder_id)
		r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_SET_RECLAIMABLE), &rc, sizeof(rc), 0, &err);
	sk_end(ctx);
	/* gone: the restore reports it again */
	return sk_settle(ctx, epoch, r, err);
}

static int sk_ticket_read(struct nxq_ctx *ctx, uint64_t holder, struct nxq_ticket *t)
{
	struct sk *s = ctx->kpriv;
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	for (int tries = 0;; tries++) {
		r = sk_hbegin(ctx, holder, &epoch, &h);
		if (r)
			return r;
		memset(t, 0, sizeof(*t));
		t->size = sizeof(*t);
		pthread_mutex_lock(&s->mu);
		if (h->syn_pending && h->unbacked) {
			/* The restore's ticket: give back what the daemon did not take. */
			h->syn_pending = 0;
			h->syn_gen = SK_SYN_GEN | ++s->syn_next;
			t->holder_id = holder;
			t->generation = h->syn_gen;
			t->bytes = h->unbacked;
			t->deadline_ns = nxq__now_ns();
			t->reason = NXQ_TICKET_REASON_BUDGET;
			t->level = NXQ_TICKET_LEVEL_RECALL;
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return 0;
		}
		t->holder_id = h->dmn_id;
		pthread_mutex_unlock(&s->mu);
		if (!t->holder_id) {
			sk_end(ctx);
			return -EAGAIN;
		}
		r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_TICKET_READ), t, sizeof(*t), sizeof(*t), &err);
		sk_end(ctx);
		if (!r) {
			t->holder_id = holder;
			return err;
		}
		if (!is_gone(r) || tries)
			return r;
		r = nxq__sk_reconnect(ctx, epoch);	/* the new daemon has no ticket of ours */
		if (r)
			return r;
	}
}

static int sk_ticket_answer(struct nxq_ctx *ctx, uint64_t holder, uint64_t generation,
			    uint64_t released, uint64_t *charged)
{
	struct sk *s = ctx->kpriv;
	struct nxq_ticket_answer a = { .size = sizeof(a), .generation = generation };
	struct sk_holder *h;
	unsigned int epoch;
	uint64_t local;
	int err = 0, r;

	r = sk_hbegin(ctx, holder, &epoch, &h);
	if (r)
		return r;
	pthread_mutex_lock(&s->mu);
	if (released > h->charged) {
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		return -EINVAL;
	}
	if (generation & SK_SYN_GEN) {
		struct nxq_charge c = { .size = sizeof(c), .flags = NXQ_CHARGE_NOWAIT };

		if (generation != h->syn_gen) {
			pthread_mutex_unlock(&s->mu);
			sk_end(ctx);
			return -ESTALE;
		}
		h->syn_gen = 0;
		h->charged -= released;
		local = released < h->unbacked ? released : h->unbacked;
		h->unbacked -= local;
		c.holder_id = h->dmn_id;
		c.bytes = released - local;	/* backed bytes released too: uncharge them */
		pthread_mutex_unlock(&s->mu);
		if (c.bytes && c.holder_id) {
			c.flags = 0;
			r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_UNCHARGE), &c, sizeof(c), sizeof(c), &err);
		}
		/* What is still unbacked: ask the daemon again. */
		pthread_mutex_lock(&s->mu);
		c.bytes = h->unbacked;
		h->unbacked = 0;
		pthread_mutex_unlock(&s->mu);
		if (!r && c.bytes && c.holder_id) {
			c.flags = NXQ_CHARGE_NOWAIT;
			r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_CHARGE), &c, sizeof(c), sizeof(c), &err);
		}
		pthread_mutex_lock(&s->mu);
		if (c.bytes && (r || err || !c.holder_id))
			h->unbacked += c.bytes;
		if (charged)
			*charged = h->charged;
		pthread_mutex_unlock(&s->mu);
		sk_end(ctx);
		if (is_gone(r))
			nxq__sk_reconnect(ctx, epoch);	/* settled here all the same */
		return 0;
	}
	a.holder_id = h->dmn_id;
	/* Released bytes beyond the daemon's charge were unbacked ones. */
	local = released > h->charged - h->unbacked ? released - (h->charged - h->unbacked) : 0;
	a.released = released - local;
	pthread_mutex_unlock(&s->mu);
	r = a.holder_id ? nxq__sk_hreq(s, SK_IOC(NXQ_IOC_TICKET_ANSWER), &a, sizeof(a), sizeof(a),
				       &err) : 0;
	if (!r && err) {
		sk_end(ctx);
		return err;	/* -ESTALE and the like: nothing uncharged */
	}
	pthread_mutex_lock(&s->mu);
	h->charged -= released;
	h->unbacked -= local;
	if (charged)
		*charged = h->charged;
	pthread_mutex_unlock(&s->mu);
	sk_end(ctx);
	/*
	 * Gone in flight: answered all the same (the restore charges without
	 * it); an error here would make the arena uncharge it a second time.
	 */
	if (is_gone(r))
		nxq__sk_reconnect(ctx, epoch);
	return 0;
}

/*
 * STATUS of a holder, translated to the daemon's id (a holder the daemon
 * does not have -- not taken back after a restart -- is -ENOLINK); sent
 * again once after a reconnect.  An older daemon's shorter reply leaves
 * the fields it does not know 0.
 */
static int sk_status(struct nxq_ctx *ctx, uint64_t holder, struct nxq_status *st)
{
	struct sk *s = ctx->kpriv;
	struct sk_holder *h;
	unsigned int epoch;
	int err = 0, r;

	for (int tries = 0;; tries++) {
		r = sk_hbegin(ctx, holder, &epoch, &h);
		if (r)
			return r;
		memset(st, 0, sizeof(*st));
		st->size = sizeof(*st);
		pthread_mutex_lock(&s->mu);
		st->holder_id = h->dmn_id;
		pthread_mutex_unlock(&s->mu);
		if (!st->holder_id) {
			sk_end(ctx);
			return -ENOLINK;
		}
		r = nxq__sk_hreq(s, SK_IOC(NXQ_IOC_STATUS), st, sizeof(*st), sizeof(*st), &err);
		sk_end(ctx);
		if (!r) {
			st->size = sizeof(*st);
			st->holder_id = holder;
			return err;
		}
		if (!is_gone(r) || tries)
			return r;
		r = nxq__sk_reconnect(ctx, epoch);
		if (r)
			return r;
	}
}

static void sk_free(struct sk *s, int child)
{
	struct sk_conn *c, *n;

	/* in a forked child the watcher is the parent's: nothing runs */
	if (!child && s->watching) {
		uint64_t one = 1;

		__atomic_store_n(&s->stopping, 1, __ATOMIC_RELAXED);
		if (write(s->stopfd, &one, sizeof(one)) < 0)
			abort();	/* an eventfd's write of 1 cannot fail */
		pthread_join(s->watcher, NULL);
	}
	if (s->epfd >= 0)
		close(s->epfd);
	if (s->stopfd >= 0)
		close(s->stopfd);
	for (c = s->all; c; c = n) {
		n = c->all;
		close(c->fd);
		free(c);
	}
	for (int i = 0; i < s->nh; i++) {
		if (!s->h[i])
			continue;
		if (s->h[i]->evfd >= 0)
			close(s->h[i]->evfd);
		if (s->h[i]->devfd >= 0)
			close(s->h[i]->devfd);
		free(s->h[i]);
	}
	free(s->h);
	if (!child) {
		pthread_cond_destroy(&s->cv);
		pthread_mutex_destroy(&s->mu);
		pthread_rwlock_destroy(&s->rw);
	}
	free(s);
}

static void sk_close(struct nxq_ctx *ctx)
{
	if (ctx->kpriv)
		sk_free(ctx->kpriv, 0);
	ctx->kpriv = NULL;
}

/* The child's copy of the parent's context: close our descriptors, send nothing. */
static void sk_forget(struct nxq_ctx *ctx)
{
	if (ctx->kpriv)
		sk_free(ctx->kpriv, 1);
	ctx->kpriv = NULL;
}

const struct nxq_kops nxq__sock_kops = {
	.name = "nxquotad",
	.version = sk_version,
	.holder_register = sk_register,
	.holder_unregister = sk_unregister,
	.charge = sk_charge,
	.uncharge = sk_uncharge,
	.set_reclaimable = sk_set_reclaimable,
	.ticket_read = sk_ticket_read,
	.ticket_answer = sk_ticket_answer,
	.close = sk_close,
	.forget = sk_forget,
	.status = sk_status,
	.probe = sk_probe,
};

/*
 * Connect to the daemon at path: *kprivp is the state for nxq__sock_kops.
 * Returns 0, or the connect's negative errno (nothing kept).
 */
int nxq__sock_open(const char *path, void **kprivp)
{
	pthread_rwlockattr_t ra;
	struct sk *s;
	int fd, r;

	if (strlen(path) >= sizeof(s->addr.sun_path))
		return -ENAMETOOLONG;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->epfd = -1;
	s->stopfd = -1;
	s->addr.sun_family = AF_UNIX;
	memcpy(s->addr.sun_path, path, strlen(path) + 1);
	s->reconnect_ms = 10000;
	r = nxq__env_ms("NXQUOTA_RECONNECT_MS", &s->reconnect_ms);
	if (r < 0) {
		free(s);
		return r;
	}
	fd = nxq__sk_connect(s);
	if (fd < 0) {
		free(s);
		return fd;
	}
	pthread_rwlockattr_init(&ra);
	/* a reconnect must not wait behind a stream of new requests */
	pthread_rwlockattr_setkind_np(&ra, PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP);
	pthread_rwlock_init(&s->rw, &ra);
	pthread_rwlockattr_destroy(&ra);
	pthread_mutex_init(&s->mu, NULL);
	pthread_cond_init(&s->cv, NULL);
	r = nxq__sk_watch_start(s);
	if (r) {
		close(fd);
		sk_free(s, 0);
		return r;
	}
	{
		struct nxq_version v = { .size = sizeof(v) };
		int err;

		r = nxq__sk_hello(s, fd, &v, &err);	/* which protocol; its answer is asked again */
		if (r) {
			close(fd);
			sk_free(s, 0);
			return r;
		}
	}
	{
		struct sk_conn *c;

		/* s->mu: the watcher runs (and reads pooled connections) */
		pthread_mutex_lock(&s->mu);
		c = nxq__sk_conn_new(s, fd);
		if (c)
			nxq__sk_conn_give(s, c);
		pthread_mutex_unlock(&s->mu);
		if (!c) {
			close(fd);
			sk_free(s, 0);
			return -ENOMEM;
		}
	}
	s->nconns = 1;
	s->cap = SK_CONNS_MAX;
	*kprivp = s;
	return 0;
}

/*
 * For the tests: reconnects done, restores refused, connections made and
 * refused, notices told while a request waited for its reply and by the
 * watcher.
 */
void nxq__sock_counters(const struct nxq_ctx *ctx, unsigned long out[6])
{
	struct sk *s = ctx->kpriv;

	pthread_mutex_lock(&s->mu);
	out[0] = s->reconnects;
	out[1] = s->restores_refused;
	out[2] = s->conns_made;
	out[3] = s->conns_refused;
	out[4] = s->notices_req;
	out[5] = s->notices_idle;
	pthread_mutex_unlock(&s->mu);
}

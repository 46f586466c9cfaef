// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * Contexts and the kernel calls.
 *
 * A context owns the open /dev/nxquota file (managed) or a process-local
 * ledger with an optional cap (unmanaged).  Arenas hold a pointer to their
 * context; nxq_ctx_close() refuses (-EBUSY) while arenas exist.  The
 * kernel ops are the only code that issues ioctls; the unmanaged ledger is
 * lock-free (atomics).  A managed context whose module has tickets also
 * owns the pressure state (pressure.c): started here, stopped on close.
 *
 * Layer 3: calls err.c, options.c, pressure.c and sock.c (the kernel ops
 * it picks); never an arena file.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <linux/nxquotad.h>

#include "gpu_node.h"
#include "internal.h"

/* ---- the module, through ioctls ---- */

static int dev_ioctl(struct nxq_ctx *ctx, unsigned long cmd, void *arg)
{
	if (ioctl(ctx->fd, cmd, arg) < 0)
		return -errno;
	return 0;
}

static int dev_version(struct nxq_ctx *ctx, struct nxq_version *v)
{
	return dev_ioctl(ctx, NXQ_IOC_VERSION, v);
}

/*
 * A device registered with a dev_t (a GPU's node) takes a holder only with
 * an open file of that node: pass /dev/nvidiaN for "GPU-<uuid>" keys, none
 * for host devices.
 */
static int dev_register(struct nxq_ctx *ctx, struct nxq_holder_reg *reg)
{
	char node[32];
	int minor = nxq__gpu_minor(reg->device), fd = -1, r;

	if (minor >= 0) {
		snprintf(node, sizeof(node), "/dev/nvidia%d", minor);
		fd = open(node, O_RDONLY | O_CLOEXEC);
	}
	if (fd >= 0) {
		reg->flags |= NXQ_HOLDER_DEVFD;
		reg->devfd = fd;
	}
	r = dev_ioctl(ctx, NXQ_IOC_HOLDER_REGISTER, reg);
	if (fd >= 0) {
		close(fd);
		reg->flags &= ~NXQ_HOLDER_DEVFD;
		reg->devfd = 0;
	}
	return r;
}

static int dev_unregister(struct nxq_ctx *ctx, uint64_t holder)
{
	struct nxq_holder_id h = { .size = sizeof(h), .holder_id = holder };

	return dev_ioctl(ctx, NXQ_IOC_HOLDER_UNREGISTER, &h);
}

static int dev_charge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes,
		      uint64_t timeout_ns, struct nxq_refusal *why)
{
	struct nxq_charge c = { .size = sizeof(c), .flags = NXQ_CHARGE_NOWAIT,
				.holder_id = holder, .bytes = bytes };
	int r;

	if (timeout_ns) {
		c.flags = NXQ_CHARGE_WAIT;
		c.timeout_ns = timeout_ns;
	}
	if (why) {
		memset(why, 0, sizeof(*why));
		if (ctx->features & NXQ_FEAT_CHARGE_V1) {
			c.path = (uintptr_t)why->path;
			c.path_size = sizeof(why->path);
		}
	}
	r = dev_ioctl(ctx, NXQ_IOC_CHARGE, &c);
	if (r && c.path)
		nxq__refusal_from(why, &c);
	return r;
}

static int dev_probe(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	struct nxq_charge c = { .size = sizeof(c),
				.flags = NXQ_CHARGE_NOWAIT | NXQ_CHARGE_PROBE,
				.holder_id = holder, .bytes = bytes };

	return dev_ioctl(ctx, NXQ_IOC_CHARGE, &c);
}

static int dev_uncharge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	struct nxq_charge c = { .size = sizeof(c), .holder_id = holder, .bytes = bytes };

	return dev_ioctl(ctx, NXQ_IOC_UNCHARGE, &c);
}

static int dev_set_reclaimable(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	struct nxq_reclaimable r = { .size = sizeof(r), .holder_id = holder, .bytes = bytes };

	return dev_ioctl(ctx, NXQ_IOC_SET_RECLAIMABLE, &r);
}

static int dev_ticket_read(struct nxq_ctx *ctx, uint64_t holder, struct nxq_ticket *t)
{
	memset(t, 0, sizeof(*t));
	t->size = sizeof(*t);
	t->holder_id = holder;
	return dev_ioctl(ctx, NXQ_IOC_TICKET_READ, t);
}

static int dev_ticket_answer(struct nxq_ctx *ctx, uint64_t holder, uint64_t generation,
			     uint64_t released, uint64_t *charged)
{
	struct nxq_ticket_answer a = { .size = sizeof(a), .holder_id = holder,
				       .generation = generation, .released = released };
	int r = dev_ioctl(ctx, NXQ_IOC_TICKET_ANSWER, &a);

	if (!r && charged)
		*charged = a.charged;
	return r;
}

static int dev_status(struct nxq_ctx *ctx, uint64_t holder, struct nxq_status *st)
{
	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->holder_id = holder;
	return dev_ioctl(ctx, NXQ_IOC_STATUS, st);
}

static void dev_close(struct nxq_ctx *ctx)
{
	if (ctx->fd >= 0)
		close(ctx->fd);
	ctx->fd = -1;
}

const struct nxq_kops nxq__dev_kops = {
	.name = "nxquota",
	.version = dev_version,
	.holder_register = dev_register,
	.holder_unregister = dev_unregister,
	.charge = dev_charge,
	.uncharge = dev_uncharge,
	.set_reclaimable = dev_set_reclaimable,
	.ticket_read = dev_ticket_read,
	.ticket_answer = dev_ticket_answer,
	.close = dev_close,
	.status = dev_status,
	.probe = dev_probe,
};

/* ---- unmanaged: a process-local ledger ---- */

static int local_version(struct nxq_ctx *ctx, struct nxq_version *v)
{
	(void)ctx;
	v->abi_version = NXQ_ABI_VERSION;
	v->features = NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE | NXQ_FEAT_STATUS | NXQ_FEAT_STATUS_V1 |
		      NXQ_FEAT_CHARGE_PROBE;
	return 0;
}

static int local_register(struct nxq_ctx *ctx, struct nxq_holder_reg *reg)
{
	reg->holder_id = __atomic_add_fetch(&ctx->next_local_id, 1, __ATOMIC_RELAXED);
	return 0;
}

static int local_unregister(struct nxq_ctx *ctx, uint64_t holder)
{
	(void)ctx; (void)holder;
	return 0;
}

/* Nothing to wait for in a process-local ledger: timeout_ns is ignored. */
/* A charge against the cap; a refusal is recorded (for STATUS) unless a probe. */
static int local_take(struct nxq_ctx *ctx, uint64_t bytes, int probe)
{
	uint64_t cur = __atomic_load_n(&ctx->local_charged, __ATOMIC_RELAXED);

	do {
		if (cur + bytes < cur)
			return -EOVERFLOW;
		if (ctx->cap && cur + bytes > ctx->cap) {
			if (probe)
				return -EDQUOT;
			pthread_mutex_lock(&ctx->local_mu);
			ctx->local_last.err = EDQUOT;
			ctx->local_last.bytes = bytes;
			ctx->local_last.limit = ctx->cap;
			ctx->local_last.usage = cur;
			ctx->local_last.ns = nxq__now_ns();
			pthread_mutex_unlock(&ctx->local_mu);
			return -EDQUOT;
		}
	} while (!__atomic_compare_exchange_n(&ctx->local_charged, &cur, cur + bytes, 0,
					      __ATOMIC_RELAXED, __ATOMIC_RELAXED));
	return 0;
}

static int local_charge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes,
			uint64_t timeout_ns, struct nxq_refusal *why)
{
	(void)holder;
	(void)timeout_ns;
	if (why)
		memset(why, 0, sizeof(*why));
	return local_take(ctx, bytes, 0);
}

static int local_probe(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	(void)holder;
	return local_take(ctx, bytes, 1);
}

static int local_uncharge(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	(void)holder;
	__atomic_sub_fetch(&ctx->local_charged, bytes, __ATOMIC_RELAXED);
	return 0;
}

static int local_set_reclaimable(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	(void)ctx; (void)holder; (void)bytes;
	return 0;
}

static int local_ticket_read(struct nxq_ctx *ctx, uint64_t holder, struct nxq_ticket *t)
{
	(void)ctx; (void)holder; (void)t;
	return -EAGAIN;
}

static int local_ticket_answer(struct nxq_ctx *ctx, uint64_t holder, uint64_t generation,
			       uint64_t released, uint64_t *charged)
{
	(void)ctx; (void)holder; (void)generation; (void)released; (void)charged;
	return -ESTALE;
}

/*
 * The process-local ledger as STATUS: one node (the process) under its
 * cap (NXQ_UNLIMITED without one), no guarantee, every holder sharing it
 * (holder_charge is the whole ledger's: holders are not told apart).
 */
static int local_status(struct nxq_ctx *ctx, uint64_t holder, struct nxq_status *st)
{
	uint64_t cur = __atomic_load_n(&ctx->local_charged, __ATOMIC_RELAXED);
	uint64_t lim = ctx->cap ? ctx->cap : NXQ_UNLIMITED;

	memset(st, 0, sizeof(*st));
	st->size = sizeof(*st);
	st->holder_id = holder;
	st->holder_charge = cur;
	st->node_current = cur;
	st->node_max = lim;
	st->headroom = lim > cur ? lim - cur : 0;
	st->device_capacity = lim;
	st->device_used = cur;
	st->node_effective_max = lim;
	st->room = st->headroom;
	st->limit = lim;
	pthread_mutex_lock(&ctx->local_mu);
	st->last_error = ctx->local_last.err;
	st->last_bytes = ctx->local_last.bytes;
	st->last_limit = ctx->local_last.limit;
	st->last_usage = ctx->local_last.usage;
	st->last_ns = ctx->local_last.ns;
	pthread_mutex_unlock(&ctx->local_mu);
	return 0;
}

static void local_close(struct nxq_ctx *ctx)
{
	(void)ctx;
}

const struct nxq_kops nxq__local_kops = {
	.name = "unmanaged",
	.version = local_version,
	.holder_register = local_register,
	.holder_unregister = local_unregister,
	.charge = local_charge,
	.uncharge = local_uncharge,
	.set_reclaimable = local_set_reclaimable,
	.ticket_read = local_ticket_read,
	.ticket_answer = local_ticket_answer,
	.close = local_close,
	.status = local_status,
	.probe = local_probe,
};

/* ---- contexts ---- */

static int ctx_read_opts(const struct nxq_ctx_opts *in, struct nxq_ctx_opts *o)
{
	int r;

	memset(o, 0, sizeof(*o));
	if (in) {
		r = nxq__opts_copy(o, sizeof(*o), in, in->size, NXQ_CTX_OPTS_SIZE_VER0,
				   "nxq_ctx_opts");
		if (r)
			return r;
	}
	if (o->flags & ~NXQ_CTX_FLAGS_ALL)
		return nxq__err(-EINVAL, "nxquota: unknown nxq_ctx_opts.flags 0x%x", o->flags);
	if (o->unmanaged_cap && !(o->flags & NXQ_CTX_UNMANAGED))
		return nxq__err(-EINVAL, "nxquota: unmanaged_cap needs NXQ_CTX_UNMANAGED");
	if (o->unmanaged_cap == NXQ_OPT_ZERO)
		return nxq__err(-EINVAL, "nxquota: unmanaged_cap of 0 would refuse every byte");
	if ((o->flags & NXQ_CTX_UNMANAGED) && !o->unmanaged_cap) {
		r = nxq__env_size("NXQ_UNMANAGED_CAP", &o->unmanaged_cap);
		if (r < 0)
			return r;
	}
	if (o->report_interval_ms == NXQ_OPT_ZERO) {
		o->report_interval_ms = 0;
	} else if (!o->report_interval_ms) {
		o->report_interval_ms = 100;
		r = nxq__env_ms("NXQ_REPORT_INTERVAL_MS", &o->report_interval_ms);
		if (r < 0)
			return r;
	} else if (o->report_interval_ms > 86400000ULL) {
		return nxq__err(-EINVAL, "nxquota: report_interval_ms above a day");
	}
	return 0;
}

const char *nxq__sock_v0 = NXQD_SOCKET_PATH_V0;

/*
 * The authority of a managed context: the module's device if it exists and
 * opens; else nxquotad's client socket ($NXQUOTA_SOCKET if set, "" meaning
 * no daemon; else NXQD_SOCKET_PATH, or NXQD_SOCKET_PATH_V0 where only that
 * exists: a daemon from before issue 29) if it connects; else the device's
 * error, as without a daemon (the daemon's own when it closed the
 * connection at once: one of its bounds).  $NXQUOTA_SOCKET only chooses which socket
 * this process talks to: the daemon takes the caller's identity from the
 * kernel, so pointing it elsewhere grants nothing.
 */
static int ctx_select(const struct nxq_ctx_opts *o, struct nxq_ctx *ctx)
{
	const char *path = o->dev_path ? o->dev_path : getenv("NXQ_DEV");
	const char *sock = getenv("NXQUOTA_SOCKET");
	int r, rs;

	if (!path)
		path = "/dev/" NXQ_DEVICE_NAME;
	ctx->fd = open(path, O_RDWR | O_CLOEXEC);
	if (ctx->fd >= 0) {
		ctx->kops = &nxq__dev_kops;
		ctx->managed = 1;
		return 0;
	}
	r = -errno;
	if (!sock) {
		sock = nxq__sock_default;
		if (access(sock, F_OK) && !access(nxq__sock_v0, F_OK))
			sock = nxq__sock_v0;
	}
	if (*sock) {
		rs = nxq__sock_open(sock, &ctx->kpriv);
		if (!rs) {
			ctx->kops = &nxq__sock_kops;
			ctx->managed = 1;
			return 0;
		}
		if (rs == -EINVAL)
			return nxq__err(rs, "nxquota: NXQUOTA_RECONNECT_MS is malformed");
		if (rs == -EPIPE || rs == -ECONNRESET)	/* connected, then closed at once */
			return nxq__err(rs, "nxquota: nxquotad at %s closed this process's "
					"connection at once: over one of its bounds on connections "
					"(nxquotad -N, -K, -U, -P; see nxquotad(8))", sock);
		return nxq__err(r, "nxquota: cannot open %s: %s, nor connect to nxquotad at "
				"%s: %s%s", path, strerror(-r), sock, strerror(-rs),
				r == -ENOENT ? " (is the nxquota module loaded, or nxquotad "
				"running?); NXQ_CTX_UNMANAGED runs without them, unaccounted" : "");
	}
	return nxq__err(r, "nxquota: cannot open %s: %s%s", path, strerror(-r),
			r == -ENOENT ? " (is the nxquota module loaded?); "
			"NXQ_CTX_UNMANAGED runs without it, unaccounted" : "");
}

int nxq__ctx_open_kops(const struct nxq_ctx_opts *opts, const struct nxq_kops *kops,
		       void *kpriv, struct nxq_ctx **ctxp)
{
	struct nxq_version v = { .size = sizeof(v) };
	struct nxq_ctx_opts o;
	struct nxq_ctx *ctx;
	int r;

	if (!ctxp)
		return nxq__err(-EINVAL, "nxquota: ctxp is NULL");
	*ctxp = NULL;
	r = ctx_read_opts(opts, &o);
	if (r)
		return r;
	nxq__fork_register();
	ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return nxq__err(-ENOMEM, "nxquota: out of memory");
	ctx->fork_gen = __atomic_load_n(&nxq__fork_gen, __ATOMIC_RELAXED);
	pthread_mutex_init(&ctx->local_mu, NULL);
	ctx->fd = -1;
	ctx->epfd = -1;
	ctx->stopfd = -1;
	ctx->kpriv = kpriv;
	ctx->flags = o.flags;
	ctx->report_ns = o.report_interval_ms * 1000000ULL;
	ctx->on_event = o.on_event;
	ctx->event_user = o.event_user;
	if (o.flags & NXQ_CTX_UNMANAGED) {
		ctx->kops = &nxq__local_kops;
		ctx->cap = o.unmanaged_cap;
	} else if (kops) {
		ctx->kops = kops;
		ctx->managed = 1;
	} else {
		r = ctx_select(&o, ctx);
		if (r) {
			free(ctx);
			return r;
		}
	}
	r = ctx->kops->version(ctx, &v);
	if (!r && v.abi_version != NXQ_ABI_VERSION)
		r = nxq__err(-EPROTO, "nxquota: module ABI version %u, library wants %u",
			     v.abi_version, NXQ_ABI_VERSION);
	else if (!r && (v.features & (NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE)) !=
		 (NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE))
		r = nxq__err(-EOPNOTSUPP, "nxquota: module lacks holders/charge (features 0x%llx)",
			     (unsigned long long)v.features);
	else if (r)
		nxq__err(r, "nxquota: NXQ_IOC_VERSION failed: %s", strerror(-r));
	if (r) {
		ctx->kops->close(ctx);
		free(ctx);
		return r;
	}
	ctx->features = v.features;
	if (ctx->managed && (v.features & NXQ_FEAT_TICKETS)) {
		r = nxq__pressure_init(ctx);	/* sets the message */
		if (r) {
			ctx->kops->close(ctx);
			free(ctx);
			return r;
		}
	}
	*ctxp = ctx;
	return 0;
}

NXQ_API int nxq_ctx_open(const struct nxq_ctx_opts *opts, struct nxq_ctx **ctxp)
{
	return nxq__ctx_open_kops(opts, NULL, NULL, ctxp);
}

int nxq__status(struct nxq_ctx *ctx, uint64_t holder, struct nxq_status *st)
{
	int r;

	if (!ctx || !st)
		return -EINVAL;
	if (nxq__forked(ctx))
		return nxq__fork_err();
	if (!ctx->kops->status || !(ctx->features & NXQ_FEAT_STATUS))
		return -EOPNOTSUPP;
	r = ctx->kops->status(ctx, holder, st);
	if (!r && !(ctx->features & NXQ_FEAT_STATUS_V1))	/* an authority's stray bytes */
		memset((char *)st + NXQ_STATUS_SIZE_VER0, 0,
		       sizeof(*st) - NXQ_STATUS_SIZE_VER0);
	return r;
}

int nxq__charge_probe(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes)
{
	if (ctx->kops->probe && (ctx->features & NXQ_FEAT_CHARGE_PROBE))
		return ctx->kops->probe(ctx, holder, bytes);
	return ctx->kops->charge(ctx, holder, bytes, 0, NULL);
}

NXQ_API int nxq_ctx_is_managed(const struct nxq_ctx *ctx)
{
	if (!ctx)
		return -EINVAL;
	return ctx->managed;
}

NXQ_API int nxq_ctx_close(struct nxq_ctx *ctx)
{
	if (!ctx)
		return 0;
	if (nxq__forked(ctx)) {
		/* The parent's context: close our copies of its fds, nothing else
		 * (no thread to stop here, no ioctl on the shared file). */
		nxq__pressure_fini(ctx);
		if (ctx->fd >= 0)
			close(ctx->fd);
		if (ctx->kops->forget)
			ctx->kops->forget(ctx);
		free(ctx);
		return 0;
	}
	if (nxq__in_handler(ctx))
		return nxq__err(-EDEADLK, "nxquota: nxq_ctx_close() from a reclaim callback "
				"or event hook");
	if (__atomic_load_n(&ctx->narenas, __ATOMIC_ACQUIRE))
		return nxq__err(-EBUSY, "nxquota: context still has %d arenas", ctx->narenas);
	nxq__pressure_fini(ctx);
	ctx->kops->close(ctx);
	free(ctx);
	return 0;
}

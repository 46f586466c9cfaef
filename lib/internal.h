/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * libnxquota internals: the two ops tables that the cmocka tests replace.
 *
 *  - struct nxq_kops: the kernel calls (ioctls on /dev/nxquota), or the
 *    process-local ledger of an unmanaged context, or a test's fake kernel.
 *  - struct nxq_be_ops: a backend's reserve/create/map/access/unmap/release
 *    and stream fences (host memfd+mmap, CUDA VMM, or a test's wrapper).
 *  - the context's pressure state (pressure.c): the clients registered
 *    with it (struct nxq_pclient: an arena's ledger), an epoll fd over
 *    their fds, the optional thread.
 *
 * Lock order: ctx->plock (pressure handling, the client list) before
 * arena->lock.  No lock is held across a waiting charge, a reclaim
 * callback or an event hook (plock excepted: the handler holds it).
 *
 * Layers, lowest first: a file calls only files in lower layers (each
 * file's opening comment says which; scripts/call-graph.sh, run by
 * make check, fails on a cycle):
 *   0  err.c (errors, fork generation, clock), size.c
 *   1  options.c, host.c, cuda.c (backends), pressure.c (fd reactor),
 *      block.c (block allocator)
 *   2  sock_conn.c < sock_restore.c < sock.c (nxquotad's kernel ops,
 *      sock.h), charge.c (an arena's charges)
 *   3  context.c (contexts, kernel ops), mapping.c (segments, growth)
 *   4  ledger.c (tickets, reclaim callbacks: a client of pressure.c)
 *   5  arena.c (the arena's public entry points)
 * Where a lower layer must reach up it takes an ops struct: struct
 * nxq_kops, struct nxq_be_ops, struct nxq_pclient.
 *
 * Nothing here is exported from the shared library; the static library
 * carries these symbols for the tests.
 */
#ifndef NXQ_INTERNAL_H
#define NXQ_INTERNAL_H

#include <pthread.h>
#include <stdint.h>
#include <stddef.h>
#include <linux/nxquota.h>
#include "nxquota.h"

struct nxq_ctx;

/* Room for a refusing node's path (struct nxq_refusal), NUL included. */
#define NXQ_REFUSAL_PATH	1024

/*
 * What refused a charge, from the authority's own reply (struct
 * nxq_charge version 1, NXQ_FEAT_CHARGE_V1), for the caller's message:
 * no second trip, and nothing rebuilt from /proc/self/cgroup.  All zero
 * when the charge was granted, when its failure names no limit, and from
 * an authority without the feature.
 */
struct nxq_refusal {
	uint32_t reason;	/* NXQ_REFUSED_*, 0 for none named */
	uint32_t level;		/* levels up from the holder's cgroup, or
				 * NXQ_LEVEL_DEVICE */
	uint64_t id;		/* the node's cgroup id, 0 for the device */
	uint64_t limit, min, usage;
	/* the node's path as the caller's cgroup namespace shows it; "" when
	 * the authority does not name it (above the namespace's root, gone,
	 * the device, too long) */
	char path[NXQ_REFUSAL_PATH];
};

/* Kernel calls; every one returns 0 or a negative errno. */
struct nxq_kops {
	const char *name;
	int (*version)(struct nxq_ctx *ctx, struct nxq_version *v);
	int (*holder_register)(struct nxq_ctx *ctx, struct nxq_holder_reg *reg);
	int (*holder_unregister)(struct nxq_ctx *ctx, uint64_t holder);
	/*
	 * timeout_ns 0: NXQ_CHARGE_NOWAIT; else NXQ_CHARGE_WAIT up to it.
	 * why: NULL, or set to what refused the charge (zeroed first).
	 */
	int (*charge)(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes, uint64_t timeout_ns,
		      struct nxq_refusal *why);
	int (*uncharge)(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes);
	int (*set_reclaimable)(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes);
	/* -EAGAIN: no open ticket */
	int (*ticket_read)(struct nxq_ctx *ctx, uint64_t holder, struct nxq_ticket *t);
	/* -ESTALE: not the open ticket's generation; nothing uncharged */
	int (*ticket_answer)(struct nxq_ctx *ctx, uint64_t holder, uint64_t generation,
			     uint64_t released, uint64_t *charged);
	void (*close)(struct nxq_ctx *ctx);
	/* optional: the child's copy after fork(): free it, send nothing */
	void (*forget)(struct nxq_ctx *ctx);
	/*
	 * optional (NULL: -EOPNOTSUPP): NXQ_IOC_STATUS of holder into *st,
	 * which the op zeroes and sizes (sizeof, version 1); holder_id comes
	 * back as the caller's id.  Called through nxq__status().
	 */
	int (*status)(struct nxq_ctx *ctx, uint64_t holder, struct nxq_status *st);
	/*
	 * optional (NULL: a no-wait charge): a no-wait charge whose refusal
	 * the authority neither counts nor reports nor asks anyone for
	 * (NXQ_CHARGE_PROBE), because the caller asks again for less.
	 * Called through nxq__charge_probe().
	 */
	int (*probe)(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes);
};

struct nxq_ctx {
	const struct nxq_kops *kops;
	void *kpriv;		/* the kops' state: nxquotad's connections, a fake kernel's */
	int fd;			/* /dev/nxquota, or -1 */
	int managed;
	uint64_t features;
	uint64_t cap;		/* unmanaged: process-local cap, 0 = none */
	uint64_t local_charged;	/* unmanaged: bytes charged, atomic */
	uint64_t next_local_id;	/* unmanaged: holder ids, atomic */
	/* unmanaged: the last refused charge, for STATUS (under local_mu) */
	pthread_mutex_t local_mu;
	struct {
		uint32_t err;
		uint64_t bytes, limit, usage, ns;
	} local_last;
	int narenas;		/* atomic */
	unsigned int fork_gen;	/* nxq__fork_gen when opened: see nxq__forked() */

	/* Pressure (pressure.c); only when managed and the module has tickets. */
	int pressure;		/* tickets handled on this context */
	unsigned int flags;	/* NXQ_CTX_* */
	pthread_mutex_t plock;	/* held while handling; protects clist */
	struct nxq_pclient **clist;
	int nclist, clist_cap;
	int epfd;		/* epoll over the clients' fds, or -1 */
	int stopfd;		/* eventfd: stop the thread, or -1 */
	int thread_started;
	pthread_t thread;
	uint64_t report_ns;	/* 0: no periodic report */
	uint64_t last_report_ns;	/* under plock */
	void (*on_event)(const struct nxq_event *ev, void *user);
	void *event_user;
};

/* What a backend is asked to open. */
struct nxq_be_cfg {
	int cuda_device;
	uint64_t granule;	/* requested, 0 = backend default */
};

/* A backend.  Handles and addresses are opaque 64-bit values. */
struct nxq_be_ops {
	const char *name;
	/* Fills *granule (never 0) and key (default device key). */
	int (*open)(const struct nxq_be_cfg *cfg, void **bep, uint64_t *granule,
		    char key[NXQ_DEVICE_KEY_MAX]);
	void (*close)(void *be);
	int (*reserve)(void *be, uint64_t size, uint64_t align, uint64_t *base);
	int (*unreserve)(void *be, uint64_t base, uint64_t size);
	int (*create)(void *be, uint64_t size, uint64_t *handle);
	int (*release)(void *be, uint64_t handle);
	int (*map)(void *be, uint64_t va, uint64_t size, uint64_t handle);
	int (*set_access)(void *be, uint64_t va, uint64_t size);
	int (*unmap)(void *be, uint64_t va, uint64_t size);
	/* Wait for all device work (before unmapping synchronously freed memory). */
	int (*quiesce)(void *be);
	/* Stream fences: record after the stream's current work. */
	int (*fence_record)(void *be, void *stream, void **fence);
	int (*fence_query)(void *be, void *fence);	/* 1 done, 0 not yet, <0 */
	int (*fence_wait)(void *be, void *fence);
	void (*fence_free)(void *be, void *fence);
};

extern const struct nxq_be_ops nxq__host_be_ops;
extern const struct nxq_be_ops nxq__cuda_be_ops;
extern const struct nxq_kops nxq__dev_kops;
extern const struct nxq_kops nxq__local_kops;
extern const struct nxq_kops nxq__sock_kops;	/* sock.c: nxquotad's client socket */

/* sock.c: connect to nxquotad at path; *kprivp is nxq__sock_kops' state. */
int nxq__sock_open(const char *path, void **kprivp);
/* NXQD_SOCKET_PATH; the tests point it elsewhere. */
extern const char *nxq__sock_default;
/* context.c: NXQD_SOCKET_PATH_V0, where daemons before issue 29 listen. */
extern const char *nxq__sock_v0;
/*
 * Tests: reconnects done, restores refused, connections made and refused,
 * ticket notices told in a request and by the watcher.
 */
void nxq__sock_counters(const struct nxq_ctx *ctx, unsigned long out[6]);

/*
 * A holder's NXQ_IOC_STATUS (context.c), for the preload shim's budget-aware
 * cuMemGetInfo and its refusal messages: 0 with *st filled (version 1
 * fields only where ctx->features has NXQ_FEAT_STATUS_V1, else 0), or
 * -EOPNOTSUPP (no NXQ_FEAT_STATUS, or kernel ops without it), -ECHILD in a
 * forked child, or the authority's negative errno.  A round trip to the
 * authority: for queries and refusals, never per allocation.
 */
int nxq__status(struct nxq_ctx *ctx, uint64_t holder, struct nxq_status *st);

/*
 * Charge holder bytes without waiting, as a probe where the authority has
 * NXQ_FEAT_CHARGE_PROBE (a refusal is not a denial: no event, no count, no
 * ask, no last refusal), else as a plain no-wait charge.  0 or the
 * authority's negative errno.
 */
int nxq__charge_probe(struct nxq_ctx *ctx, uint64_t holder, uint64_t bytes);
/* A refused charge's version-1 fields into *why (err.c: both kernel ops'). */
void nxq__refusal_from(struct nxq_refusal *why, const struct nxq_charge *c);

/* Test entry points: a context on given kernel ops, an arena on given backend ops. */
int nxq__ctx_open_kops(const struct nxq_ctx_opts *opts, const struct nxq_kops *kops,
		       void *kpriv, struct nxq_ctx **ctxp);
int nxq__arena_create_be(struct nxq_ctx *ctx, const struct nxq_arena_opts *opts,
			 const struct nxq_be_ops *be, struct nxq_arena **arenap);

/*
 * pressure.c: a reactor over the clients registered with a context.  A
 * client is an fd (an eventfd: drained before handle() runs) and what to
 * do when it is readable and on each periodic report; both are called
 * with ctx->plock held.  The arena's ledger (ledger.c) registers one per
 * arena; pressure.c knows nothing of arenas.
 */
struct nxq_pclient {
	int fd;
	int (*handle)(void *arg);	/* fd readable: the number of tickets handled */
	void (*report)(void *arg);	/* the periodic report */
	void *arg;
};
int nxq__pressure_init(struct nxq_ctx *ctx);
void nxq__pressure_fini(struct nxq_ctx *ctx);
int nxq__pressure_attach(struct nxq_ctx *ctx, struct nxq_pclient *c);
int nxq__pressure_detach(struct nxq_ctx *ctx, struct nxq_pclient *c);
int nxq__in_handler(const struct nxq_ctx *ctx);	/* on the handling thread now */
void nxq__emit(struct nxq_ctx *ctx, const struct nxq_event *ev);

/*
 * Fork policy: a context and its arenas belong to the process that opened
 * the context.  A pthread_atfork() child handler bumps nxq__fork_gen; a
 * context whose fork_gen differs is the parent's, and the child's calls on
 * it fail with -ECHILD (close and destroy only free the child's copy).
 * A load and a compare: no system call on the warm path.
 */
extern unsigned int nxq__fork_gen;
static inline int nxq__forked(const struct nxq_ctx *ctx)
{
	return __atomic_load_n(&nxq__fork_gen, __ATOMIC_RELAXED) != ctx->fork_gen;
}
int nxq__fork_err(void);	/* -ECHILD, with the message */
void nxq__fork_register(void);	/* the pthread_atfork() handler, once */

/* err.c: the error message of the calling thread. */
__attribute__((format(printf, 2, 3)))
int nxq__err(int err, const char *fmt, ...);

/* err.c: CLOCK_MONOTONIC in nanoseconds. */
uint64_t nxq__now_ns(void);

/* options.c: the one validator of an options struct (size, zero tail). */
int nxq__opts_copy(void *out, size_t out_size, const void *in, uint32_t in_size, uint32_t ver0,
		   const char *what);

/* "123", "4K", "2M", "1G", "1T" (powers of 1024): 0 or -EINVAL/-ERANGE. */
int nxq__parse_size(const char *s, uint64_t *out);
/* Environment size: 0 if unset (*out untouched), 1 if set, -EINVAL malformed. */
int nxq__env_size(const char *name, uint64_t *out);

/* Environment milliseconds (digits only, at most a day): 0 unset, 1 set, -EINVAL. */
int nxq__env_ms(const char *name, uint64_t *out);

#endif /* NXQ_INTERNAL_H */

// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * gpu_tenant: one GPU workload on libnxquota, for make demo-gpu
 * (scripts/demo-gpu.sh) and the idle-memory figure of make -C bench
 * gpu-story.  It allocates real CUDA memory through an arena (CUDA VMM:
 * cuMemCreate/cuMemMap, written with cuMemsetD8), in chunks, and lets the
 * library answer the authority's pressure tickets (nxquotad or the module,
 * whichever nxq_ctx_open() finds).
 *
 *   gpu_tenant NAME [options]                 commands on stdin
 *   gpu_tenant NAME --plan inference|training [options]   figure (c)
 *
 * Options:
 *   --cgroup PATH    first move this process into PATH (relative to the
 *                    cgroup2 root, found in /proc/self/mountinfo)
 *   --unmanaged CAP  a process-local cap instead of an authority (the
 *                    "static split" of figure (c))
 *   --chunk SIZE     allocation unit (default 64M)
 *   --wait-ms MS     a refused growth waits up to MS for a grant (the
 *                    arena's grow_timeout_ms; default 0: refused at once)
 *   --reclaim        on a ticket, free the newest chunks (the workload's
 *                    cache) until the ask is covered; the library then
 *                    unmaps and releases the whole handles that became idle
 *   --log FILE       CSV lines "t_us,event,group,bytes,detail": samples
 *                    of the arena's charge (each change, and every 100 ms)
 *                    and events (ticket, release, answer, wait, grant)
 *   --now            print CLOCK_MONOTONIC in microseconds (for --start-us)
 *   --probe          print "key GPU-<uuid> total BYTES free BYTES" of device
 *                    0 and exit (or "skipped: no GPU (...)")
 *   plan mode: --cap SIZE --start-us T (CLOCK_MONOTONIC) --tick-ms MS
 *              --duration-ms MS --samples FILE
 *
 * Commands (stdin, one a line; each answered by one line starting "= "):
 *   grow SIZE    allocate SIZE more, chunk by chunk: "= granted ..." or
 *                "= refused ERRNO ..." (what was granted stays)
 *   pool SIZE    allocate SIZE more as one allocation (a KV-cache pool)
 *   free SIZE    free the newest allocations until SIZE is freed
 *   status       in use, mapped, charged, tickets, answered bytes
 *   quit
 * Events are printed as they happen: "@USEC [NAME] ..." (CLOCK_MONOTONIC
 * microseconds, so two tenants' lines sort into one timeline).
 *
 * Prints "skipped: no GPU (...)" and exits 0 without libcuda or a device.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "internal.h"
#include "cuda_api.h"

#define MAXCHUNKS 65536

static const struct nxq_cuda *cu;
static const char *name;
static struct nxq_ctx *ctx;
static struct nxq_arena *arena;
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;	/* chunks, log */
static struct item { void *p; uint64_t size; } item[MAXCHUNKS];
static int nitems;
static uint64_t chunk_sz = 64ULL << 20;
static FILE *logfp;
static volatile int stop_sampler;
static CUcontext pctx;			/* device 0's primary context */

static uint64_t now_us(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000 + (uint64_t)t.tv_nsec / 1000;
}

static double mib(uint64_t b)
{
	return (double)b / (1 << 20);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "gpu_tenant %s: ", name ? name : "");
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void logline(const char *ev, uint64_t bytes, int has_bytes, const char *detail)
{
	if (!logfp)
		return;
	pthread_mutex_lock(&mu);
	if (has_bytes)
		fprintf(logfp, "%llu,%s,%s,%llu,%s\n", (unsigned long long)now_us(), ev, name,
			(unsigned long long)bytes, detail);
	else
		fprintf(logfp, "%llu,%s,%s,,%s\n", (unsigned long long)now_us(), ev, name, detail);
	fflush(logfp);
	pthread_mutex_unlock(&mu);
}

/* An event line on stdout ("@USEC [NAME] text") and in the log. */
static void event(const char *ev, const char *fmt, ...)
{
	char text[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(text, sizeof(text), fmt, ap);
	va_end(ap);
	printf("@%llu [%s] %s\n", (unsigned long long)now_us(), name, text);
	fflush(stdout);
	for (char *p = text; *p; p++)
		if (*p == ',')
			*p = ';';
	logline(ev, 0, 0, text);
}

static struct nxq_stats stats(void)
{
	struct nxq_stats s = { .size = sizeof(s) };

	if (nxq_arena_stats(arena, &s) < 0)
		die("nxq_arena_stats: %s", nxq_errmsg());
	return s;
}

/* The driver's view of the device: free bytes (cuMemGetInfo). */
static uint64_t dev_free(void)
{
	size_t fr = 0, total = 0;

	/* the calling thread may be the library's pressure thread */
	if (cu->cuCtxSetCurrent(pctx) == 0 && cu->cuMemGetInfo(&fr, &total) == 0)
		return fr;
	return 0;
}

static const char *reason_name(uint32_t r)
{
	switch (r) {
	case NXQ_TICKET_REASON_MAX: return "MAX";
	case NXQ_TICKET_REASON_DEVICE: return "DEVICE";
	case NXQ_TICKET_REASON_BUDGET: return "BUDGET";
	default: return "?";
	}
}

static const char *level_name(uint32_t l)
{
	switch (l) {
	case NXQ_TICKET_LEVEL_ASK: return "ASK";
	case NXQ_TICKET_LEVEL_RECALL: return "RECALL";
	default: return "?";
	}
}

static void on_event(const struct nxq_event *ev, void *user)
{
	(void)user;
	if (ev->type == NXQ_EVENT_TICKET)
		event("ticket", "ticket %llu: asked %.0f MiB (reason %s, level %s)",
		      (unsigned long long)ev->generation, mib(ev->bytes_wanted),
		      reason_name(ev->reason), level_name(ev->level));
	else if (ev->type == NXQ_EVENT_ANSWER)
		event("answer", "answered ticket %llu: released %.0f MiB (cuMemUnmap + "
		      "cuMemRelease), holds %.0f MiB; driver: %.0f MiB free%s",
		      (unsigned long long)ev->generation, mib(ev->released), mib(ev->charged),
		      mib(dev_free()), ev->error ? " (answer failed)" : "");
}

/* Free the newest items until bytes are freed; what was freed. */
static uint64_t shrink(uint64_t bytes)
{
	uint64_t freed = 0;

	pthread_mutex_lock(&mu);
	while (nitems > 0 && freed < bytes) {
		nitems--;
		nxq_free(arena, item[nitems].p);
		freed += item[nitems].size;
	}
	pthread_mutex_unlock(&mu);
	return freed;
}

/* On a ticket: free the newest items (its cache) until the ask is covered. */
static int reclaim(struct nxq_arena *a, uint64_t want, void *user)
{
	uint64_t freed;
	int n = nitems;

	(void)a;
	(void)user;
	freed = shrink(want);
	event("release", "releasing %.0f MiB: freed %d allocation(s) of its cache", mib(freed),
	      n - nitems);
	return 0;
}

/*
 * Grow by bytes: in chunks (a training job's tensors), or as one
 * allocation (an inference server's KV pool); 0 or the first refusal.
 */
static int grow(uint64_t bytes, int one, uint64_t *got)
{
	uint64_t t0 = now_us();

	*got = 0;
	while (*got < bytes) {
		uint64_t sz = one ? bytes : chunk_sz;
		void *p;
		int r;

		if (nitems == MAXCHUNKS)
			return -E2BIG;
		r = nxq_alloc(arena, sz, 0, &p);
		if (r < 0)
			return r;
		if (one && logfp)
			event("grant", "granted and mapped %.0f MiB after %.3f ms", mib(sz),
			      (double)(now_us() - t0) / 1e3);
		/* real device writes: the memory is used, not just mapped */
		if (cu->cuMemsetD8((CUdeviceptr)p, 0x5a, sz))
			die("cuMemsetD8 failed");
		pthread_mutex_lock(&mu);
		item[nitems].p = p;
		item[nitems++].size = sz;
		pthread_mutex_unlock(&mu);
		*got += sz;
	}
	return 0;
}

static const char *errname(int e)
{
	switch (-e) {
	case EDQUOT: return "EDQUOT";
	case ENOSPC: return "ENOSPC";
	case ETIMEDOUT: return "ETIMEDOUT";
	case ENOMEM: return "ENOMEM";
	case EAGAIN: return "EAGAIN";
	default: return strerror(-e);
	}
}

/* Samples of the charge: each change (polled every 2 ms) and every 100 ms. */
static void *sampler(void *arg)
{
	uint64_t last = UINT64_MAX, last_t = 0;

	(void)arg;
	while (!stop_sampler) {
		struct nxq_stats s = stats();
		uint64_t t = now_us();

		if (s.charged != last || t - last_t >= 100000) {
			logline("sample", s.charged, 1, "");
			last = s.charged;
			last_t = t;
		}
		usleep(2000);
	}
	return NULL;
}

static int parse_size(const char *s, uint64_t *v)
{
	return nxq__parse_size(s, v);
}

static void interactive(void)
{
	char line[256], arg[64];

	printf("= ready: %s, device %s, chunk %.0f MiB\n", name,
	       nxq_ctx_is_managed(ctx) ? "managed" : "unmanaged", mib(chunk_sz));
	fflush(stdout);
	while (fgets(line, sizeof(line), stdin)) {
		uint64_t v, got;
		int r;

		if ((sscanf(line, "grow %63s", arg) == 1 || sscanf(line, "pool %63s", arg) == 1) &&
		    !parse_size(arg, &v)) {
			int one = line[0] == 'p';
			uint64_t t0 = now_us();
			struct nxq_stats s;

			if (one)
				event("ask", "asks for a pool of %.0f MiB (one allocation)", mib(v));
			r = grow(v, one, &got);
			s = stats();
			if (!r)
				printf("= granted %.0f MiB after %.3f ms, holds %.0f MiB (mapped %.0f "
				       "MiB); waits %llu\n", mib(got), (double)(now_us() - t0) / 1e3,
				       mib(s.in_use), mib(s.mapped),
				       (unsigned long long)s.grow_waits);
			else
				printf("= refused %s after %.0f MiB granted, holds %.0f MiB (%s)\n",
				       errname(r), mib(got), mib(s.in_use), nxq_errmsg());
		} else if (sscanf(line, "free %63s", arg) == 1 && !parse_size(arg, &v)) {
			got = shrink(v);
			printf("= freed %.0f MiB, holds %.0f MiB (charged %.0f MiB)\n", mib(got),
			       mib(stats().in_use), mib(stats().charged));
		} else if (!strncmp(line, "status", 6)) {
			struct nxq_stats s = stats();

			printf("= status in_use %llu mapped %llu charged %llu tickets %llu "
			       "answered_bytes %llu grow_waits %llu\n",
			       (unsigned long long)s.in_use, (unsigned long long)s.mapped,
			       (unsigned long long)s.charged, (unsigned long long)s.tickets,
			       (unsigned long long)s.answered_bytes,
			       (unsigned long long)s.grow_waits);
		} else if (!strncmp(line, "quit", 4)) {
			printf("= bye\n");
			fflush(stdout);
			return;
		} else {
			printf("= error: unknown command: %s", line);
		}
		fflush(stdout);
	}
}

/*
 * Figure (c): demand as a fraction of the capacity over time (seconds).
 * Inference: 10% between requests, a burst to 45% for 2 s every 6 s.
 * Training: 15% for the first 2 s, then 75% (it wants more than half).
 */
static double demand(const char *plan, double t)
{
	if (!strcmp(plan, "inference")) {
		double k = t - 6.0 * (double)(long)(t / 6.0);

		return k >= 3.0 && k < 5.0 ? 0.45 : 0.10;
	}
	return t < 2.0 ? 0.15 : 0.75;
}

static void plan_run(const char *plan, uint64_t cap, uint64_t start_us, uint64_t tick_ms,
		     uint64_t dur_ms, const char *samples)
{
	FILE *f = fopen(samples, "w");
	uint64_t ticks = dur_ms / tick_ms;

	if (!f)
		die("%s: %s", samples, strerror(errno));
	fprintf(f, "tick,t_ms,group,demand,in_use,mapped,charged,refused\n");
	if (now_us() > start_us)
		fprintf(stderr, "gpu_tenant %s: ready %.0f ms after the start: the first ticks "
			"run late\n", name, (double)(now_us() - start_us) / 1e3);
	for (uint64_t k = 0; k < ticks; k++) {
		uint64_t at = start_us + k * tick_ms * 1000, got = 0, held, want, refused = 0;
		struct nxq_stats s;
		int r = 0;

		while (now_us() < at)
			usleep((useconds_t)(at - now_us() < 1000 ? at - now_us() : 1000));
		want = (uint64_t)(demand(plan, (double)(k * tick_ms) / 1000.0) * (double)cap);
		want -= want % chunk_sz;
		pthread_mutex_lock(&mu);
		held = 0;
		for (int i = 0; i < nitems; i++)
			held += item[i].size;
		pthread_mutex_unlock(&mu);
		if (held < want)
			r = grow(want - held, !strcmp(plan, "inference"), &got);
		else if (held > want)
			shrink(held - want);
		if (r < 0 && r != -ENOSPC && r != -EDQUOT && r != -ETIMEDOUT && r != -ENOMEM)
			die("grow: %s", nxq_errmsg());
		s = stats();
		if (s.in_use < want)
			refused = want - s.in_use;
		fprintf(f, "%llu,%llu,%s,%llu,%llu,%llu,%llu,%llu\n", (unsigned long long)k,
			(unsigned long long)(k * tick_ms), plan, (unsigned long long)want,
			(unsigned long long)s.in_use, (unsigned long long)s.mapped,
			(unsigned long long)s.charged, (unsigned long long)refused);
	}
	shrink(UINT64_MAX);
	fclose(f);
}

/* Move this process into PATH under the cgroup2 mount. */
static void enter_cgroup(const char *path)
{
	char line[4096], mnt[2048], fs[64], file[4200];
	FILE *f = fopen("/proc/self/mountinfo", "re");
	int found = 0, fd;

	if (!f)
		die("/proc/self/mountinfo: %s", strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (!sep || sscanf(sep, " - %63s", fs) != 1 || strcmp(fs, "cgroup2"))
			continue;
		if (sscanf(line, "%*s %*s %*s %*s %2047s", mnt) == 1) {
			found = 1;
			break;
		}
	}
	fclose(f);
	if (!found)
		die("no cgroup2 mount");
	snprintf(file, sizeof(file), "%s%s/cgroup.procs", mnt, path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		die("%s: %s", file, strerror(errno));
	close(fd);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "cgroup", 1, 0, 'g' }, { "unmanaged", 1, 0, 'u' }, { "chunk", 1, 0, 'c' },
		{ "wait-ms", 1, 0, 'w' }, { "reclaim", 0, 0, 'r' }, { "log", 1, 0, 'l' },
		{ "plan", 1, 0, 'p' }, { "cap", 1, 0, 'C' }, { "start-us", 1, 0, 's' },
		{ "probe", 0, 0, 'P' }, { "tick-ms", 1, 0, 't' }, { "duration-ms", 1, 0, 'd' }, { "samples", 1, 0, 'S' },
		{ 0 }
	};
	struct nxq_ctx_opts co = { .size = sizeof(co), .on_event = on_event };
	struct nxq_arena_opts ao = { .size = sizeof(ao), .backend = NXQ_BACKEND_CUDA,
				     .retain_idle = NXQ_OPT_ZERO, .handle_pool = NXQ_OPT_ZERO,
				     .grow_timeout_ms = NXQ_OPT_ZERO };
	const char *plan = NULL, *samples = NULL, *cg = NULL;
	uint64_t cap = 0, start_us = 0, tick_ms = 50, dur_ms = 30000, ucap = 0;
	int do_reclaim = 0, err = 0, o, n = 0, probe = 0;
	pthread_t sth;
	CUdevice dev;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 2 && !strcmp(argv[1], "--now")) {
		printf("%llu\n", (unsigned long long)now_us());
		return 0;
	}
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		uint64_t v = 0;

		if ((o == 'u' || o == 'c' || o == 'C') && parse_size(optarg, &v))
			die("%s: not a size", optarg);
		switch (o) {
		case 'g': cg = optarg; break;
		case 'u': ucap = v; break;
		case 'c': chunk_sz = v; break;
		case 'C': cap = v; break;
		case 'w': ao.grow_timeout_ms = strtoull(optarg, NULL, 10) ? : NXQ_OPT_ZERO; break;
		case 'r': do_reclaim = 1; break;
		case 'P': probe = 1; break;
		case 'l': logfp = fopen(optarg, "a"); if (!logfp) die("%s: %s", optarg, strerror(errno));
			break;
		case 'p': plan = optarg; break;
		case 's': start_us = strtoull(optarg, NULL, 10); break;
		case 't': tick_ms = strtoull(optarg, NULL, 10); break;
		case 'd': dur_ms = strtoull(optarg, NULL, 10); break;
		case 'S': samples = optarg; break;
		default: die("usage: gpu_tenant NAME [options] (see the source's header)");
		}
	}
	if (optind != argc - 1 && !probe)
		die("usage: gpu_tenant NAME [options]");
	name = probe ? "probe" : argv[optind];
	if (plan && (strcmp(plan, "inference") && strcmp(plan, "training")))
		die("--plan inference|training");
	if (plan && (!cap || !samples || !tick_ms))
		die("--plan needs --cap, --samples and --tick-ms > 0");
	if (!chunk_sz)
		die("--chunk must be > 0");
	if (cg)
		enter_cgroup(cg);

	cu = nxq__cuda_load(&err);
	if (!cu) {
		printf("skipped: no GPU (%s)\n", nxq_errmsg());
		return 0;
	}
	if (cu->cuInit(0) || cu->cuDeviceGetCount(&n) || !n) {
		printf("skipped: no GPU (cuInit failed or no CUDA device)\n");
		return 0;
	}
	if (cu->cuDeviceGet(&dev, 0) || cu->cuDevicePrimaryCtxRetain(&pctx, dev) ||
	    cu->cuCtxSetCurrent(pctx))
		die("cannot make device 0's primary context current");
	if (probe) {
		unsigned char u[16];
		size_t fr = 0, total = 0;

		if (cu->cuDeviceGetUuid((CUuuid *)u, dev) || cu->cuMemGetInfo(&fr, &total))
			die("cuDeviceGetUuid/cuMemGetInfo failed");
		printf("key GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x "
		       "total %zu free %zu\n", u[0], u[1], u[2], u[3], u[4], u[5], u[6], u[7], u[8],
		       u[9], u[10], u[11], u[12], u[13], u[14], u[15], total, fr);
		return 0;
	}

	if (ucap) {
		co.flags = NXQ_CTX_UNMANAGED;
		co.unmanaged_cap = ucap;
	}
	if (nxq_ctx_open(&co, &ctx) < 0)
		die("nxq_ctx_open: %s (is nxquotad running? NXQUOTA_SOCKET=%s)", nxq_errmsg(),
		    getenv("NXQUOTA_SOCKET") ? getenv("NXQUOTA_SOCKET") : "(unset)");
	if (!ucap && !nxq_ctx_is_managed(ctx))
		die("no authority: neither /dev/nxquota nor nxquotad's socket");
	/* one handle per chunk: a ticket is answered in whole chunks */
	ao.grow_batch = chunk_sz;
	if (nxq_arena_create(ctx, &ao, &arena) < 0)
		die("nxq_arena_create: %s", nxq_errmsg());
	if (do_reclaim && nxq_arena_add_reclaim(arena, reclaim, NULL) < 0)
		die("nxq_arena_add_reclaim: %s", nxq_errmsg());
	if (logfp && pthread_create(&sth, NULL, sampler, NULL))
		die("pthread_create");

	if (plan)
		plan_run(plan, cap, start_us ? start_us : now_us(), tick_ms, dur_ms, samples);
	else
		interactive();

	if (logfp) {
		stop_sampler = 1;
		pthread_join(sth, NULL);
	}
	shrink(UINT64_MAX);
	nxq_arena_destroy(arena);
	nxq_ctx_close(ctx);
	return 0;
}

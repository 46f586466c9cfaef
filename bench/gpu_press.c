// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * gpu_press: figures (a) and (b) of the GPU story (make -C bench gpu-story),
 * measured side by side in one run, with whatever authority nxq_ctx_open()
 * finds (nxquotad on a GPU machine without the module).
 *
 * Two processes in two cgroups: W (the waiter, --cg-w) and H (the holder,
 * --cg-h, forked before either touches CUDA).  The device must be
 * registered with a capacity of exactly --fill (H fills it) and both
 * cgroups must have a budget of at least --fill (scripts/demo-gpu.sh does
 * both).
 *
 * (a) the GPU pressure round trip, for each size X of --sizes: H maps
 *     --fill in handles of X (real cuMemCreate/cuMemMap, written), all in
 *     use; the device is full.  Timed in W around one nxq_alloc(X)
 *     of an arena with grow_timeout_ms: the library's charge is refused,
 *     it waits (NXQ_CHARGE_WAIT); the authority opens a ticket on H and
 *     signals its eventfd; H's library thread reads the ticket, calls H's
 *     reclaim callback, which frees its newest allocation; the library
 *     unmaps and releases that handle of X (cuMemUnmap + cuMemRelease) and
 *     answers; the
 *     grant wakes W, whose library maps X (cuMemCreate + cuMemMap +
 *     cuMemSetAccess).  Untimed: W frees (its handle released), H
 *     allocates X again.  Side by side, rounds interleaved:
 *       fits:  the same nxq_alloc(X) when H has freed X first (no
 *              pressure: what growing costs anyway), and
 *       pipe:  a pipe ping-pong W -> H -> W (two wake-ups, the IPC floor);
 *     and H's own time from reading the ticket to its answer (release).
 *     The baseline, what a user does without nxquota, once per size:
 *       kill:  a process holding X (cuMemAlloc) is SIGKILLed; time until
 *              the driver reports the X free again (cuMemGetInfo; on the
 *              fake driver, whose memory is per process, until waitpid).
 * (b) on W's connection to the authority: NXQ_IOC_CHARGE + NXQ_IOC_UNCHARGE
 *     of one granule (a charge that fits) against NXQ_IOC_VERSION (a null
 *     request), through the library's own kernel-ops table, interleaved in
 *     blocks of 100.
 *
 * Output: "BENCH gpu_press ..." lines with medians and p99 (microseconds)
 * and ratios of medians.  "skipped: no GPU (...)" without libcuda/a device.
 */
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <sys/wait.h>

#include "arena.h"
#include "cuda_api.h"

static const struct nxq_cuda *cu;
static int p2h[2], h2p[2];
static uint64_t fill = 4ULL << 30;
static int rounds = 100, nulls = 20000;
static const char *cg_w, *cg_h;

#define DIE(...) do { fprintf(stderr, "gpu_press: " __VA_ARGS__); fputc('\n', stderr); \
		      exit(1); } while (0)
#define NX(call) do { int _r = (call); if (_r < 0) DIE("%s: %s", #call, nxq_errmsg()); } while (0)

static uint64_t now_ns(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (uint64_t)t.tv_sec * 1000000000ULL + (uint64_t)t.tv_nsec;
}

static void xread(int fd, void *b, size_t n)
{
	ssize_t r = read(fd, b, n);

	if (r == 0)
		DIE("the other process (%s) exited", getpid() == getpgrp() ? "holder" : "waiter");
	if (r != (ssize_t)n)
		DIE("read: %s", r < 0 ? strerror(errno) : "short");
}

static void xwrite(int fd, const void *b, size_t n)
{
	if (write(fd, b, n) != (ssize_t)n)
		DIE("write: %s", strerror(errno));
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/* Sorts v; the p-th percentile (nearest rank), in microseconds. */
static double pct_us(uint64_t *v, int n, int p)
{
	int k = (n * p + 99) / 100;

	if (k < 1)
		k = 1;
	qsort(v, (size_t)n, sizeof(*v), cmp_u64);
	return (double)v[k - 1] / 1e3;
}

static void enter_cgroup(const char *path)
{
	char line[4096], mnt[2048], fs[64], file[4200];
	FILE *f;
	int fd, found = 0;

	if (!path)
		return;
	f = fopen("/proc/self/mountinfo", "re");
	while (f && fgets(line, sizeof(line), f)) {
		char *sep = strstr(line, " - ");

		if (sep && sscanf(sep, " - %63s", fs) == 1 && !strcmp(fs, "cgroup2") &&
		    sscanf(line, "%*s %*s %*s %*s %2047s", mnt) == 1) {
			found = 1;
			break;
		}
	}
	if (f)
		fclose(f);
	if (!found)
		DIE("no cgroup2 mount");
	snprintf(file, sizeof(file), "%s%s/cgroup.procs", mnt, path);
	fd = open(file, O_WRONLY | O_CLOEXEC);
	if (fd < 0 || write(fd, "0", 1) != 1)
		DIE("%s: %s", file, strerror(errno));
	close(fd);
}

static void cuda_up(void)
{
	CUcontext pctx;
	CUdevice dev;

	if (cu->cuInit(0) || cu->cuDeviceGet(&dev, 0) ||
	    cu->cuDevicePrimaryCtxRetain(&pctx, dev) || cu->cuCtxSetCurrent(pctx))
		DIE("cannot make device 0's primary context current");
}

static uint64_t dev_free(void)
{
	size_t fr = 0, total = 0;

	if (cu->cuMemGetInfo(&fr, &total))
		return 0;
	return fr;
}

/* ---- H: the holder ---- */

static uint64_t t_ticket;		/* H's pressure thread */
static uint64_t rel[4096];
static int nrel;

static void h_event(const struct nxq_event *ev, void *user)
{
	(void)user;
	if (ev->type == NXQ_EVENT_TICKET)
		t_ticket = now_ns();
	else if (ev->type == NXQ_EVENT_ANSWER && nrel < 4096 && t_ticket)
		rel[nrel++] = now_ns() - t_ticket;
}

/* H's allocations, newest last: its reclaim callback frees from the end. */
static pthread_mutex_t hmu = PTHREAD_MUTEX_INITIALIZER;
static void **hp;
static uint64_t hn;

static int h_reclaim(struct nxq_arena *a, uint64_t want, void *user)
{
	uint64_t x = *(uint64_t *)user, freed = 0;

	pthread_mutex_lock(&hmu);
	while (hn && freed < want) {
		NX(nxq_free(a, hp[--hn]));
		freed += x;
	}
	pthread_mutex_unlock(&hmu);
	return 0;
}

/* One handle of x more: created, mapped, written, in use. */
static void h_push(struct nxq_arena *a, uint64_t x)
{
	void *p;

	NX(nxq_alloc(a, x, 0, &p));
	if (cu->cuMemsetD8((CUdeviceptr)p, 1, x))
		DIE("cuMemsetD8");
	pthread_mutex_lock(&hmu);
	hp[hn++] = p;
	pthread_mutex_unlock(&hmu);
}

/*
 * H fills the device with handles of x, all in use; a ticket is answered
 * by its reclaim callback freeing the newest (retain_idle 0: the library
 * unmaps and releases the handle and answers with it).
 */
static struct nxq_arena *h_fill(struct nxq_ctx *c, uint64_t *x)
{
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_CUDA,
				    .grow_batch = *x, .retain_idle = NXQ_OPT_ZERO,
				    .handle_pool = NXQ_OPT_ZERO,
				    .grow_timeout_ms = NXQ_OPT_ZERO };
	struct nxq_arena *a;

	free(hp);
	hp = calloc(fill / *x + 1, sizeof(*hp));
	hn = 0;
	NX(nxq_arena_create(c, &o, &a));
	NX(nxq_arena_add_reclaim(a, h_reclaim, x));
	for (uint64_t i = 0; i < fill / *x; i++)
		h_push(a, *x);
	if (cu->cuCtxSynchronize())
		DIE("cuCtxSynchronize");
	return a;
}

/* H frees its newest handle (no ticket): the device has x free. */
static void h_trim(struct nxq_arena *a)
{
	pthread_mutex_lock(&hmu);
	if (hn)
		NX(nxq_free(a, hp[--hn]));
	pthread_mutex_unlock(&hmu);
}

enum { C_FILL = 'F', C_REFILL = 'R', C_TRIM = 'T', C_PING = 'P', C_DROP = 'D', C_RELS = 'S',
       C_EXIT = 'Q' };

static void holder(void)
{
	struct nxq_ctx_opts o = { .size = sizeof(o), .on_event = h_event };
	struct nxq_arena *a = NULL;
	struct nxq_ctx *c;
	uint64_t x = 0;
	char cmd;

	enter_cgroup(cg_h);
	cuda_up();
	NX(nxq_ctx_open(&o, &c));
	if (!nxq_ctx_is_managed(c))
		DIE("holder: no authority (nxquotad's socket or /dev/nxquota)");
	xwrite(h2p[1], "k", 1);
	for (;;) {
		xread(p2h[0], &cmd, 1);
		switch (cmd) {
		case C_FILL:
			xread(p2h[0], &x, sizeof(x));
			a = h_fill(c, &x);
			nrel = 0;
			break;
		case C_REFILL:
			h_push(a, x);
			break;
		case C_TRIM:
			h_trim(a);
			break;
		case C_PING:
			break;
		case C_DROP:
			while (hn)
				h_trim(a);
			NX(nxq_arena_destroy(a));
			a = NULL;
			break;
		case C_RELS:
			xwrite(h2p[1], &nrel, sizeof(nrel));
			xwrite(h2p[1], rel, sizeof(rel[0]) * (size_t)nrel);
			continue;
		case C_EXIT:
			NX(nxq_ctx_close(c));
			_exit(0);
		}
		xwrite(h2p[1], "k", 1);
	}
}

static void h_cmd(char cmd)
{
	char b;

	xwrite(p2h[1], &cmd, 1);
	xread(h2p[0], &b, 1);
}

/* ---- W: the waiter ---- */

static struct nxq_arena *w_arena(struct nxq_ctx *c, uint64_t x)
{
	struct nxq_arena_opts o = { .size = sizeof(o), .backend = NXQ_BACKEND_CUDA,
				    .grow_batch = x, .retain_idle = NXQ_OPT_ZERO,
				    .handle_pool = NXQ_OPT_ZERO, .grow_timeout_ms = 10000 };
	struct nxq_arena *a;

	NX(nxq_arena_create(c, &o, &a));
	return a;
}

static uint64_t timed_alloc(struct nxq_arena *a, uint64_t x)
{
	uint64_t t0 = now_ns(), t;
	void *p;

	NX(nxq_alloc(a, x, 0, &p));
	t = now_ns() - t0;
	if (cu->cuMemsetD8((CUdeviceptr)p, 3, x))
		DIE("cuMemsetD8");
	NX(nxq_free(a, p));	/* retain_idle 0: unmapped, released, uncharged */
	return t;
}

/*
 * The baseline: a process holding x (cuMemAlloc, written) is SIGKILLed;
 * the time until the driver reports the x free again.  The process is a
 * fresh exec of this program (CUDA does not survive fork()).
 */
static double kill_baseline(uint64_t x, int *fake)
{
	char arg[32];
	uint64_t before, t0;
	int rd[2], st;
	pid_t pid;
	char b;

	if (pipe(rd))
		DIE("pipe");
	snprintf(arg, sizeof(arg), "%llu", (unsigned long long)x);
	pid = fork();
	if (pid == 0) {
		dup2(rd[1], 1);
		execl("/proc/self/exe", "gpu_press", "--kill-child", arg, (char *)NULL);
		_exit(127);
	}
	close(rd[1]);
	if (read(rd[0], &b, 1) != 1)
		DIE("kill baseline: the child could not allocate %llu bytes",
		    (unsigned long long)x);
	close(rd[0]);
	*fake = getenv("NXQ_FAKE_CUDA") != NULL;
	before = dev_free();
	t0 = now_ns();
	kill(pid, SIGKILL);
	if (*fake) {		/* the fake's memory is per process: until waitpid */
		waitpid(pid, &st, 0);
		return (double)(now_ns() - t0) / 1e6;
	}
	while (dev_free() < before + x - x / 64 && now_ns() - t0 < 10000000000ULL)
		usleep(100);
	t0 = now_ns() - t0;
	waitpid(pid, &st, 0);
	return t0 >= 10000000000ULL ? -1 : (double)t0 / 1e6;	/* -1: not back in 10 s */
}

static void kill_child(uint64_t x)
{
	CUdeviceptr d;

	cuda_up();
	if (cu->cuMemAlloc(&d, x) || cu->cuMemsetD8(d, 4, x) || cu->cuCtxSynchronize())
		_exit(2);
	if (write(1, "k", 1) != 1)
		_exit(3);
	for (;;)
		pause();
}

static int cmp_d(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void figure_a(struct nxq_ctx *c, uint64_t x)
{
	uint64_t *tp = calloc((size_t)rounds, 8), *tf = calloc((size_t)rounds, 8);
	uint64_t *tq = calloc((size_t)rounds, 8), rl[4096], tickets0;
	struct nxq_arena *a = w_arena(c, x);
	struct nxq_stats s = { .size = sizeof(s) };
	double kill_ms[3];
	int n, fake = 0;
	char b;

	xwrite(p2h[1], (char[]){ C_FILL }, 1);
	xwrite(p2h[1], &x, sizeof(x));
	xread(h2p[0], &b, 1);
	NX(nxq_arena_stats(a, &s));
	tickets0 = s.grow_waits;
	for (int i = 0; i < rounds; i++) {
		usleep(200);		/* H's thread surely asleep */
		tp[i] = timed_alloc(a, x);
		h_cmd(C_REFILL);

		h_cmd(C_TRIM);
		usleep(200);
		tf[i] = timed_alloc(a, x);
		h_cmd(C_REFILL);

		usleep(200);
		{
			uint64_t t0 = now_ns();

			h_cmd(C_PING);
			tq[i] = now_ns() - t0;
		}
	}
	NX(nxq_arena_stats(a, &s));
	xwrite(p2h[1], (char[]){ C_RELS }, 1);
	xread(h2p[0], &n, sizeof(n));
	xread(h2p[0], rl, sizeof(rl[0]) * (size_t)n);
	h_cmd(C_DROP);
	NX(nxq_arena_destroy(a));
	if (s.grow_waits - tickets0 != (uint64_t)rounds)
		DIE("size %llu: %llu of %d pressure rounds waited for a grant (expected all)",
		    (unsigned long long)x, (unsigned long long)(s.grow_waits - tickets0), rounds);
	if (n < rounds)
		DIE("size %llu: the holder answered %d tickets in %d rounds", (unsigned long long)x,
		    n, rounds);
	for (int k = 0; k < 3; k++)
		kill_ms[k] = kill_baseline(x, &fake);
	{
		double pm = pct_us(tp, rounds, 50), p99 = pct_us(tp, rounds, 99);
		double fm = pct_us(tf, rounds, 50), f99 = pct_us(tf, rounds, 99);
		double qm = pct_us(tq, rounds, 50), q99 = pct_us(tq, rounds, 99);
		double rm = pct_us(rl, n, 50), r99 = pct_us(rl, n, 99);
		double km;

		qsort(kill_ms, 3, sizeof(double), cmp_d);
		km = kill_ms[1];
		printf("BENCH gpu_press what=pressure bytes=%llu rounds=%d median_us=%.1f "
		       "p99_us=%.1f\n", (unsigned long long)x, rounds, pm, p99);
		printf("BENCH gpu_press what=release bytes=%llu n=%d median_us=%.1f p99_us=%.1f "
		       "(holder: ticket read -> cuMemUnmap+cuMemRelease -> answer)\n",
		       (unsigned long long)x, n, rm, r99);
		printf("BENCH gpu_press what=fits bytes=%llu rounds=%d median_us=%.1f p99_us=%.1f\n",
		       (unsigned long long)x, rounds, fm, f99);
		printf("BENCH gpu_press what=pipe rounds=%d median_us=%.1f p99_us=%.1f\n", rounds,
		       qm, q99);
		if (km < 0)
			printf("BENCH gpu_press what=kill-baseline bytes=%llu not measured: the driver "
			       "did not show the bytes free within 10 s of SIGKILL\n",
			       (unsigned long long)x);
		else
			printf("BENCH gpu_press what=kill-baseline bytes=%llu n=3 median_ms=%.1f (%s)\n",
			       (unsigned long long)x, km, fake ? "fake driver: until waitpid" :
			       "SIGKILL until cuMemGetInfo shows the bytes free");
		printf("BENCH gpu_press what=negotiation bytes=%llu median_us=%.1f (pressure - fits - "
		       "release: the refusal, the ticket, the answer and the grant, medians)\n",
		       (unsigned long long)x, pm - fm - rm);
		printf("BENCH gpu_press ratio bytes=%llu pressure/fits=%.2f pressure/pipe=%.1f "
		       "kill/pressure=%.1f moved_GiB_per_s=%.2f (medians)\n", (unsigned long long)x,
		       pm / fm, pm / qm, km < 0 ? -1.0 : km * 1e3 / pm,
		       (double)x / (1 << 30) / (pm / 1e6));
	}
	free(tp);
	free(tf);
	free(tq);
}

static void figure_b(struct nxq_ctx *c)
{
	struct nxq_arena *a = w_arena(c, 2 << 20);
	const struct nxq_kops *k = c->kops;
	uint64_t *tv = calloc((size_t)nulls, 8), *tc = calloc((size_t)nulls, 8);
	uint64_t g = a->granule, hid = a->holder;

	for (int i = 0; i < nulls; i += 100) {
		for (int j = i; j < i + 100 && j < nulls; j++) {
			struct nxq_version v = { .size = sizeof(v) };
			uint64_t t0 = now_ns();

			if (k->version(c, &v))
				DIE("NXQ_IOC_VERSION failed");
			tv[j] = now_ns() - t0;
		}
		for (int j = i; j < i + 100 && j < nulls; j++) {
			uint64_t t0 = now_ns();
			int r = k->charge(c, hid, g, 0, NULL);

			if (r)
				DIE("NXQ_IOC_CHARGE of %llu: %s", (unsigned long long)g, strerror(-r));
			r = k->uncharge(c, hid, g);
			if (r)
				DIE("NXQ_IOC_UNCHARGE: %s", strerror(-r));
			tc[j] = now_ns() - t0;
		}
	}
	{
		double vm = pct_us(tv, nulls, 50), v99 = pct_us(tv, nulls, 99);
		double cm = pct_us(tc, nulls, 50), c99 = pct_us(tc, nulls, 99);

		printf("BENCH gpu_press what=null authority=%s n=%d median_us=%.2f p99_us=%.2f "
		       "(NXQ_IOC_VERSION)\n", k->name, nulls, vm, v99);
		printf("BENCH gpu_press what=charge+uncharge authority=%s n=%d bytes=%llu "
		       "median_us=%.2f p99_us=%.2f\n", k->name, nulls, (unsigned long long)g, cm,
		       c99);
		printf("BENCH gpu_press ratio charge+uncharge/null=%.2f (medians)\n", cm / vm);
	}
	NX(nxq_arena_destroy(a));
	free(tv);
	free(tc);
}

int main(int argc, char **argv)
{
	static const struct option lo[] = {
		{ "rounds", 1, 0, 'r' }, { "nulls", 1, 0, 'n' }, { "fill", 1, 0, 'f' },
		{ "sizes", 1, 0, 's' }, { "cg-w", 1, 0, 'w' }, { "cg-h", 1, 0, 'h' }, { 0 }
	};
	const char *sizes = "2M,64M,1G";
	struct nxq_ctx_opts co = { .size = sizeof(co) };
	struct nxq_ctx *c;
	char buf[256], *tok, *save, b;
	int o, err = 0, n = 0, st;
	pid_t pid;

	setvbuf(stdout, NULL, _IOLBF, 0);
	if (argc == 3 && !strcmp(argv[1], "--kill-child")) {
		cu = nxq__cuda_load(&err);
		if (!cu)
			_exit(2);
		kill_child(strtoull(argv[2], NULL, 10));
	}
	while ((o = getopt_long(argc, argv, "", lo, NULL)) != -1) {
		switch (o) {
		case 'r': rounds = atoi(optarg); break;
		case 'n': nulls = atoi(optarg); break;
		case 'f': if (nxq__parse_size(optarg, &fill)) DIE("--fill: not a size"); break;
		case 's': sizes = optarg; break;
		case 'w': cg_w = optarg; break;
		case 'h': cg_h = optarg; break;
		default: DIE("usage: gpu_press [--rounds N] [--nulls N] [--fill SIZE] "
			     "[--sizes S,S] [--cg-w PATH] [--cg-h PATH]");
		}
	}
	if (rounds < 3 || rounds > 4000 || nulls < 100)
		DIE("--rounds 3..4000, --nulls >= 100");
	cu = nxq__cuda_load(&err);
	if (!cu) {
		printf("skipped: no GPU (%s)\n", nxq_errmsg());
		return 0;
	}
	pid = fork();		/* probe in a child: CUDA is not fork-safe */
	if (pid == 0)
		_exit(cu->cuInit(0) || cu->cuDeviceGetCount(&n) || !n);
	waitpid(pid, &st, 0);
	if (!WIFEXITED(st) || WEXITSTATUS(st)) {
		printf("skipped: no GPU (cuInit failed or no CUDA device)\n");
		return 0;
	}
	if (pipe(p2h) || pipe(h2p))
		DIE("pipe");
	pid = fork();
	if (pid == 0) {
		close(p2h[1]);
		close(h2p[0]);
		holder();
	}
	close(p2h[0]);
	close(h2p[1]);
	enter_cgroup(cg_w);
	cuda_up();
	NX(nxq_ctx_open(&co, &c));
	if (!nxq_ctx_is_managed(c))
		DIE("no authority (nxquotad's socket or /dev/nxquota)");
	xread(h2p[0], &b, 1);
	printf("gpu_press: authority %s, device 0, fill %llu MiB, %d rounds per size\n",
	       c->kops->name, (unsigned long long)(fill >> 20), rounds);
	snprintf(buf, sizeof(buf), "%s", sizes);
	for (tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		uint64_t x;

		if (nxq__parse_size(tok, &x) || !x || fill % x)
			DIE("size %s: not a divisor of --fill", tok);
		figure_a(c, x);
	}
	figure_b(c);
	xwrite(p2h[1], (char[]){ C_EXIT }, 1);
	waitpid(pid, &st, 0);
	NX(nxq_ctx_close(c));
	return 0;
}

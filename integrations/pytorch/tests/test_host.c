// SPDX-License-Identifier: LGPL-2.1-or-later OR MIT
/*
 * libnxq_torch without a GPU: the allocator entry points PyTorch calls,
 * on host arenas (NXQ_TORCH_BACKEND=host), an unmanaged context and a
 * process-local cap.  Checks the bookkeeping the GPU tests rely on
 * (live_rounded == the arena's in_use, mallocs == the arena's allocs),
 * size-0 allocations, failure under the cap and recovery after it,
 * release, foreign frees, malformed configuration, and threads
 * allocating while another releases.  The pool route's C side in a child
 * process: its configuration rules, stream-ordered frees, and the release
 * hook (called first, on the releasing thread, never recursively, errors
 * counted, unregistered for good).  Prints one line per check and
 * "N passed, N failed".
 */
#include <errno.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "nxq_torch.h"

#define MiB (1ULL << 20)

static int passed, failed;

#define CHECK(cond, ...) do { \
	if (cond) { passed++; printf("ok   "); } else { failed++; printf("FAIL "); } \
	printf(__VA_ARGS__); printf("\n"); fflush(stdout); \
} while (0)

static uint64_t st[NXQ_TORCH_NSTATS];

static int stats(int dev)
{
	return nxq_torch_stats(dev, st, NXQ_TORCH_NSTATS);
}

static int consistent(void)
{
	return st[NXQ_TS_MAPPED] == st[NXQ_TS_IN_USE] + st[NXQ_TS_PENDING] + st[NXQ_TS_FREE] &&
	       st[NXQ_TS_CHARGED] == st[NXQ_TS_MAPPED] + st[NXQ_TS_RETAINED] &&
	       st[NXQ_TS_LIVE_ROUNDED] == st[NXQ_TS_IN_USE] &&
	       st[NXQ_TS_MALLOCS] == st[NXQ_TS_ARENA_ALLOCS] &&
	       st[NXQ_TS_FREES] == st[NXQ_TS_ARENA_FREES];
}

/* A child with a malformed variable: configuration fails, malloc is NULL. */
static void bad_env(const char *var, const char *val)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		setenv(var, val, 1);
		int r = nxq_torch_configure();
		void *p = nxq_torch_malloc(4096, 0, NULL);

		_exit(r == -EINVAL && !p && strstr(nxq_torch_last_error(), var) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "%s=%s: configuration refused, message names the variable", var, val);
}

/* A child with a well-formed size: configuration succeeds. */
static void good_env(const char *var, const char *val)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		setenv(var, val, 1);
		_exit(nxq_torch_configure() == 0 ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "%s=%s: configuration accepted", var, val);
}

/* Two variables at once, for rules that join them. */
static void bad_env2(const char *v1, const char *x1, const char *v2, const char *x2)
{
	pid_t pid = fork();
	int status = 0;

	if (pid == 0) {
		setenv(v1, x1, 1);
		setenv(v2, x2, 1);
		int r = nxq_torch_configure();
		void *p = nxq_torch_malloc(4096, 0, NULL);

		_exit(r == -EINVAL && !p && strstr(nxq_torch_last_error(), v1) &&
		      strstr(nxq_torch_last_error(), v2) ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0,
	      "%s=%s with %s=%s: refused, message names both", v1, x1, v2, x2);
}

/*
 * NXQ_TORCH_TRACE: a child writes one line per allocation, free and release
 * in replay.c's format; an existing file is refused (O_EXCL), unchanged.
 */
static void trace_child(void)
{
	char path[] = "/tmp/nxq_torch_traceXXXXXX", line[256];
	int fd = mkstemp(path), status = 0, n = 0, ok = 1;
	pid_t pid;
	FILE *f;

	CHECK(fd >= 0, "mkstemp");
	close(fd);
	pid = fork();
	if (pid == 0) {		/* the file exists: refused, named */
		setenv("NXQ_TORCH_TRACE", path, 1);
		int r = nxq_torch_configure();

		_exit(r == -EEXIST && !nxq_torch_malloc(4096, 0, NULL) &&
		      strstr(nxq_torch_last_error(), "NXQ_TORCH_TRACE") ? 0 : 1);
	}
	waitpid(pid, &status, 0);
	f = fopen(path, "r");
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && f && !fgets(line, sizeof(line), f),
	      "NXQ_TORCH_TRACE naming an existing file: -EEXIST, the file left empty");
	if (f)
		fclose(f);
	unlink(path);
	pid = fork();
	if (pid == 0) {
		setenv("NXQ_TORCH_TRACE", path, 1);
		void *p = nxq_torch_malloc(5000, 0, (void *)7);
		void *q = nxq_torch_malloc(1 << 20, 0, NULL);

		nxq_torch_free(p, 5000, 0, (void *)7);
		nxq_torch_release(0, 1);
		exit(p && q ? 0 : 1);	/* exit(), not _exit(): the trace is flushed */
	}
	waitpid(pid, &status, 0);
	f = fopen(path, "r");
	while (f && fgets(line, sizeof(line), f)) {
		static const char *const want[] = { "alloc", "alloc", "free_completed", "release" };
		static const unsigned long long size[] = { 5000, 1 << 20, 5000, 1 };
		static const unsigned long long stream[] = { 7, 0, 7, 0 };
		char act[32];
		unsigned long long addr, sz, st_;

		if (n >= 4 || sscanf(line, "%31s %llu %llu %llu", act, &addr, &sz, &st_) != 4 ||
		    strcmp(act, want[n]) || sz != size[n] || st_ != stream[n] ||
		    (n < 3 && !addr))
			ok = 0;
		n++;
	}
	CHECK(WIFEXITED(status) && WEXITSTATUS(status) == 0 && ok && n == 4,
	      "NXQ_TORCH_TRACE: alloc, alloc, free_completed, release with sizes and streams "
	      "(%d lines)", n);
	if (f)
		fclose(f);
	unlink(path);
}

/*
 * The pool route: the "cached segments" PyTorch would hold are blocks the
 * hook frees, as PyTorch's emptyCache does through the free function.
 */
#define NSEG 6
static void *seg[NSEG];
static size_t seg_size[NSEG];
static int hook_calls_seen, hook_dev, hook_recurse, hook_fail;
static uint64_t hook_bytes;
static pthread_t hook_thread;

static int pool_hook(int device, uint64_t bytes, void *user)
{
	hook_calls_seen++;
	hook_dev = device;
	hook_bytes = bytes;
	hook_thread = pthread_self();
	if (user != (void *)&hook_calls_seen)
		return -EFAULT;
	for (int i = 0; i < NSEG; i++)
		if (seg[i]) {
			nxq_torch_free(seg[i], seg_size[i], 0, NULL);
			seg[i] = NULL;
		}
	if (hook_recurse) {
		/* A release from inside the hook: no second call, no deadlock. */
		int64_t r = nxq_torch_release(0, UINT64_MAX);

		hook_recurse = r < 0 ? -1 : 2;
		if (nxq_torch_set_release_hook(NULL, NULL) != -EDEADLK)
			hook_recurse = -2;
	}
	return hook_fail ? -EIO : 0;
}

static void fill_segments(void)
{
	for (int i = 0; i < NSEG; i++) {
		seg_size[i] = (i & 1 ? 12 : 2) * MiB;	/* 42 MiB: under the 64 MiB cap */
		seg[i] = nxq_torch_malloc(seg_size[i], 0, NULL);
	}
}

static void pool_route(void)
{
	uint64_t charged0;
	void *keep;
	int64_t rel;
	int r;

	setenv("NXQ_TORCH_ROUTE", "pool", 1);
	r = nxq_torch_configure();
	CHECK(r == 0 && strstr(nxq_torch_config(), "route=pool"), "pool route: %s",
	      r ? nxq_torch_last_error() : nxq_torch_config());
	keep = nxq_torch_malloc(2 * MiB, 0, NULL);	/* a live tensor's segment */
	fill_segments();
	stats(0);
	CHECK(keep && seg[0] && seg[5] && st[NXQ_TS_ROUTE] == 1 && st[NXQ_TS_LIVE_COUNT] == 7,
	      "pool route: 7 segments allocated, route stat 1");

	/* Stream-ordered frees even though nothing asked for them. */
	nxq_torch_free(seg[0], seg_size[0], 0, NULL);
	seg[0] = NULL;
	stats(0);
	CHECK(st[NXQ_TS_PENDING] == 2 * MiB && st[NXQ_TS_FREES] == 1 && consistent(),
	      "pool route: a freed segment is pending (stream-ordered), not free at once "
	      "(pending %llu)", (unsigned long long)st[NXQ_TS_PENDING]);

	/* No hook yet: a release returns only what the arena holds idle. */
	rel = nxq_torch_release(-1, UINT64_MAX);
	stats(0);
	CHECK(rel >= 0 && st[NXQ_TS_HOOK_CALLS] == 0 && st[NXQ_TS_LIVE_COUNT] == 6,
	      "no hook: release returns %lld bytes, PyTorch's segments untouched", (long long)rel);

	/* The hook hands the cached segments back first, then they are released. */
	CHECK(nxq_torch_set_release_hook(pool_hook, &hook_calls_seen) == 0, "hook registered");
	stats(0);
	charged0 = st[NXQ_TS_CHARGED];
	rel = nxq_torch_release(-1, UINT64_MAX);
	stats(0);
	CHECK(hook_calls_seen == 1 && hook_dev == -1 && hook_bytes == UINT64_MAX &&
	      pthread_equal(hook_thread, pthread_self()) && st[NXQ_TS_HOOK_CALLS] == 1,
	      "release calls the hook once, on the releasing thread, with device -1 and "
	      "everything wanted");
	CHECK(rel >= (int64_t)(12 + 2 + 12 + 2 + 12) * (int64_t)MiB && st[NXQ_TS_PENDING] == 0 &&
	      st[NXQ_TS_IDLE] == 0 && st[NXQ_TS_LIVE_COUNT] == 1 && st[NXQ_TS_IN_USE] == 2 * MiB &&
	      st[NXQ_TS_CHARGED] <= charged0 - (uint64_t)rel && consistent(),
	      "the hook's segments are waited for and released in the same call: %lld bytes, "
	      "the live segment kept", (long long)rel);

	/* From a thread the library would own (a ticket), with a hook error. */
	fill_segments();
	hook_fail = 1;
	rel = nxq_torch_release_from_thread(0, 8 * MiB);
	stats(0);
	CHECK(hook_calls_seen == 2 && hook_dev == 0 && hook_bytes == 8 * MiB &&
	      !pthread_equal(hook_thread, pthread_self()) && rel >= 8 * (int64_t)MiB &&
	      st[NXQ_TS_HOOK_ERRORS] == 1 && st[NXQ_TS_LIVE_COUNT] == 1 && consistent(),
	      "release on another thread: hook there with device 0 and 8 MiB wanted, its error "
	      "counted, %lld bytes released", (long long)rel);
	hook_fail = 0;

	/* A release from inside the hook does not call it again. */
	fill_segments();
	hook_recurse = 1;
	rel = nxq_torch_release(0, UINT64_MAX);
	stats(0);
	CHECK(hook_calls_seen == 3 && hook_recurse == 2 && st[NXQ_TS_HOOK_CALLS] == 3 &&
	      rel >= 0 && st[NXQ_TS_LIVE_COUNT] == 1 && st[NXQ_TS_IDLE] == 0 && consistent(),
	      "a release inside the hook: no second call, unregistering there refused "
	      "(EDEADLK), all segments released");
	hook_recurse = 0;

	CHECK(nxq_torch_set_release_hook(NULL, NULL) == 0, "hook unregistered");
	fill_segments();
	rel = nxq_torch_release(0, UINT64_MAX);
	stats(0);
	CHECK(hook_calls_seen == 3 && st[NXQ_TS_LIVE_COUNT] == 7,
	      "after unregistering: no call, PyTorch's segments untouched");
}

static int run_pool_child(void)
{
	int fd[2], res[2] = { 0, 0 }, status = 0;
	pid_t pid;

	fflush(stdout);
	if (pipe(fd))
		return -1;
	pid = fork();
	if (pid == 0) {
		close(fd[0]);
		pool_route();
		res[0] = passed;
		res[1] = failed;
		if (write(fd[1], res, sizeof(res)) != sizeof(res))
			_exit(2);
		_exit(0);
	}
	close(fd[1]);
	if (read(fd[0], res, sizeof(res)) != sizeof(res))
		res[1] = -1;
	close(fd[0]);
	waitpid(pid, &status, 0);
	passed = res[0];
	failed = res[1];
	return WIFEXITED(status) && WEXITSTATUS(status) == 0 && res[1] >= 0 ? 0 : -1;
}

static volatile int stop;

static void *worker(void *arg)
{
	unsigned int seed = (unsigned int)(uintptr_t)arg;
	void *p[64] = { 0 };
	size_t sz[64] = { 0 };

	for (int it = 0; it < 20000; it++) {
		int i = rand_r(&seed) % 64;

		if (p[i]) {
			nxq_torch_free(p[i], sz[i], 0, NULL);
			p[i] = NULL;
		} else {
			sz[i] = 1 + (size_t)(rand_r(&seed) % (256 * 1024));
			p[i] = nxq_torch_malloc(sz[i], 0, NULL);
			if (p[i])
				memset(p[i], 0x5a, sz[i] < 64 ? sz[i] : 64);
		}
	}
	for (int i = 0; i < 64; i++)
		if (p[i])
			nxq_torch_free(p[i], sz[i], 0, NULL);
	return NULL;
}

static void *releaser(void *arg)
{
	(void)arg;
	while (!stop) {
		nxq_torch_release(-1, UINT64_MAX);
		usleep(200);
	}
	return NULL;
}

int main(void)
{
	void *a, *b, *c, *big;
	int64_t rel;
	int r;

	setenv("NXQ_TORCH_BACKEND", "host", 1);
	setenv("NXQ_TORCH_CONTEXT", "unmanaged", 1);
	setenv("NXQ_TORCH_CAP", "64M", 1);
	unsetenv("NXQ_RETAIN_IDLE");

	/* sizes: lib/size.c's nxq_size_parse_b(), as nxquotactl reads them */
	bad_env("NXQ_TORCH_CAP", "12Q");
	bad_env("NXQ_TORCH_CAP", "1.5G");
	bad_env("NXQ_TORCH_CAP", "8B");
	bad_env("NXQ_TORCH_CAP", "16E");
	bad_env("NXQ_TORCH_CAP", "max");
	good_env("NXQ_TORCH_CAP", "64MiB");
	good_env("NXQ_TORCH_CAP", "1P");
	bad_env("NXQ_TORCH_FREE", "later");
	bad_env("NXQ_TORCH_GRANULE", "0");
	bad_env("NXQ_TORCH_ROUTE", "tensors");
	bad_env2("NXQ_TORCH_ROUTE", "pool", "NXQ_TORCH_FREE", "sync");
	trace_child();
	if (run_pool_child())
		CHECK(0, "pool route child exited cleanly");

	r = nxq_torch_configure();
	CHECK(r == 0, "configure: %s", r ? nxq_torch_last_error() : nxq_torch_config());
	CHECK(strstr(nxq_torch_config(), "context=unmanaged cap=67108864"),
	      "unmanaged context with the 64 MiB cap");
	CHECK(nxq_torch_stats(0, st, NXQ_TORCH_NSTATS) == -ENOENT, "no arena before the first allocation");

	CHECK(nxq_torch_malloc(0, 0, NULL) == NULL, "size 0: NULL");
	stats(0);
	CHECK(st[NXQ_TS_ZERO_MALLOCS] == 1 && st[NXQ_TS_FAILED_MALLOCS] == 0 &&
	      st[NXQ_TS_MALLOCS] == 0 && st[NXQ_TS_IN_USE] == 0,
	      "size 0 counted apart, not a failure, nothing in use");

	a = nxq_torch_malloc(1000, 0, NULL);
	b = nxq_torch_malloc(3 * MiB + 1, 0, NULL);
	c = nxq_torch_malloc(512, 1, NULL);
	CHECK(a && b && c, "allocations on devices 0 and 1");
	memset(a, 1, 1000);
	memset(b, 2, 3 * MiB + 1);
	stats(0);
	CHECK(st[NXQ_TS_LIVE_COUNT] == 2 && st[NXQ_TS_LIVE_REQUESTED] == 1000 + 3 * MiB + 1 &&
	      st[NXQ_TS_LIVE_ROUNDED] == 1024 + 3 * MiB + 256 && consistent(),
	      "device 0: live 2, requested %llu, rounded %llu == in_use %llu",
	      (unsigned long long)st[NXQ_TS_LIVE_REQUESTED],
	      (unsigned long long)st[NXQ_TS_LIVE_ROUNDED], (unsigned long long)st[NXQ_TS_IN_USE]);
	CHECK(st[NXQ_TS_LO_PTR] <= (uintptr_t)a && (uintptr_t)b + 3 * MiB + 1 <= st[NXQ_TS_HI_PTR],
	      "pointer range covers what was handed out");
	stats(1);
	CHECK(st[NXQ_TS_LIVE_COUNT] == 1 && st[NXQ_TS_IN_USE] == 512 && consistent(),
	      "device 1 has its own arena");

	/* The cap: 64 MiB for the process (both arenas). */
	big = nxq_torch_malloc(80 * MiB, 0, NULL);
	stats(0);
	CHECK(!big && st[NXQ_TS_FAILED_MALLOCS] == 1 && consistent() &&
	      st[NXQ_TS_CHARGED] <= 64 * MiB,
	      "80 MiB over the 64 MiB cap: NULL, arena consistent (charged %llu)",
	      (unsigned long long)st[NXQ_TS_CHARGED]);
	CHECK(strstr(nxq_torch_last_error(), "cannot allocate") &&
	      strstr(nxq_torch_thread_error(), "cannot allocate"),
	      "reason kept: %s", nxq_torch_last_error());
	big = nxq_torch_malloc(16 * MiB, 0, NULL);
	CHECK(big != NULL, "a smaller allocation after the failure works");
	nxq_torch_free(big, 16 * MiB, 0, NULL);

	nxq_torch_free(b, 3 * MiB + 1, 0, NULL);
	nxq_torch_free((char *)a + 4096 * 1024 * 16ULL, 16, 0, NULL);	/* not ours */
	stats(0);
	CHECK(st[NXQ_TS_FREE_ERRORS] == 1 && st[NXQ_TS_LIVE_COUNT] == 1 && consistent(),
	      "a foreign free is refused and counted, bookkeeping intact");
	CHECK(st[NXQ_TS_PENDING] + st[NXQ_TS_FREE] >= 16 * MiB && st[NXQ_TS_OOM_RETRIES] == 1,
	      "freed memory kept mapped (%llu pending, %llu free; retain_idle=all); "
	      "the refusal was retried once after a trim",
	      (unsigned long long)st[NXQ_TS_PENDING], (unsigned long long)st[NXQ_TS_FREE]);

	rel = nxq_torch_release(-1, UINT64_MAX);
	stats(0);
	CHECK(rel > 0 && st[NXQ_TS_IDLE] == 0 && st[NXQ_TS_RETAINED] == 0 && consistent() &&
	      st[NXQ_TS_RELEASED_BYTES] > 0 && st[NXQ_TS_IN_USE] == 1024,
	      "release: %lld bytes back, nothing idle or retained, a still in use",
	      (long long)rel);
	CHECK(((unsigned char *)a)[999] == 1, "memory in use untouched by release");
	rel = nxq_torch_release(0, UINT64_MAX);
	CHECK(rel == 0, "a second release finds nothing");

	nxq_torch_free(a, 1000, 0, NULL);
	nxq_torch_free(c, 512, 1, NULL);

	{
		pthread_t t[4], rt;

		pthread_create(&rt, NULL, releaser, NULL);
		for (int i = 0; i < 4; i++)
			pthread_create(&t[i], NULL, worker, (void *)(uintptr_t)(i + 1));
		for (int i = 0; i < 4; i++)
			pthread_join(t[i], NULL);
		stop = 1;
		pthread_join(rt, NULL);
		stats(0);
		CHECK(st[NXQ_TS_LIVE_COUNT] == 0 && st[NXQ_TS_LIVE_REQUESTED] == 0 &&
		      st[NXQ_TS_IN_USE] == 0 && consistent() && st[NXQ_TS_RELEASES] > 2,
		      "4 threads x 20000 malloc/free with a releaser thread: %llu mallocs, "
		      "%llu releases, all freed, consistent",
		      (unsigned long long)st[NXQ_TS_MALLOCS], (unsigned long long)st[NXQ_TS_RELEASES]);
	}
	printf("%d passed, %d failed\n", passed, failed);
	return failed ? 1 : 0;
}

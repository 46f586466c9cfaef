// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-cuda-app: a CUDA program that knows nothing of nxquota, for the
 * container scenarios (tests/vm/containers): linked against libcuda.so.1
 * (the fake driver of tests/fakecuda in the container's rootfs), run with
 * or without libnxquota-preload.so in LD_PRELOAD.
 *
 *   nxq-cuda-app [--wait FILE] [--steps DIR] [--device N] SIZE...
 *
 * cuInit, device N's (default 0) primary context made current (the fake
 * driver has $FAKECUDA_DEVICES devices, device N's UUID ending in f0 + N;
 * a container given one GPU of several sees it as device 0 on a real
 * node, which the fake cannot show), then one cuMemAlloc_v2
 * of each SIZE (bytes; K, M suffixes: powers of 1024), saying for each
 *   alloc SIZE ok            or   alloc SIZE error E   (E: the CUresult)
 * then "holding" and, with --wait, polls (20 ms) until FILE exists; then
 * frees what it got, says "freed" and exits 0.  Without --wait it frees at
 * once.  With --steps, while it waits it also runs DIR/1, DIR/2, ... in
 * turn as each appears (written whole: create it under another name and
 * rename it): words, each a SIZE to allocate and keep or "free" to free
 * the last allocation kept, saying
 *   step N alloc SIZE ok | step N alloc SIZE error E | step N free SIZE ok
 * and then "step N done" (a malformed word: "step N bad WORD", exit 64).
 * A driver call other than an allocation failing: exit 1.  Each line
 * is one write(2) (the scenarios read the file while it runs).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

typedef int CUresult;
typedef int CUdevice;
typedef void *CUcontext;
typedef unsigned long long CUdeviceptr;

CUresult cuInit(unsigned int flags);
CUresult cuDeviceGet(CUdevice *dev, int ordinal);
CUresult cuDevicePrimaryCtxRetain(CUcontext *ctx, CUdevice dev);
CUresult cuCtxSetCurrent(CUcontext ctx);
CUresult cuMemAlloc_v2(CUdeviceptr *p, size_t n);
CUresult cuMemFree_v2(CUdeviceptr p);

#define MAXALLOC 64

static CUdeviceptr p[MAXALLOC];
static unsigned long long sz[MAXALLOC];
static int n;

static void say(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(buf, sizeof(buf) - 1, fmt, ap);
	va_end(ap);
	if (n < 0)
		return;
	if (n > (int)sizeof(buf) - 2)
		n = (int)sizeof(buf) - 2;
	buf[n++] = '\n';
	if (write(1, buf, (size_t)n) != n)
		_exit(3);
}

/* @s in bytes, or 0 if it is not a SIZE. */
static unsigned long long parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s || *s == '-')
		return 0;
	if (!strcmp(end, "K"))
		return v << 10;
	if (!strcmp(end, "M"))
		return v << 20;
	if (!*end)
		return v;
	return 0;
}

static unsigned long long size_of(const char *s)
{
	unsigned long long v = parse_size(s);

	if (!v) {
		say("bad size %s", s);
		exit(64);
	}
	return v;
}

/* One cuMemAlloc_v2 of @bytes, kept if it succeeds; its CUresult. */
static CUresult alloc_one(unsigned long long bytes)
{
	CUresult e;

	if (n == MAXALLOC)
		return 2;	/* CUDA_ERROR_OUT_OF_MEMORY: no room to keep it */
	e = cuMemAlloc_v2(&p[n], (size_t)bytes);
	if (!e)
		sz[n++] = bytes;
	return e;
}

/* Run DIR/@step if it is there: 1 if it ran, 0 if not yet. */
static int run_step(const char *dir, int step)
{
	char path[4096], buf[4096], *w, *save;
	ssize_t len;
	CUresult e;
	int fd;

	snprintf(path, sizeof(path), "%s/%d", dir, step);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 0;
	len = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	buf[len > 0 ? len : 0] = '\0';
	for (w = strtok_r(buf, " \t\n", &save); w; w = strtok_r(NULL, " \t\n", &save)) {
		unsigned long long bytes;

		if (!strcmp(w, "free") && n) {
			n--;
			if ((e = cuMemFree_v2(p[n]))) {
				say("step %d free failed: error %d", step, e);
				exit(1);
			}
			say("step %d free %llu ok", step, sz[n]);
			continue;
		}
		bytes = parse_size(w);
		if (!bytes) {
			say("step %d bad %s", step, w);
			exit(64);
		}
		e = alloc_one(bytes);
		if (e)
			say("step %d alloc %llu error %d", step, bytes, e);
		else
			say("step %d alloc %llu ok", step, bytes);
	}
	say("step %d done", step);
	return 1;
}

int main(int argc, char **argv)
{
	const char *wait = NULL, *steps = NULL;
	int i = 1, e, step = 1, ordinal = 0;
	CUcontext ctx;
	CUdevice dev;

	for (; i + 1 < argc; i += 2) {
		if (!strcmp(argv[i], "--wait"))
			wait = argv[i + 1];
		else if (!strcmp(argv[i], "--steps"))
			steps = argv[i + 1];
		else if (!strcmp(argv[i], "--device"))
			ordinal = atoi(argv[i + 1]);
		else
			break;
	}
	if ((e = cuInit(0)) || (e = cuDeviceGet(&dev, ordinal)) ||
	    (e = cuDevicePrimaryCtxRetain(&ctx, dev)) || (e = cuCtxSetCurrent(ctx))) {
		say("driver setup failed: error %d", e);
		return 1;
	}
	for (; i < argc && n < MAXALLOC; i++) {
		unsigned long long bytes = size_of(argv[i]);

		e = alloc_one(bytes);
		if (e)
			say("alloc %llu error %d", bytes, e);
		else
			say("alloc %llu ok", bytes);
	}
	say("holding");
	while (wait && access(wait, F_OK)) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

		if (steps && run_step(steps, step)) {
			step++;
			continue;
		}
		nanosleep(&ts, NULL);
	}
	while (n--)
		if ((e = cuMemFree_v2(p[n]))) {
			say("free failed: error %d", e);
			return 1;
		}
	say("freed");
	return 0;
}

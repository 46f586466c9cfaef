// SPDX-License-Identifier: GPL-2.0
/*
 * nxq-cuda-app: a CUDA program that knows nothing of nxquota, for the
 * container scenarios (tests/vm/containers): linked against libcuda.so.1
 * (the fake driver of tests/fakecuda in the container's rootfs), run with
 * or without libnxquota-preload.so in LD_PRELOAD.
 *
 *   nxq-cuda-app [--wait FILE] SIZE...
 *
 * cuInit, device 0's primary context made current, then one cuMemAlloc_v2
 * of each SIZE (bytes; K, M suffixes: powers of 1024), saying for each
 *   alloc SIZE ok            or   alloc SIZE error E   (E: the CUresult)
 * then "holding" and, with --wait, polls (20 ms) until FILE exists; then
 * frees what it got, says "freed" and exits 0.  Without --wait it frees at
 * once.  A driver call other than an allocation failing: exit 1.  Each line
 * is one write(2) (the scenarios read the file while it runs).
 */
#define _GNU_SOURCE
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

static unsigned long long size_of(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	if (end == s)
		goto bad;
	if (!strcmp(end, "K"))
		return v << 10;
	if (!strcmp(end, "M"))
		return v << 20;
	if (!*end)
		return v;
bad:
	say("bad size %s", s);
	exit(64);
}

int main(int argc, char **argv)
{
	CUdeviceptr p[MAXALLOC];
	const char *wait = NULL;
	int i = 1, n = 0, e;
	CUcontext ctx;
	CUdevice dev;

	if (argc > 2 && !strcmp(argv[1], "--wait")) {
		wait = argv[2];
		i = 3;
	}
	if ((e = cuInit(0)) || (e = cuDeviceGet(&dev, 0)) ||
	    (e = cuDevicePrimaryCtxRetain(&ctx, dev)) || (e = cuCtxSetCurrent(ctx))) {
		say("driver setup failed: error %d", e);
		return 1;
	}
	for (; i < argc && n < MAXALLOC; i++) {
		unsigned long long sz = size_of(argv[i]);

		e = cuMemAlloc_v2(&p[n], (size_t)sz);
		if (e) {
			say("alloc %llu error %d", sz, e);
		} else {
			say("alloc %llu ok", sz);
			n++;
		}
	}
	say("holding");
	while (wait && access(wait, F_OK)) {
		struct timespec ts = { 0, 20 * 1000 * 1000 };

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

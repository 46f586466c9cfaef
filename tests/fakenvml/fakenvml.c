// SPDX-License-Identifier: GPL-2.0
/*
 * The fake libnvidia-ml.so.1 of the tests: the NVML entry points that
 * nxquotactl, nxquotad's backstop and the preload shim call, with
 * nvml.h's layouts.  It owns its devices (devs[], made again at an
 * nvmlInit_v2 with none before it outstanding and, with FAKE_NVML_LIVE,
 * at each nvmlDeviceGetCount_v2: a handle lives until then) and its call
 * counts; it takes no lock.  Where the devices come from depends on the
 * environment when they are made:
 *
 * With FAKE_NVML_FILE set (tests/tools/nvml.sh, daemon/tests/
 * backstop_test.c), devices and their processes are that file's:
 *
 *   FAKE_NVML_FILE    lines "UUID" (a device) or "UUID PID BYTES" (a
 *                     compute process on it; BYTES "na" is
 *                     NVML_VALUE_NOT_AVAILABLE); devices in the order met
 *   FAKE_NVML_LIVE    1: the file is read again at each
 *                     nvmlDeviceGetCount_v2 (a process that stays
 *                     initialized, nxquotad's backstop, sees it change)
 *
 * A process line may end with a 4th field, START: the process is listed
 * only while /proc/PID/stat's start time is START (the driver lists a
 * process while it lives: another one given the pid later is not it).
 *
 * Without it (tests/preload: test_preload, budget.sh, late.sh), the
 * devices are the fake CUDA driver's (tests/fakecuda, in the libcuda.so.1
 * this process loaded; one device if none is): as many, with its UUIDs
 * (GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0, ...), their memory what that
 * driver says it has in use (fakecuda_devmem(): every process's, with
 * FAKECUDA_SHM), so that NVML and cuMemGetInfo agree as on a real node,
 * and their one process this one, with what the driver says it took
 * (fakecuda_mine()), while that is not 0.
 *
 * In either mode:
 *
 *   FAKE_NVML_INIT    nvmlInit_v2 returns this NVML error instead of 0
 *   FAKE_NVML_PROCS_ERROR  the process queries return this error
 *   FAKE_NVML_GROW    N: call K of a device's process query sees N - K
 *                     fewer processes than there are (at least 0): a
 *                     count that grows between calls, as processes start
 *   FAKE_NVML_LOG     each call appended as a line ("init -> RC",
 *                     "procs v3 UUID room R -> RC count C", "shutdown")
 *   FAKE_NVML_DELAY_MS  a process query that fills its buffer logs
 *                     "filled UUID count C" and sleeps this long before
 *                     it returns: the window in which a listed process
 *                     can exit and its pid be reused (daemon/tests)
 *   FAKE_NVML_MEM_MB  a device's memory where the fake driver does not
 *                     give it (default 8192, none of it used)
 *
 * fakenvml_calls(NAME) counts the calls to nvmlInit_v2, the two memory
 * queries and nvmlDeviceGetComputeRunningProcesses_v3; fakenvml_procs(0)
 * makes the process queries NVML_ERROR_NOT_SUPPORTED (as in a pid
 * namespace).
 *
 * Like the real library: anything before nvmlInit_v2 (or after the last
 * nvmlShutdown) is NVML_ERROR_UNINITIALIZED; a process query whose buffer
 * is too small writes nothing and returns NVML_ERROR_INSUFFICIENT_SIZE
 * with the count needed; a NULL buffer with room is
 * NVML_ERROR_INVALID_ARGUMENT; nvmlDeviceGetMemoryInfo_v2 wants its
 * struct's version (nvmlMemory_v2).
 *
 * Built by each Makefile that needs it: tools/Makefile twice (nvml/ has
 * the _v3, _v2 and first-version process queries, nvml-v1/
 * (-DFAKE_NVML_V1_ONLY) only the first version, whose struct has no
 * instance ids), daemon/Makefile (build/nvml/) and tests/preload/Makefile
 * (nvml/).
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_SUCCESS			0
#define NVML_ERROR_UNINITIALIZED	1
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_NOT_SUPPORTED	3
#define NVML_ERROR_NOT_FOUND		6
#define NVML_ERROR_INSUFFICIENT_SIZE	7
#define NVML_ERROR_ARGUMENT_VERSION_MISMATCH	25

#define API __attribute__((visibility("default")))
#define DRV_MAXDEV	16	/* the fake driver's devices, at most */
#define MAX_LISTED	256	/* processes listed at once, in a query */

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
} nvmlProcessInfo_v1_t;

typedef struct {
	unsigned int pid;
	unsigned long long usedGpuMemory;
	unsigned int gpuInstanceId;
	unsigned int computeInstanceId;
} nvmlProcessInfo_t;

typedef struct {
	unsigned long long total, free, used;
} nvmlMemory_t;

typedef struct {
	unsigned int version;
	unsigned long long total, reserved, free, used;
} nvmlMemory_v2_t;

#define MEMORY_V2	((unsigned int)(sizeof(nvmlMemory_v2_t) | (2U << 24)))

struct fproc {
	unsigned int pid;
	unsigned long long used;
	unsigned long long start;	/* 0: listed whatever runs as pid */
};

struct fdev {
	char uuid[96];
	int ord;		/* the fake driver's device, without the file */
	struct fproc *procs;	/* the file's processes on it */
	unsigned int n, calls;
};

static struct fdev *devs;
static unsigned int ndevs;
static int inits;
static int from_file;	/* FAKE_NVML_FILE was set at the last load() */
static long n_init, n_info, n_info2, n_procs;
static int no_procs;	/* fakenvml_procs(0) */

static void logf_(const char *fmt, ...)
	__attribute__((format(printf, 1, 2)));
static void logf_(const char *fmt, ...)
{
	const char *p = getenv("FAKE_NVML_LOG");
	va_list ap;
	FILE *f;

	if (!p || !(f = fopen(p, "a")))
		return;
	va_start(ap, fmt);
	vfprintf(f, fmt, ap);
	va_end(ap);
	fputc('\n', f);
	fclose(f);
}

static int env_int(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? atoi(v) : 0;
}

/* A function of the fake driver, if this process loaded it. */
static void *drv_sym(const char *name)
{
	void *h = dlopen("libcuda.so.1", RTLD_NOW | RTLD_NOLOAD);
	void *f;

	if (!h)
		return NULL;
	f = dlsym(h, name);
	dlclose(h);
	return f;
}

static struct fdev *dev_get(const char *uuid)
{
	unsigned int i;

	for (i = 0; i < ndevs; i++)
		if (!strcmp(devs[i].uuid, uuid))
			return &devs[i];
	devs = realloc(devs, (ndevs + 1) * sizeof(*devs));
	if (!devs)
		abort();
	memset(&devs[ndevs], 0, sizeof(*devs));
	snprintf(devs[ndevs].uuid, sizeof(devs[ndevs].uuid), "%.95s", uuid);
	devs[ndevs].ord = (int)ndevs;
	return &devs[ndevs++];
}

/* /proc/PID/stat's start time (field 22), 0 if there is no such process. */
static unsigned long long start_of(unsigned int pid)
{
	char file[64], buf[1024], *p;
	unsigned long long start = 0;
	FILE *f;
	int i;

	snprintf(file, sizeof(file), "/proc/%u/stat", pid);
	f = fopen(file, "r");
	if (!f)
		return 0;
	p = fgets(buf, sizeof(buf), f) ? strrchr(buf, ')') : NULL;
	fclose(f);
	for (i = 2; i < 22 && p; i++)
		p = strchr(p + 1, ' ');
	if (!p || sscanf(p + 1, "%llu", &start) != 1)
		return 0;
	return start;
}

static void unload(void)
{
	unsigned int i;

	for (i = 0; i < ndevs; i++)
		free(devs[i].procs);
	free(devs);
	devs = NULL;
	ndevs = 0;
}

/* The fake driver's devices: GPU-f0f1f2f3-f4f5-f6f7-f8f9-f0f1f2f3f4f0, ... */
static void load_drv(void)
{
	static const char hex[] = "0123456789abcdef";
	int (*devmem)(int, uint64_t *, uint64_t *) = (int (*)(int, uint64_t *, uint64_t *))
		drv_sym("fakecuda_devmem");
	char uuid[64], *p;
	uint64_t t, u;

	for (int d = 0; d < DRV_MAXDEV && (devmem ? !devmem(d, &t, &u) : !d); d++) {
		p = uuid;
		memcpy(p, "GPU-", 4);
		p += 4;
		for (int i = 0; i < 16; i++) {
			unsigned int b = 0xf0 + (unsigned int)(i == 15 ? d : i % 10);

			if (i == 4 || i == 6 || i == 8 || i == 10)
				*p++ = '-';
			*p++ = hex[b >> 4];
			*p++ = hex[b & 15];
		}
		*p = 0;
		dev_get(uuid);
	}
}

static void load_file(const char *path)
{
	char line[512], uuid[128], bytes[64];
	unsigned long long start;
	unsigned int pid;
	struct fdev *d;
	FILE *f;
	int k;

	f = fopen(path, "r");
	if (!f)
		return;
	while (fgets(line, sizeof(line), f)) {
		start = 0;
		k = sscanf(line, "%127s %u %63s %llu", uuid, &pid, bytes,
			   &start);
		if (k < 1 || uuid[0] == '#')
			continue;
		d = dev_get(uuid);
		if (k < 3)
			continue;
		d->procs = realloc(d->procs, (d->n + 1) * sizeof(*d->procs));
		if (!d->procs)
			abort();
		d->procs[d->n].pid = pid;
		d->procs[d->n].used = strcmp(bytes, "na") ?
				      strtoull(bytes, NULL, 10) : ~0ULL;
		d->procs[d->n].start = start;
		d->n++;
	}
	fclose(f);
}

static void load(void)
{
	const char *path = getenv("FAKE_NVML_FILE");

	unload();
	from_file = path != NULL;
	if (from_file)
		load_file(path);
	else
		load_drv();
}

API long fakenvml_calls(const char *name)
{
	if (!strcmp(name, "nvmlInit_v2"))
		return n_init;
	if (!strcmp(name, "nvmlDeviceGetMemoryInfo"))
		return n_info;
	if (!strcmp(name, "nvmlDeviceGetMemoryInfo_v2"))
		return n_info2;
	if (!strcmp(name, "nvmlDeviceGetComputeRunningProcesses_v3"))
		return n_procs;
	return -1;
}

/* on 0: the process queries are not supported */
API void fakenvml_procs(int on)
{
	no_procs = !on;
}

API const char *nvmlErrorString(int err)
{
	switch (err) {
	case NVML_SUCCESS: return "Success";
	case NVML_ERROR_UNINITIALIZED: return "Uninitialized";
	case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
	case NVML_ERROR_NOT_FOUND: return "Not Found";
	case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
	case 9: return "Driver Not Loaded";
	default: return "Unknown Error";
	}
}

API int nvmlInit_v2(void)
{
	int err = env_int("FAKE_NVML_INIT");

	n_init++;
	logf_("init -> %d", err);
	if (err)
		return err;
	if (!inits++)
		load();
	return NVML_SUCCESS;
}

API int nvmlShutdown(void)
{
	logf_("shutdown");
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	inits--;
	return NVML_SUCCESS;
}

API int nvmlDeviceGetCount_v2(unsigned int *count)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (from_file && env_int("FAKE_NVML_LIVE"))
		load();
	*count = ndevs;
	return NVML_SUCCESS;
}

API int nvmlDeviceGetHandleByIndex_v2(unsigned int i, void **h)
{
	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (i >= ndevs || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	*h = &devs[i];
	return NVML_SUCCESS;
}

API int nvmlDeviceGetHandleByUUID(const char *uuid, void **h)
{
	unsigned int i;

	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!uuid || !h)
		return NVML_ERROR_INVALID_ARGUMENT;
	for (i = 0; i < ndevs; i++)
		if (!strcmp(devs[i].uuid, uuid)) {
			*h = &devs[i];
			return NVML_SUCCESS;
		}
	return NVML_ERROR_NOT_FOUND;
}

API int nvmlDeviceGetUUID(void *h, char *uuid, unsigned int length)
{
	struct fdev *d = h;

	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || !uuid)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (strlen(d->uuid) + 1 > length)
		return NVML_ERROR_INSUFFICIENT_SIZE;
	strcpy(uuid, d->uuid);
	return NVML_SUCCESS;
}

/* The device's memory: the fake driver's figures where it is loaded. */
static int mem(const struct fdev *d, unsigned long long *total,
	       unsigned long long *used)
{
	int (*devmem)(int, uint64_t *, uint64_t *) = NULL;
	const char *e = getenv("FAKE_NVML_MEM_MB");
	uint64_t t, u;

	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (!from_file)
		devmem = (int (*)(int, uint64_t *, uint64_t *))
			 drv_sym("fakecuda_devmem");
	if (!devmem || devmem(d->ord, &t, &u)) {
		t = (e && *e ? strtoull(e, NULL, 10) : 8192) << 20;
		u = 0;
	}
	*total = t;
	*used = u;
	return NVML_SUCCESS;
}

API int nvmlDeviceGetMemoryInfo(void *h, nvmlMemory_t *m)
{
	unsigned long long t, u;
	int r;

	n_info++;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	r = mem(h, &t, &u);
	if (r)
		return r;
	m->total = t;
	m->used = u;
	m->free = t - u;
	return NVML_SUCCESS;
}

/* Version 2: 5 MiB of the used memory is the driver's own (reserved). */
API int nvmlDeviceGetMemoryInfo_v2(void *h, nvmlMemory_v2_t *m)
{
	unsigned long long t, u;
	int r;

	n_info2++;
	if (!m)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (m->version != MEMORY_V2)
		return NVML_ERROR_ARGUMENT_VERSION_MISMATCH;
	r = mem(h, &t, &u);
	if (r)
		return r;
	m->total = t;
	m->reserved = 5ULL << 20;
	m->free = t - u - m->reserved;
	m->used = u;
	return NVML_SUCCESS;
}

/*
 * The processes listed on @d now, @n of them: the file's, less those
 * whose START is not the pid's (copied to @live, room for MAX_LISTED,
 * where any has a START); or this process alone (in @live), with what the
 * fake driver says it took there, while that is not 0.
 */
static const struct fproc *listed(const struct fdev *d, struct fproc *live,
				  unsigned int *n)
{
	uint64_t (*mine)(int);
	unsigned int i;

	*n = 0;
	if (!from_file) {
		mine = (uint64_t (*)(int))drv_sym("fakecuda_mine");
		live[0].pid = (unsigned int)getpid();
		live[0].used = mine ? mine(d->ord) : 0;
		live[0].start = 0;
		*n = live[0].used ? 1 : 0;
		return live;
	}
	for (i = 0; i < d->n; i++)
		if (d->procs[i].start)
			break;
	if (i == d->n) {
		*n = d->n;
		return d->procs;
	}
	for (i = 0; i < d->n && *n < MAX_LISTED; i++)
		if (!d->procs[i].start ||
		    start_of(d->procs[i].pid) == d->procs[i].start)
			live[(*n)++] = d->procs[i];
	return live;
}

/* The common part; v1: the first version's layout. */
static int procs(const char *api, void *h, unsigned int *count, void *infos,
		 int v1)
{
	struct fdev *d = h;
	unsigned int grow = (unsigned int)env_int("FAKE_NVML_GROW");
	unsigned int room, seen, i;
	int err = env_int("FAKE_NVML_PROCS_ERROR");
	struct fproc live[MAX_LISTED];
	const struct fproc *list;

	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	if (no_procs)
		return NVML_ERROR_NOT_SUPPORTED;
	room = *count;
	if (room && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	list = listed(d, live, &seen);
	if (grow > d->calls)
		seen = seen > grow - d->calls ? seen - (grow - d->calls) : 0;
	d->calls++;
	if (!err && seen > room) {
		*count = seen;
		err = NVML_ERROR_INSUFFICIENT_SIZE;
	} else if (!err) {
		for (i = 0; i < seen; i++) {
			if (v1) {
				nvmlProcessInfo_v1_t *p = infos;

				p[i].pid = list[i].pid;
				p[i].usedGpuMemory = list[i].used;
			} else {
				nvmlProcessInfo_t *p = infos;

				p[i].pid = list[i].pid;
				p[i].usedGpuMemory = list[i].used;
				p[i].gpuInstanceId = 0xffffffff;
				p[i].computeInstanceId = 0xffffffff;
			}
		}
		*count = seen;
		if (room && env_int("FAKE_NVML_DELAY_MS")) {
			logf_("filled %s count %u", d->uuid, seen);
			usleep(1000 * env_int("FAKE_NVML_DELAY_MS"));
		}
	}
	logf_("procs %s %s room %u -> %d count %u", api, d->uuid, room, err,
	      *count);
	return err;
}

#ifndef FAKE_NVML_V1_ONLY
API int nvmlDeviceGetComputeRunningProcesses_v3(void *h, unsigned int *count,
						nvmlProcessInfo_t *infos)
{
	n_procs++;
	return procs("v3", h, count, infos, 0);
}

API int nvmlDeviceGetComputeRunningProcesses_v2(void *h, unsigned int *count,
						nvmlProcessInfo_t *infos)
{
	return procs("v2", h, count, infos, 0);
}
#endif

API int nvmlDeviceGetComputeRunningProcesses(void *h, unsigned int *count,
					     nvmlProcessInfo_v1_t *infos)
{
	return procs("v1", h, count, infos, 1);
}

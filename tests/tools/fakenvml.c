// SPDX-License-Identifier: GPL-2.0
/*
 * A fake libnvidia-ml.so.1 for nxquotactl's unattributed bytes
 * (tests/tools/nvml.sh): the few NVML entry points nxquotactl calls, with
 * nvml.h's layouts, driven by files and the environment.
 *
 *   FAKE_NVML_FILE    lines "UUID" (a device) or "UUID PID BYTES" (a
 *                     compute process on it; BYTES "na" is
 *                     NVML_VALUE_NOT_AVAILABLE); devices in the order met
 *   FAKE_NVML_INIT    nvmlInit_v2 returns this NVML error instead of 0
 *   FAKE_NVML_PROCS_ERROR  the process queries return this error
 *   FAKE_NVML_GROW    N: call K of a device's process query sees N - K
 *                     fewer processes than there are (at least 0): a
 *                     count that grows between calls, as processes start
 *   FAKE_NVML_LOG     each call appended as a line ("init", "procs v3
 *                     UUID room R -> RC count C", "shutdown")
 *   FAKE_NVML_LIVE    1: the file is read again at each
 *                     nvmlDeviceGetCount_v2 (a process that stays
 *                     initialized, nxquotad's backstop, sees it change)
 *   FAKE_NVML_DELAY_MS  a process query that fills its buffer logs
 *                     "filled UUID count C" and sleeps this long before
 *                     it returns: the window in which a listed process
 *                     can exit and its pid be reused (daemon/tests)
 *
 * A process line may end with a 4th field, START: the process is listed
 * only while /proc/PID/stat's start time is START (the driver lists a
 * process while it lives: another one given the pid later is not it).
 *
 * Like the real library: anything before nvmlInit_v2 (or after the last
 * nvmlShutdown) is NVML_ERROR_UNINITIALIZED; a process query whose buffer
 * is too small writes nothing and returns NVML_ERROR_INSUFFICIENT_SIZE
 * with the count needed; a NULL buffer with room is
 * NVML_ERROR_INVALID_ARGUMENT.  Built twice (tests/tools/Makefile rules
 * in tools/Makefile): nvml/ has the _v3, _v2 and first-version process
 * queries, nvml-v1/ (-DFAKE_NVML_V1_ONLY) only the first version, whose
 * struct has no instance ids.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define NVML_SUCCESS			0
#define NVML_ERROR_UNINITIALIZED	1
#define NVML_ERROR_INVALID_ARGUMENT	2
#define NVML_ERROR_NOT_FOUND		6
#define NVML_ERROR_INSUFFICIENT_SIZE	7

#define API __attribute__((visibility("default")))

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

struct fproc {
	unsigned int pid;
	unsigned long long used;
	unsigned long long start;	/* 0: listed whatever runs as pid */
};

struct fdev {
	char uuid[96];
	struct fproc *procs;
	unsigned int n, calls;
};

static struct fdev *devs;
static unsigned int ndevs;
static int inits;

static void logf_(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
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

static void load(void)
{
	const char *path = getenv("FAKE_NVML_FILE");
	char line[512], uuid[128], bytes[64];
	unsigned long long start;
	unsigned int pid;
	struct fdev *d;
	FILE *f;
	int k;

	unload();
	if (!path || !(f = fopen(path, "r")))
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
	if (env_int("FAKE_NVML_LIVE"))
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

/* The common part; v1: the first version's layout. */
static int procs(const char *api, void *h, unsigned int *count, void *infos,
		 int v1)
{
	struct fdev *d = h;
	unsigned int room, seen, i, grow = (unsigned int)env_int("FAKE_NVML_GROW");
	int err = env_int("FAKE_NVML_PROCS_ERROR");
	struct fproc live[256];
	struct fproc *list;

	if (!inits)
		return NVML_ERROR_UNINITIALIZED;
	if (!d || !count)
		return NVML_ERROR_INVALID_ARGUMENT;
	room = *count;
	if (room && !infos)
		return NVML_ERROR_INVALID_ARGUMENT;
	/* those listed now: a START that is not the pid's is not listed */
	list = d->procs;
	seen = d->n;
	for (i = 0; i < d->n; i++)
		if (d->procs[i].start)
			break;
	if (i < d->n) {
		list = live;
		for (i = seen = 0; i < d->n && seen < 256; i++)
			if (!d->procs[i].start ||
			    start_of(d->procs[i].pid) == d->procs[i].start)
				live[seen++] = d->procs[i];
	}
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

// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl's NVML reader; see nvml.h.  The layouts below are nvml.h's:
 * nvmlProcessInfo_t of the _v2 and _v3 process queries is {pid,
 * usedGpuMemory, gpuInstanceId, computeInstanceId}; the first version's
 * (nvmlProcessInfo_v1_t) is {pid, usedGpuMemory}.
 */
#ifndef _GNU_SOURCE	/* nxquotad builds it with -D_GNU_SOURCE */
#define _GNU_SOURCE
#endif
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvml.h"

#define NVML_SUCCESS			0
#define NVML_ERROR_INSUFFICIENT_SIZE	7

typedef void *nvml_device_t;

struct nvml_proc_v1 {
	unsigned int pid;
	unsigned long long used;
};

struct nvml_proc_v2 {			/* _v2 and _v3 */
	unsigned int pid;
	unsigned long long used;
	unsigned int gpu_instance;
	unsigned int compute_instance;
};

typedef int (*nvml_init_t)(void);
typedef int (*nvml_count_t)(unsigned int *);
typedef int (*nvml_handle_t)(unsigned int, nvml_device_t *);
typedef int (*nvml_uuid_t)(nvml_device_t, char *, unsigned int);
typedef int (*nvml_procs_t)(nvml_device_t, unsigned int *, void *);
typedef const char *(*nvml_errstr_t)(int);

struct nvml_api {
	nvml_init_t init, shutdown;
	nvml_count_t count;
	nvml_handle_t handle;
	nvml_uuid_t uuid;
	nvml_procs_t procs;
	nvml_errstr_t errstr;
	size_t stride;			/* of the process struct */
};

static const char *errstr(const struct nvml_api *a, int err, char *buf,
			  size_t size)
{
	const char *s = a->errstr ? a->errstr(err) : NULL;

	snprintf(buf, size, "%s (NVML error %d)", s ? s : "unknown", err);
	return buf;
}

/* Append one process; 0, or -1 out of memory. */
static int add_proc(struct nxq_nvml *n, size_t *cap, size_t dev,
		    uint32_t pid, uint64_t bytes)
{
	struct nxq_nvml_proc *p;

	if (n->nprocs == *cap) {
		size_t c = *cap ? 2 * *cap : 64;

		p = realloc(n->procs, c * sizeof(*p));
		if (!p)
			return -1;
		n->procs = p;
		*cap = c;
	}
	p = &n->procs[n->nprocs++];
	p->dev = dev;
	p->pid = pid;
	p->bytes = bytes;
	return 0;
}

/*
 * One device's processes.  The first call asks with no room: the count
 * comes back with NVML_ERROR_INSUFFICIENT_SIZE (or success when there is
 * none); then again with room for that many, until they fit: a process
 * that starts between two calls makes the count grow.
 */
static int read_procs(const struct nvml_api *a, nvml_device_t h, size_t dev,
		      struct nxq_nvml *n, size_t *pcap)
{
	unsigned int count = 0, room = 0, i, tries;
	unsigned char *buf = NULL, *nb;
	char e[96];
	int err;

	for (tries = 0; tries < 64; tries++) {
		count = room;
		err = a->procs(h, &count, room ? buf : NULL);
		if (err != NVML_ERROR_INSUFFICIENT_SIZE)
			break;
		if (count <= room)	/* a driver that says so: be safe */
			count = room + 16;
		nb = realloc(buf, (size_t)count * a->stride);
		if (!nb) {
			free(buf);
			snprintf(n->devs[dev].error, sizeof(n->devs[dev].error),
				 "out of memory");
			return 0;
		}
		buf = nb;
		room = count;
	}
	if (err != NVML_SUCCESS) {
		free(buf);
		snprintf(n->devs[dev].error, sizeof(n->devs[dev].error), "%s",
			 err == NVML_ERROR_INSUFFICIENT_SIZE ?
			 "the process count kept growing" :
			 errstr(a, err, e, sizeof(e)));
		return 0;
	}
	if (count > room)	/* success cannot report more than fit */
		count = room;
	for (i = 0; i < count; i++) {
		const unsigned char *p = buf + (size_t)i * a->stride;
		unsigned long long used;
		unsigned int pid;

		if (a->stride == sizeof(struct nvml_proc_v2)) {
			pid = ((const struct nvml_proc_v2 *)p)->pid;
			used = ((const struct nvml_proc_v2 *)p)->used;
		} else {
			pid = ((const struct nvml_proc_v1 *)p)->pid;
			used = ((const struct nvml_proc_v1 *)p)->used;
		}
		if (add_proc(n, pcap, dev, pid,
			     used == ~0ULL ? NXQ_NVML_NA : (uint64_t)used)) {
			free(buf);
			return -1;
		}
	}
	free(buf);
	return 0;
}

int nxq_nvml_read(struct nxq_nvml *out, char *why, size_t size)
{
	struct nvml_api a = { 0 };
	unsigned int count = 0, i;
	size_t pcap = 0;
	char e[96];
	void *lib;
	int err;

	memset(out, 0, sizeof(*out));
#ifdef NXQ_STATIC
	/*
	 * A static program has a C library of its own; the driver's libraries
	 * load the shared one beside it, two heaps in one process: freeing
	 * across them aborts ("double free or corruption", seen with
	 * nxquotad-static's backstop on an H100 at its exit).  Not loaded.
	 */
	(void)lib;
	snprintf(why, size, "this program is linked statically and does not "
		 "load libnvidia-ml.so.1 (use the dynamically linked build)");
	return -1;
#else
	lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
#endif
	if (!lib) {
		snprintf(why, size, "cannot load libnvidia-ml.so.1: %s",
			 dlerror());
		return -1;
	}
	a.init = (nvml_init_t)dlsym(lib, "nvmlInit_v2");
	a.shutdown = (nvml_init_t)dlsym(lib, "nvmlShutdown");
	a.count = (nvml_count_t)dlsym(lib, "nvmlDeviceGetCount_v2");
	a.handle = (nvml_handle_t)dlsym(lib, "nvmlDeviceGetHandleByIndex_v2");
	a.uuid = (nvml_uuid_t)dlsym(lib, "nvmlDeviceGetUUID");
	a.errstr = (nvml_errstr_t)dlsym(lib, "nvmlErrorString");
	a.stride = sizeof(struct nvml_proc_v2);
	out->api = "nvmlDeviceGetComputeRunningProcesses_v3";
	a.procs = (nvml_procs_t)dlsym(lib, out->api);
	if (!a.procs) {
		out->api = "nvmlDeviceGetComputeRunningProcesses_v2";
		a.procs = (nvml_procs_t)dlsym(lib, out->api);
	}
	if (!a.procs) {
		out->api = "nvmlDeviceGetComputeRunningProcesses";
		a.procs = (nvml_procs_t)dlsym(lib, out->api);
		a.stride = sizeof(struct nvml_proc_v1);
	}
	if (!a.init || !a.shutdown || !a.count || !a.handle || !a.uuid ||
	    !a.procs) {
		snprintf(why, size, "libnvidia-ml.so.1 lacks nvmlInit_v2, "
			 "nvmlShutdown, nvmlDeviceGetCount_v2, "
			 "nvmlDeviceGetHandleByIndex_v2, nvmlDeviceGetUUID or "
			 "nvmlDeviceGetComputeRunningProcesses (driver too old?)");
		dlclose(lib);
		return -1;
	}
	err = a.init();
	if (err) {
		snprintf(why, size, "nvmlInit_v2: %s",
			 errstr(&a, err, e, sizeof(e)));
		return -1;
	}
	err = a.count(&count);
	if (err) {
		snprintf(why, size, "nvmlDeviceGetCount_v2: %s",
			 errstr(&a, err, e, sizeof(e)));
		goto fail;
	}
	out->devs = calloc(count ? count : 1, sizeof(*out->devs));
	if (!out->devs) {
		snprintf(why, size, "out of memory");
		goto fail;
	}
	out->ndevs = count;
	for (i = 0; i < count; i++) {
		struct nxq_nvml_dev *d = &out->devs[i];
		nvml_device_t h;

		err = a.handle(i, &h);
		if (!err)
			err = a.uuid(h, d->uuid, sizeof(d->uuid));
		if (err) {
			snprintf(d->uuid, sizeof(d->uuid), "nvml-index-%u", i);
			snprintf(d->error, sizeof(d->error), "%s",
				 errstr(&a, err, e, sizeof(e)));
			continue;
		}
		d->uuid[sizeof(d->uuid) - 1] = '\0';
		if (read_procs(&a, h, i, out, &pcap)) {
			snprintf(why, size, "out of memory");
			goto fail;
		}
	}
	/* Not dlclose()d: the driver's library may keep threads around. */
	a.shutdown();
	return 0;
fail:
	a.shutdown();
	nxq_nvml_free(out);
	return -1;
}

void nxq_nvml_free(struct nxq_nvml *n)
{
	free(n->devs);
	free(n->procs);
	n->devs = NULL;
	n->procs = NULL;
	n->ndevs = n->nprocs = 0;
}

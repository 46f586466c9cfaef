/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the NVIDIA driver (NVML) attributes to each process, for
 * nxquotactl's unattributed bytes.  libnvidia-ml.so.1 is loaded at run
 * time with dlopen(): nothing from the driver is needed to build, and
 * where it is missing (no driver, a CI machine) the reader says why and
 * the tool goes on without it.
 */
#ifndef NXQ_TOOLS_NVML_H
#define NXQ_TOOLS_NVML_H

#include <stddef.h>
#include <stdint.h>

/* usedGpuMemory when the driver does not say (NVML_VALUE_NOT_AVAILABLE) */
#define NXQ_NVML_NA		UINT64_MAX
#define NXQ_NVML_UUID_LEN	96	/* NVML_DEVICE_UUID_V2_BUFFER_SIZE */

struct nxq_nvml_dev {
	char uuid[NXQ_NVML_UUID_LEN];	/* "GPU-<uuid>": the ledger's key */
	char error[128];		/* why its processes are unknown, or "" */
};

struct nxq_nvml_proc {
	size_t dev;			/* index in devs */
	uint32_t pid;
	uint64_t bytes;			/* NXQ_NVML_NA: not available */
};

struct nxq_nvml {
	struct nxq_nvml_dev *devs;
	size_t ndevs;
	struct nxq_nvml_proc *procs;
	size_t nprocs;
	const char *api;		/* which process query answered */
};

/*
 * Read every device's compute processes (nvmlDeviceGetComputeRunningProcesses
 * _v3, else _v2, else the first version) and the memory the driver
 * attributes to each.  A query answered NVML_ERROR_INSUFFICIENT_SIZE is
 * asked again with the count it gave (processes come and go between the
 * calls).  Returns 0 with *out filled (free it with nxq_nvml_free()), or
 * -1 with why (size bytes) saying what is missing: no library, a missing
 * entry point, nvmlInit_v2 or nvmlDeviceGetCount_v2 failing.  A device
 * whose processes cannot be read has its error set and no processes.
 */
int nxq_nvml_read(struct nxq_nvml *out, char *why, size_t size);

void nxq_nvml_free(struct nxq_nvml *n);

#endif /* NXQ_TOOLS_NVML_H */

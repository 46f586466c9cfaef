/* SPDX-License-Identifier: LGPL-2.1-or-later OR MIT */
/*
 * The NVIDIA device node of a "GPU-<uuid>" device key, shared by the
 * library (which opens the node to prove access when it registers a
 * holder) and nxquotactl (which registers GPUs with the node's dev_t).
 */
#ifndef NXQ_LIB_GPU_NODE_H
#define NXQ_LIB_GPU_NODE_H

#include <dirent.h>
#include <stdio.h>
#include <string.h>

/*
 * The minor of the NVIDIA device node of "GPU-<uuid>": the "Device Minor"
 * of the /proc/driver/nvidia/gpus/<bus>/information whose "GPU UUID" is
 * the key.  -1 when there is none (no driver, another kind of device).
 */
static inline int nxq__gpu_minor(const char *key)
{
	char path[512], line[256], uuid[128];
	int minor = -1, found;
	struct dirent *d;
	DIR *dirs;
	FILE *f;

	if (strncmp(key, "GPU-", 4))
		return -1;
	dirs = opendir("/proc/driver/nvidia/gpus");
	if (!dirs)
		return -1;
	while (minor < 0 && (d = readdir(dirs))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path),
			 "/proc/driver/nvidia/gpus/%s/information", d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		found = 0;
		while (fgets(line, sizeof(line), f)) {
			if (sscanf(line, "GPU UUID: %127s", uuid) == 1)
				found = !strcmp(uuid, key);
			else if (found && sscanf(line, "Device Minor: %d", &minor) == 1)
				break;
		}
		if (!found)
			minor = -1;
		fclose(f);
	}
	closedir(dirs);
	return minor;
}

#endif /* NXQ_LIB_GPU_NODE_H */

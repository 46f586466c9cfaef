// SPDX-License-Identifier: GPL-2.0
/*
 * nxquotactl devices: list, register, unregister, FIELD KEY VALUE for
 * each field of the spec's device table that device-set takes (fields.h:
 * capacity, default-max, ticket-timeout-ms), and sync (every CUDA GPU,
 * its capacity read through libcuda.so.1 loaded with dlopen).  Owns
 * nothing past the call; libcuda stays loaded.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dlfcn.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include <netlink/netlink.h>
#include <netlink/genl/genl.h>
#include <netlink/genl/ctrl.h>
#include <linux/netlink.h>

#include <linux/nxquota.h>

#include "ctl.h"
#include "fields.h"
#include "fmt.h"
#include "ledger.h"
#include "jsonout.h"
#include "nxquotactl.h"
#include "size.h"
#include "gpu_node.h"

/*
 * A device command: the key, the devt if any, and each field of the
 * device table whose bit is in @set, from @v, put as its unit says.
 */
static int device_cmd(struct ctl *n, uint8_t cmd, const char *key,
		      const char *devt, const uint64_t *v, unsigned int set,
		      struct reply *r)
{
	struct nl_msg *msg = ctl_new(n, cmd, 0);
	int f;

	memset(r, 0, sizeof(*r));
	nla_put_string(msg, NXQUOTA_A_DEVICE_KEY, key);
	if (devt && devt[0])
		nla_put_string(msg, NXQUOTA_A_DEVICE_DEVT, devt);
	for (f = 0; f < NXQ_NR_DEVICE_FIELDS; f++) {
		if (!(set & (1U << f)))
			continue;
		if (dfield_defs[f].d.unit == NXQ_UNIT_BYTES)
			nla_put_u64(msg, dfield_defs[f].d.attr, v[f]);
		else
			nla_put_u32(msg, dfield_defs[f].d.attr, (uint32_t)v[f]);
	}
	return ctl_request(n, msg, r);
}

/* Read @val as device field @f: 0, or EX_USAGE after saying why. */
static int device_value(int f, const char *val, uint64_t *v)
{
	char why[256], w[64];

	if (!dfield_parse(f, val, v, why, sizeof(why)))
		return 0;
	warnx_("%s %s: %s", dfield_word(f, w, sizeof(w)), val, why);
	return EX_USAGE;
}

void devices_usage(FILE *f)
{
	char w[64], hint[64];
	int i;

	for (i = 0; i < NXQ_NR_DEVICE_FIELDS; i++) {
		if (!dfield_defs[i].set)
			continue;
		snprintf(hint, sizeof(hint), "%s KEY %s%s",
			 dfield_word(i, w, sizeof(w)), dfield_value_hint(i),
			 dfield_defs[i].d.parse == NXQ_PARSE_SIZE_MAX ?
			 "|max" : "");
		fprintf(f, "  devices %-25s change its %s\n", hint, w);
	}
}

/*
 * "MAJOR:MINOR" of the NVIDIA node of "GPU-<uuid>" (the Device Minor of
 * the /proc/driver/nvidia/gpus entry whose GPU UUID is the key), or "".
 */
static void gpu_devt(const char *key, char *out, size_t size)
{
	int minor = nxq__gpu_minor(key);
	char path[64];
	struct stat st;

	out[0] = '\0';
	if (minor < 0)
		return;
	snprintf(path, sizeof(path), "/dev/nvidia%d", minor);
	if (stat(path, &st) == 0 && S_ISCHR(st.st_mode))
		snprintf(out, size, "%u:%u", major(st.st_rdev),
			 minor(st.st_rdev));
}

/* The CUDA driver API, loaded at run time: no toolkit needed to build. */
typedef int (*cu_init_t)(unsigned int);
typedef int (*cu_count_t)(int *);
typedef int (*cu_get_t)(int *, int);
typedef int (*cu_uuid_t)(unsigned char *, int);
typedef int (*cu_mem_t)(size_t *, int);

static int devices_sync(struct ctl *n, bool dry_run)
{
	cu_init_t cu_init;
	cu_count_t cu_count;
	cu_get_t cu_get;
	cu_uuid_t cu_uuid;
	cu_mem_t cu_mem;
	int i, count = 0, rc = EX_OK, err;
	void *lib;

#ifdef NXQ_STATIC
	/* a static C library beside the driver's shared one: see nvml.c */
	(void)lib;
	warnx_("devices sync: this nxquotactl is linked statically and does "
	       "not load the CUDA driver (libcuda.so.1); use the dynamically "
	       "linked nxquotactl");
	return EX_FAIL;
#else
	lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_LOCAL);
#endif
	if (!lib) {
		warnx_("devices sync: cannot load the CUDA driver "
		       "(libcuda.so.1): %s; is the NVIDIA driver installed?",
		       dlerror());
		return EX_FAIL;
	}
	cu_init = (cu_init_t)dlsym(lib, "cuInit");
	cu_count = (cu_count_t)dlsym(lib, "cuDeviceGetCount");
	cu_get = (cu_get_t)dlsym(lib, "cuDeviceGet");
	cu_uuid = (cu_uuid_t)dlsym(lib, "cuDeviceGetUuid_v2");
	if (!cu_uuid)
		cu_uuid = (cu_uuid_t)dlsym(lib, "cuDeviceGetUuid");
	cu_mem = (cu_mem_t)dlsym(lib, "cuDeviceTotalMem_v2");
	if (!cu_init || !cu_count || !cu_get || !cu_uuid || !cu_mem) {
		warnx_("devices sync: libcuda.so.1 lacks cuInit, "
		       "cuDeviceGetCount, cuDeviceGet, cuDeviceGetUuid or "
		       "cuDeviceTotalMem_v2 (driver too old?)");
		dlclose(lib);
		return EX_FAIL;
	}
	err = cu_init(0);
	if (!err)
		err = cu_count(&count);
	if (err) {
		warnx_("devices sync: cuInit/cuDeviceGetCount failed: CUDA "
		       "error %d%s", err, err == 100 ? " (no CUDA device)" : "");
		dlclose(lib);
		return EX_FAIL;
	}
	for (i = 0; i < count; i++) {
		unsigned char u[16];
		char key[NXQ_DEVICE_KEY_MAX], size[NXQ_FMT_SIZE_LEN];
		uint64_t cap, v[NXQ_NR_DEVICE_FIELDS];
		char devt[32];
		struct reply r;
		size_t total = 0;
		int dev;

		if (cu_get(&dev, i) || cu_uuid(u, dev) || cu_mem(&total, dev)) {
			warnx_("devices sync: cannot read device %d", i);
			rc = EX_FAIL;
			continue;
		}
		snprintf(key, sizeof(key),
			 "GPU-%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-"
			 "%02x%02x%02x%02x%02x%02x", u[0], u[1], u[2], u[3],
			 u[4], u[5], u[6], u[7], u[8], u[9], u[10], u[11],
			 u[12], u[13], u[14], u[15]);
		cap = total;
		nxq_format_size(cap, false, size);
		if (dry_run) {
			printf("%s %" PRIu64 " (%s) would be registered\n", key,
			       cap, size);
			continue;
		}
		gpu_devt(key, devt, sizeof(devt));
		v[NXQ_DF_CAPACITY] = total;
		if (!device_cmd(n, NXQUOTA_CMD_DEVICE_ADD, key, devt, v,
				1U << NXQ_DF_CAPACITY, &r)) {
			printf("%s %s registered%s%s\n", key, size,
			       devt[0] ? " devt " : "", devt);
		} else if (r.error == -EEXIST &&
			   !device_cmd(n, NXQUOTA_CMD_DEVICE_SET, key, NULL, v,
				       1U << NXQ_DF_CAPACITY, &r)) {
			printf("%s %s capacity updated\n", key, size);
		} else {
			rc = ctl_report(key, &r);
		}
	}
	if (!count)
		printf("no CUDA device\n");
	dlclose(lib);
	return rc;
}

int cmd_devices(struct ctl *n, int argc, char **argv)
{
	char a[NXQ_FMT_SIZE_LEN], b[NXQ_FMT_SIZE_LEN];
	uint64_t v[NXQ_NR_DEVICE_FIELDS] = { 0 };
	struct reply r;
	struct ledger l;
	struct dev *d;
	size_t i;
	int f, rc;

	if (argc == 0) {
		bool intr = false;

		l.devs = (struct vec){ .size = sizeof(struct dev) };
		rc = dump(n, NXQUOTA_CMD_DEVICE_GET, NXQUOTA_A_DEVICE_MAX, 0,
			  NULL, dev_cb, &l.devs, &intr);
		if (rc)
			return rc;
		if (opt_json) {
			json_devices(&l);
			return EX_OK;
		}
		d = l.devs.v;
		printf("%-40s %9s %9s %7s\n", "DEVICE", "CAPACITY", "USED",
		       "HOLDERS");
		for (i = 0; i < l.devs.n; i++, d++)
			printf("%-40s %9s %9s %7u\n", d->key,
			       nxq_format_size(d->capacity, false, a),
			       nxq_format_size(d->used, false, b), d->holders);
		return EX_OK;
	}
	if (!strcmp(argv[0], "sync")) {
		if (argc > 2 || (argc == 2 && strcmp(argv[1], "--dry-run")))
			goto usage;
		return devices_sync(n, argc == 2);
	}
	if (!strcmp(argv[0], "register") && (argc == 3 || argc == 4)) {
		/* KEY CAPACITY [MAJOR:MINOR]: what device-add takes */
		rc = device_value(NXQ_DF_CAPACITY, argv[2],
				  &v[NXQ_DF_CAPACITY]);
		if (rc)
			return rc;
		if (device_cmd(n, NXQUOTA_CMD_DEVICE_ADD, argv[1],
			       argc == 4 ? argv[3] : NULL, v,
			       1U << NXQ_DF_CAPACITY, &r))
			return ctl_report(argv[0], &r);
		return EX_OK;
	}
	/* FIELD KEY VALUE: each field of the device table device-set takes */
	f = dfield_of_name(argv[0]);
	if (f >= 0 && dfield_defs[f].set && argc == 3) {
		rc = device_value(f, argv[2], &v[f]);
		if (rc)
			return rc;
		if (device_cmd(n, NXQUOTA_CMD_DEVICE_SET, argv[1], NULL, v,
			       1U << f, &r))
			return ctl_report(argv[0], &r);
		return EX_OK;
	}
	if (!strcmp(argv[0], "unregister") && argc == 2) {
		if (device_cmd(n, NXQUOTA_CMD_DEVICE_DEL, argv[1], NULL, v, 0,
			       &r))
			return ctl_report("unregister", &r);
		return EX_OK;
	}
usage:
	warnx_("usage: devices [register KEY SIZE [MAJOR:MINOR] | "
	       "unregister KEY | FIELD KEY VALUE | sync [--dry-run]]");
	devices_usage(stderr);
	return EX_USAGE;
}

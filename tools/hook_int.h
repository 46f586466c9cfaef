/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What the files of nxquota-hook's decisions share, and nothing else
 * includes: hook.c (the OCI state, config.json's members, the
 * container's and the pod's cgroups), hook_json.c (JSON that json-c
 * reads exactly as written), hook_dev.c (the GPUs a container was given)
 * and hook_plan.c (the budgets to set, against what is in place, and the
 * record poststop undoes).  The public contract is hook.h's.
 */
#ifndef NXQ_TOOLS_HOOK_INT_H
#define NXQ_TOOLS_HOOK_INT_H

#include <stddef.h>

#include <json-c/json.h>

#include "hook.h"

#define ANN_PREFIX	"nxquota.io/"
#define ENV_LIMIT	"NVIDIA_GPU_MEMORY_LIMIT"
#define ENV_REQUEST	"NVIDIA_GPU_MEMORY_REQUEST"
#define ENV_NVIDIA	"NVIDIA_VISIBLE_DEVICES"
#define ENV_NXQUOTA	"NXQUOTA_DEVICES"
#define ENV_NXQUOTA_ONE	"NXQUOTA_DEVICE_"	/* ...<X>=KEY, CDI's */
#define ENV_HAMI	"CUDA_DEVICE_MEMORY_LIMIT"	/* HAMi's, [_<i>] */
#define ENV_HAMI_OVER	"CUDA_OVERSUBSCRIBE"		/* HAMi's "true" */

enum { F_MAX, F_MIN };
/* By enum hook_scope (hook_plan.c). */
extern const char *const hook_scope_name[2];

/* Write a message into err (HOOK_ERR_LEN bytes) and return rc (hook.c). */
int __attribute__((format(printf, 3, 4)))
hook_fail(char *err, int rc, const char *fmt, ...);

/* A string member of o, or -EINVAL naming what (hook.c). */
int hook_get_str(json_object *o, const char *key, const char *what,
		 const char **out, char *err);
/* A member of o of type t, or -EINVAL naming what (hook.c). */
int hook_get_typed(json_object *o, const char *key, enum json_type t,
		   const char *what, json_object **out, char *err);
/* The length of s's leading run of characters from set (hook.c). */
size_t hook_run_of(const char *s, const char *set);
/* A GPU named by index, UUID or key, as the host has it (hook_dev.c). */
int hook_gpu_resolve(const char *spec, const struct hook_host *h,
		     const char *where, size_t *dev, char *err);

#endif /* NXQ_TOOLS_HOOK_INT_H */

// SPDX-License-Identifier: GPL-2.0
/*
 * nxquota-hook's decisions, the budgets (hook.h: hook_plan_build(),
 * hook_reconcile(), the record): which max and min to set on which GPU
 * for the container's and the pod's cgroup, from annotations (a per-GPU
 * key beats the all-GPU one, which beats NVIDIA_GPU_MEMORY_LIMIT and
 * _REQUEST, which beat HAMi's CUDA_DEVICE_MEMORY_LIMIT_<i>, from its
 * device plugin or its DRA driver, which beats its
 * CUDA_DEVICE_MEMORY_LIMIT), against what is in place; and the record of
 * what was set, which poststop reads back to undo it.  Pure, as hook.c.
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hook.h"
#include "hook_int.h"
#include "size.h"

const char *const hook_scope_name[2] = { "container", "pod" };

/* ---- the plan ----------------------------------------------------------------- */

/* One field of one (scope, device): its value and who set it. */
struct want {
	bool set;
	int prio;		/* 3 per-GPU annotation, 2 all-GPU, 1 NVIDIA's
				 * env, 0 HAMi's per GPU, -1 HAMi's for all
				 */
	uint64_t v;
	const char *src, *txt;
};

struct wants {
	struct want w[2][HOOK_MAX_DEVS][2];	/* [scope][dev][field] */
};

/* Parse "nxquota.io/[pod-](max|min)[.GPU]": 0 or -EINVAL. */
static int ann_key(const char *key, enum hook_scope *scope, int *field,
		   const char **gpu)
{
	const char *k = key + strlen(ANN_PREFIX);

	*scope = HOOK_CONTAINER;
	if (!strncmp(k, "pod-", 4)) {
		*scope = HOOK_POD;
		k += 4;
	}
	if (strncmp(k, "max", 3) && strncmp(k, "min", 3))
		return -EINVAL;
	*field = k[1] == 'a' ? F_MAX : F_MIN;
	k += 3;
	*gpu = NULL;
	if (!*k)
		return 0;
	if (*k != '.' || !k[1])
		return -EINVAL;
	*gpu = k + 1;
	return 0;
}

/* A value (a Kubernetes quantity) from src: 0 or -EINVAL with the reason. */
static int quantity(const char *src, const char *txt, uint64_t *v, char *err)
{
	uint64_t dummy;
	int rc = nxq_quantity_parse(txt, v);

	if (!rc)
		return 0;
	if (rc == -ERANGE)
		return hook_fail(err, -EINVAL, "%s=%s is above 2^64-1 bytes", src,
			    hook_q(txt));
	if (txt[0] == '-' && nxq_quantity_parse(txt + 1, &dummy) != -EINVAL)
		return hook_fail(err, -EINVAL, "%s=%s is negative", src, hook_q(txt));
	return hook_fail(err, -EINVAL, "%s=%s is not a Kubernetes quantity (such as "
		    "40Gi, 40G or 4e10)", src, hook_q(txt));
}

/* Set one field unless a more specific source already did. */
static int want_set(struct want *w, int prio, uint64_t v, const char *src,
		    const char *txt, const char *dev, char *err)
{
	if (w->set && w->prio == prio && prio == 3)
		return hook_fail(err, -EINVAL, "annotations %s and %s both name %s",
			    src, w->src, dev);
	if (w->set && w->prio > prio)
		return 0;
	*w = (struct want){ .set = true, .prio = prio, .v = v, .src = src,
			    .txt = txt };
	return 0;
}

/* One nxquota.io/ annotation into the wants. */
static int plan_annotation(const char *key, json_object *val,
			   const struct hook_host *h, const bool *given,
			   struct wants *ws, char *err)
{
	enum hook_scope scope;
	const char *gpu, *txt;
	char where[160];
	int field, rc;
	size_t i, dev = 0;
	uint64_t v;

	if (ann_key(key, &scope, &field, &gpu))
		return hook_fail(err, -EINVAL, "unknown annotation %s (nxquota.io/ "
			    "knows max, min, pod-max and pod-min, each alone or "
			    "with .<gpu>)", hook_q(key));
	if (!json_object_is_type(val, json_type_string))
		return hook_fail(err, -EINVAL, "annotation %s is not a string",
			    hook_q(key));
	txt = json_object_get_string(val);
	if ((size_t)json_object_get_string_len(val) != strlen(txt))
		return hook_fail(err, -EINVAL, "annotation %s=%s holds a NUL byte",
			    hook_q(key), hook_q(txt));
	rc = quantity(key, txt, &v, err);
	if (rc)
		return rc;
	if (gpu) {
		snprintf(where, sizeof(where), "annotation %s", key);
		rc = hook_gpu_resolve(gpu, h, where, &dev, err);
		if (rc)
			return rc;
		if (!given[dev])
			return hook_fail(err, -EINVAL, "annotation %s: %s was not given "
				    "to the container", key, h->devs[dev].key);
		return want_set(&ws->w[scope][dev][field], 3, v, key, txt,
				h->devs[dev].key, err);
	}
	for (i = 0, dev = 0; i < h->ndevs; i++) {
		if (!given[i])
			continue;
		dev++;		/* an all-GPU value never beats a per-GPU one */
		want_set(&ws->w[scope][i][field], 2, v, key, txt, NULL, err);
	}
	if (!dev)
		return hook_fail(err, -EINVAL, "annotation %s: the container was "
			    "given no GPU", key);
	return 0;
}

/* NVIDIA's NVIDIA_GPU_MEMORY_LIMIT / _REQUEST: container scope, every GPU. */
static int plan_env(json_object *cfg, const char *name, int field,
		    const struct hook_host *h, const bool *given,
		    struct wants *ws, char *err)
{
	const char *txt;
	uint64_t v;
	size_t i;
	int rc;

	rc = hook_env(cfg, name, &txt, err);
	if (rc <= 0)
		return rc;
	rc = quantity(name, txt, &v, err);
	for (i = 0; !rc && i < h->ndevs; i++)
		if (given[i])
			rc = want_set(&ws->w[HOOK_CONTAINER][i][field], 1, v,
				      name, txt, NULL, err);
	return rc;
}

/*
 * HAMi's contract, as its device plugin writes it (HAMi's
 * pkg/device-plugin/nvidiadevice, Allocate): CUDA_DEVICE_MEMORY_LIMIT_<i>
 * is "<MiB>m" for the i-th GPU it gave, in the order of the
 * NVIDIA_VISIBLE_DEVICES (UUIDs) it sets beside; HAMi-core also reads
 * CUDA_DEVICE_MEMORY_LIMIT for every GPU, and sizes as digits then k, m
 * or g (binary) or nothing (bytes).  HAMi's scheduler reserved that much
 * of the card for the container, so it is both the max and the min,
 * unless CUDA_OVERSUBSCRIBE=true says its shares were scaled past the
 * card (then the max only).  Container scope; below NVIDIA's variables.
 * HAMi's DRA driver writes the same names with NVIDIA_VISIBLE_DEVICES=void
 * (plan_hami_dra()): the same rank, since the two never meet in one
 * container, and the same meaning (a reservation, so min = max).
 */
#define HAMI_N(i)	ENV_HAMI "_" #i
static const char *const hami_name[] = {
	HAMI_N(0), HAMI_N(1), HAMI_N(2), HAMI_N(3), HAMI_N(4), HAMI_N(5),
	HAMI_N(6), HAMI_N(7), HAMI_N(8), HAMI_N(9), HAMI_N(10), HAMI_N(11),
	HAMI_N(12), HAMI_N(13), HAMI_N(14), HAMI_N(15),
};
#define HAMI_MAX	((int)(sizeof(hami_name) / sizeof(hami_name[0])))

/* HAMi-core's size: digits, then k, m, g (KiB, MiB, GiB) or nothing. */
static int hami_quantity(const char *name, const char *txt, uint64_t *v,
			 char *err)
{
	size_t n = strlen(txt), d = hook_run_of(txt, "0123456789");
	unsigned int shift = 0;
	unsigned long long x;

	if (d && d + 1 == n) {
		switch (txt[d]) {
		case 'k': case 'K': shift = 10; break;
		case 'm': case 'M': shift = 20; break;
		case 'g': case 'G': shift = 30; break;
		default: d = 0;
		}
	}
	if (!d || d > 19 || (d != n && d + 1 != n))
		return hook_fail(err, -EINVAL, "%s=%s is not a size as HAMi writes "
			    "one (digits, then k, m or g, or nothing for bytes)",
			    name, hook_q(txt));
	errno = 0;
	x = strtoull(txt, NULL, 10);
	if (errno || x > (UINT64_MAX >> shift))
		return hook_fail(err, -EINVAL, "%s=%s is too large", name,
			    hook_q(txt));
	*v = (uint64_t)x << shift;
	return 0;
}

/* One HAMi size into the container's wants on @dev. */
static int hami_want(struct wants *ws, size_t dev, int prio, const char *name,
		     const char *txt, bool guaranteed, char *err)
{
	uint64_t v = 0;
	int rc = hami_quantity(name, txt, &v, err);

	if (!rc)
		rc = want_set(&ws->w[HOOK_CONTAINER][dev][F_MAX], prio, v, name,
			      txt, NULL, err);
	if (!rc && guaranteed)
		rc = want_set(&ws->w[HOOK_CONTAINER][dev][F_MIN], prio, v, name,
			      txt, NULL, err);
	return rc;
}

/*
 * Every CUDA_DEVICE_MEMORY_LIMIT_<i> of process.env is a name HAMi writes
 * and names one of the n GPUs that @counted counts (i < n; SIZE_MAX checks
 * the names only): 0 or -EINVAL.
 */
static int hami_indexes(json_object *env, size_t n, const char *counted,
			char *err)
{
	size_t i, d, plen = strlen(ENV_HAMI) + 1;
	const char *e;

	for (i = 0; i < json_object_array_length(env); i++) {
		e = json_object_get_string(json_object_array_get_idx(env, i));
		if (!e || strncmp(e, ENV_HAMI "_", plen))
			continue;
		d = hook_run_of(e + plen, "0123456789");
		if (!d || d > 6 || e[plen + d] != '=' ||
		    (d > 1 && e[plen] == '0'))
			return hook_fail(err, -EINVAL, "process.env[%zu] %s is not "
				    "%s_<i>=SIZE", i, hook_q(e), ENV_HAMI);
		if (strtoul(e + plen, NULL, 10) >= n)
			return hook_fail(err, -EINVAL, "%.*s: %s %zu GPU%s",
				    (int)(plen + d), e, counted, n,
				    n == 1 ? "" : "s");
	}
	return 0;
}

/*
 * Each of the n GPUs has its max, and its min where HAMi's would set one,
 * from a source above HAMi's: HAMi's sizes would change nothing.
 */
static bool hami_covered(const struct wants *ws, const size_t *gpu,
			 size_t n, bool guaranteed)
{
	const struct want *w;
	size_t i;

	for (i = 0; i < n; i++) {
		w = ws->w[HOOK_CONTAINER][gpu[i]];
		if (!w[F_MAX].set || w[F_MAX].prio <= 0 ||
		    (guaranteed && (!w[F_MIN].set || w[F_MIN].prio <= 0)))
			return false;
	}
	return true;
}

/*
 * HAMi's DRA driver (Project-HAMi/k8s-dra-driver,
 * cmd/hami-kubelet-plugin/hami_core.go, GetCDIContainerEdits()) puts
 * CUDA_DEVICE_MEMORY_LIMIT_<i>="<MiB>m" into a claim's CDI spec: the
 * memory the claim consumed on its i-th device (KEP-5075's
 * ConsumedCapacity["memory"], in bytes, divided down to MiB; the whole
 * card, its request policy's default, where the claim asked for none),
 * which the scheduler reserved.  Its GPUs come as CDI device nodes
 * (linux.devices: the GPUs given), and the toolkit's common edits set
 * NVIDIA_VISIBLE_DEVICES=void.  Its i counts the devices of one config
 * group of one claim in Go's map order, which is random: one GPU, or the
 * same size for every GPU the container has, maps exactly; anything else
 * is refused, as is a count of variables that is not the count of GPUs
 * (two claims or groups each count from 0 and the runtime keeps the last
 * of each name) -- unless sources above HAMi's set every field HAMi's
 * would, on every GPU.
 */
static int plan_hami_dra(json_object *cfg, json_object *env,
			 const struct hook_host *h, const bool *given,
			 bool guaranteed, struct wants *ws, char *err)
{
	size_t gpu[HOOK_MAX_DEVS], n = 0, i;
	const char *txt[HAMI_MAX];
	uint64_t v[HAMI_MAX];
	int rc;

	for (i = 0; i < h->ndevs; i++)
		if (given[i] && !strncmp(h->devs[i].key, "GPU-", 4))
			gpu[n++] = i;
	if (!n)
		return hook_fail(err, -EINVAL, "%s_<i> with %s=void and no "
			    "GPU given", ENV_HAMI, ENV_NVIDIA);
	if (n > HAMI_MAX)
		return hook_fail(err, -EINVAL, "%s_<i> with %zu GPUs given; "
			    "HAMi's sizes are read for up to %d",
			    ENV_HAMI, n, HAMI_MAX);
	/* every name and every size, read exactly */
	rc = hami_indexes(env, SIZE_MAX, NULL, err);
	for (i = 0; !rc && i < n; i++) {
		txt[i] = NULL;
		rc = hook_env(cfg, hami_name[i], &txt[i], err);
		if (rc > 0)
			rc = hami_quantity(hami_name[i], txt[i], &v[i], err);
	}
	if (rc)
		return rc;
	/* which GPU is which: only where the answer cannot matter */
	rc = hami_indexes(env, n, "the container has", err);
	for (i = 0; !rc && i < n; i++) {
		if (!txt[i])
			rc = hook_fail(err, -EINVAL, "%s is unset, and the "
				  "container has %zu GPUs: more than HAMi "
				  "numbered (a second claim or config group "
				  "counts from 0 again)", hami_name[i], n);
		else if (v[i] != v[0])
			rc = hook_fail(err, -EINVAL, "%s=%s and %s=%s differ, "
				  "and HAMi's DRA driver numbers a claim's GPUs "
				  "in no stable order: which GPU has which is "
				  "unknown (set nxquota.io/max.<gpu> and "
				  "min.<gpu>)",
				  hami_name[0], hook_q(txt[0]), hami_name[i],
				  hook_q(txt[i]));
	}
	if (rc) {
		if (!hami_covered(ws, gpu, n, guaranteed))
			return rc;
		err[0] = '\0';
		return 0;
	}
	/* one size, or one GPU: the same budget whichever GPU HAMi's 0 was */
	for (i = 0; !rc && i < n; i++)
		rc = hami_want(ws, gpu[i], 0, hami_name[0], txt[0], guaranteed,
			       err);
	return rc;
}

static int plan_hami(json_object *cfg, const struct hook_host *h,
		     const bool *given, struct wants *ws, char *err)
{
	size_t dev[HAMI_MAX], n = 0, i, plen = strlen(ENV_HAMI) + 1;
	char *copy, *tok, *save, *end;
	const char *all = NULL, *over = NULL, *vis, *txt;
	json_object *proc = NULL, *env = NULL;
	bool guaranteed, any = false;
	int rc;

	rc = hook_env(cfg, ENV_HAMI, &all, err);
	if (rc < 0)
		return rc;
	/* any CUDA_DEVICE_MEMORY_LIMIT_<i>? (hook_env() checked the array) */
	if (json_object_object_get_ex(cfg, "process", &proc) &&
	    json_object_object_get_ex(proc, "env", &env) &&
	    json_object_is_type(env, json_type_array)) {
		for (i = 0; i < json_object_array_length(env) && !any; i++) {
			const char *s = json_object_get_string(
				json_object_array_get_idx(env, i));

			any = s && !strncmp(s, ENV_HAMI "_", plen);
		}
	}
	if (!all && !any)
		return 0;
	rc = hook_env(cfg, ENV_HAMI_OVER, &over, err);
	if (rc < 0)
		return rc;
	rc = 0;
	guaranteed = !over || strcmp(over, "true");
	if (all) {
		for (i = 0; !rc && i < h->ndevs; i++)
			if (given[i])
				rc = hami_want(ws, i, -1, ENV_HAMI, all,
					       guaranteed, err);
		if (rc || !any)
			return rc;
	}
	/* the GPUs in the order HAMi listed them */
	rc = hook_env(cfg, ENV_NVIDIA, &vis, err);
	if (rc <= 0)
		return rc ? rc : hook_fail(err, -EINVAL, "%s_<i> without %s: "
				      "which GPU is <i>?", ENV_HAMI,
				      ENV_NVIDIA);
	if (!strcmp(vis, "void"))	/* HAMi's DRA driver, through CDI */
		return plan_hami_dra(cfg, env, h, given, guaranteed, ws, err);
	copy = strdup(vis);
	if (!copy)
		return hook_fail(err, -ENOMEM, "out of memory");
	rc = 0;
	for (tok = strtok_r(copy, ",", &save); tok && !rc;
	     tok = strtok_r(NULL, ",", &save)) {
		while (*tok == ' ')
			tok++;
		end = tok + strlen(tok);
		while (end > tok && end[-1] == ' ')
			*--end = '\0';
		if (!strcmp(tok, "all") || !strcmp(tok, "none") ||
		    !strcmp(tok, "void"))
			rc = hook_fail(err, -EINVAL, "%s_<i> with %s=%s: <i> "
				  "needs the GPUs listed one by one", ENV_HAMI,
				  ENV_NVIDIA, hook_q(vis));
		else if (n == HAMI_MAX)
			rc = hook_fail(err, -EINVAL, "%s_<i> with more than %d "
				  "GPUs in %s", ENV_HAMI, HAMI_MAX,
				  ENV_NVIDIA);
		else
			rc = hook_gpu_resolve(tok, h, "process.env "
					      ENV_NVIDIA, &dev[n++], err);
	}
	free(copy);
	/* each listed GPU's own, and none for a GPU not listed */
	for (i = 0; !rc && i < n; i++) {
		rc = hook_env(cfg, hami_name[i], &txt, err);
		if (rc <= 0)
			continue;
		rc = given[dev[i]] ? hami_want(ws, dev[i], 0, hami_name[i],
					       txt, guaranteed, err) :
			hook_fail(err, -EINVAL, "%s: %s lists %s, which the "
				  "container was not given", hami_name[i],
				  ENV_NVIDIA, h->devs[dev[i]].key);
	}
	/* an index past the list, or a name HAMi does not write */
	return rc ? rc : hami_indexes(env, n, ENV_NVIDIA " lists", err);
}

/* The wants of one (scope, device) as a budget, checked: 0 or -EINVAL. */
static int plan_add(struct hook_plan *p, const struct want *w,
		    enum hook_scope scope, size_t dev,
		    const struct hook_host *h, char *err)
{
	struct hook_budget *b;

	if (!w[F_MAX].set && !w[F_MIN].set)
		return 0;
	if (w[F_MAX].set && w[F_MIN].set && w[F_MIN].v > w[F_MAX].v)
		return hook_fail(err, -EINVAL, "min %llu (%s=%s) is above max %llu "
			    "(%s=%s) for the %s's cgroup on %s",
			    (unsigned long long)w[F_MIN].v, w[F_MIN].src,
			    hook_q(w[F_MIN].txt), (unsigned long long)w[F_MAX].v,
			    w[F_MAX].src, hook_q(w[F_MAX].txt), hook_scope_name[scope],
			    h->devs[dev].key);
	b = &p->b[p->n++];
	memset(b, 0, sizeof(*b));
	b->scope = scope;
	b->dev = dev;
	b->has_max = w[F_MAX].set;
	b->max = w[F_MAX].v;
	b->max_src = w[F_MAX].src;
	b->max_txt = w[F_MAX].txt;
	b->has_min = w[F_MIN].set;
	b->min = w[F_MIN].v;
	b->min_src = w[F_MIN].src;
	b->min_txt = w[F_MIN].txt;
	p->pod |= scope == HOOK_POD;
	return 0;
}

int hook_plan_build(json_object *ann, json_object *cfg,
		    const struct hook_host *host, const bool *given,
		    struct hook_plan *p, char *err)
{
	struct wants *ws;
	size_t i;
	int s, rc = 0;

	memset(p, 0, sizeof(*p));
	if (host->ndevs > HOOK_MAX_DEVS)
		return hook_fail(err, -E2BIG, "the authority has %zu devices; this "
			    "hook handles %d", host->ndevs, HOOK_MAX_DEVS);
	ws = calloc(1, sizeof(*ws));
	if (!ws)
		return hook_fail(err, -ENOMEM, "out of memory");
	if (ann) {
		json_object_object_foreach(ann, key, val) {
			if (strncmp(key, ANN_PREFIX, strlen(ANN_PREFIX)))
				continue;
			rc = plan_annotation(key, val, host, given, ws, err);
			if (rc)
				goto out;
		}
	}
	rc = plan_env(cfg, ENV_LIMIT, F_MAX, host, given, ws, err);
	if (!rc)
		rc = plan_env(cfg, ENV_REQUEST, F_MIN, host, given, ws, err);
	if (!rc)
		rc = plan_hami(cfg, host, given, ws, err);
	/* the pod's budgets first: a parent before its child */
	for (s = HOOK_POD; !rc && s >= HOOK_CONTAINER; s--)
		for (i = 0; !rc && i < host->ndevs; i++)
			rc = plan_add(p, ws->w[s][i], (enum hook_scope)s, i,
				      host, err);
out:
	free(ws);
	return rc;
}

/* ---- what is in place ------------------------------------------------------------ */

/* "max=N min=N" of a budget (what it sets, or all of an old one). */
static const char *fields(bool has_max, uint64_t max, bool has_min,
			  uint64_t min)
{
	static char bufs[2][64];
	static unsigned int next;
	char *b = bufs[next++ % 2];
	int n = 0;

	b[0] = '\0';
	if (has_max && max == HOOK_NO_MAX)
		n = snprintf(b, 64, "max=none");
	else if (has_max)
		n = snprintf(b, 64, "max=%llu", (unsigned long long)max);
	if (has_min)
		snprintf(b + n, (size_t)(64 - n), "%smin=%llu", n ? " " : "",
			 (unsigned long long)min);
	return b;
}

int hook_reconcile(struct hook_plan *p, const struct hook_host *host,
		   const char *ctr, const char *pod,
		   const struct hook_node *nodes, size_t nnodes, char *err)
{
	struct hook_budget *b;
	const struct hook_node *nd;
	const char *key, *path;
	size_t i, j;

	for (i = 0; i < p->n; i++) {
		b = &p->b[i];
		key = host->devs[b->dev].key;
		path = b->scope == HOOK_POD ? pod : ctr;
		for (j = 0, nd = NULL; j < nnodes && !nd; j++)
			if (!strcmp(nodes[j].device, key) &&
			    !strcmp(nodes[j].path, path))
				nd = &nodes[j];
		b->old_max = nd ? nd->max : HOOK_NO_MAX;
		b->old_min = nd ? nd->min : 0;
		b->existed = b->old_max != HOOK_NO_MAX || b->old_min;
		if (b->scope != HOOK_POD || !b->existed)
			continue;
		if ((b->has_max && b->max != b->old_max) ||
		    (b->has_min && b->min != b->old_min))
			return hook_fail(err, -EEXIST, "the pod's budget is already "
				    "%s on %s %s; this container asks %s",
				    fields(true, b->old_max, true, b->old_min),
				    hook_q(pod), key,
				    fields(b->has_max, b->max, b->has_min,
					   b->min));
		b->skip = true;		/* a sibling set it: the same values */
	}
	return 0;
}

/* ---- the record ------------------------------------------------------------------ */

static void add_str(json_object *o, const char *key, const char *s)
{
	json_object_object_add(o, key, json_object_new_string(s));
}

/* The annotations that name a container on Kubernetes, and the field of each. */
static const struct {
	const char *key;
	size_t off;
} k8s_keys[] = {
	{ "io.kubernetes.pod.namespace",
	  offsetof(struct hook_record, k8s_namespace) },
	{ "io.kubernetes.pod.name", offsetof(struct hook_record, k8s_pod) },
	{ "io.kubernetes.container.name",
	  offsetof(struct hook_record, k8s_container) },
};

/* The record's member of a Kubernetes name, for the file's JSON. */
static const char *const k8s_members[] = { "namespace", "pod", "container" };

static bool k8s_name(const char *s)
{
	size_t n = strlen(s);

	return n && n <= HOOK_K8S_NAME_MAX &&
	       strspn(s, "abcdefghijklmnopqrstuvwxyz0123456789.-") == n;
}

void hook_record_k8s(json_object *ann, struct hook_record *r)
{
	json_object *v;
	const char *s;
	size_t i;

	for (i = 0; i < sizeof(k8s_keys) / sizeof(k8s_keys[0]); i++) {
		char *dst = (char *)r + k8s_keys[i].off;

		dst[0] = '\0';
		if (!ann || !json_object_object_get_ex(ann, k8s_keys[i].key, &v) ||
		    !json_object_is_type(v, json_type_string))
			continue;
		s = json_object_get_string(v);
		if ((size_t)json_object_get_string_len(v) == strlen(s) &&
		    k8s_name(s))
			strcpy(dst, s);
	}
}

char *hook_record_format(const struct hook_record *r)
{
	json_object *o = json_object_new_object(), *a = json_object_new_array();
	const struct hook_rec_budget *rb;
	char *s = NULL;
	size_t i;

	if (!o || !a)
		goto out;
	json_object_object_add(o, "version", json_object_new_int(1));
	add_str(o, "id", r->id);
	add_str(o, "authority", r->control[0] ? "nxquotad" : "module");
	if (r->control[0])
		add_str(o, "control", r->control);
	add_str(o, "cgroup", r->cgroup);
	if (r->pod[0])
		add_str(o, "pod_cgroup", r->pod);
	if (r->k8s_namespace[0] || r->k8s_pod[0] || r->k8s_container[0]) {
		json_object *k = json_object_new_object();

		for (i = 0; i < sizeof(k8s_keys) / sizeof(k8s_keys[0]); i++)
			if (((const char *)r + k8s_keys[i].off)[0])
				add_str(k, k8s_members[i],
					(const char *)r + k8s_keys[i].off);
		json_object_object_add(o, "kubernetes", k);
	}
	for (i = 0; i < r->n; i++) {
		json_object *e = json_object_new_object();

		rb = &r->b[i];
		add_str(e, "device", rb->device);
		add_str(e, "scope", hook_scope_name[rb->scope]);
		add_str(e, "cgroup", rb->scope == HOOK_POD ? r->pod : r->cgroup);
		if (rb->has_max)
			json_object_object_add(e, "max",
					       json_object_new_uint64(rb->max));
		if (rb->has_min)
			json_object_object_add(e, "min",
					       json_object_new_uint64(rb->min));
		json_object_object_add(e, "created",
				       json_object_new_boolean(rb->created));
		json_object_array_add(a, e);
	}
	json_object_object_add(o, "budgets", a);
	a = NULL;
	if (asprintf(&s, "%s\n", json_object_to_json_string_ext(o,
			JSON_C_TO_STRING_PRETTY |
			JSON_C_TO_STRING_NOSLASHESCAPE)) < 0)
		s = NULL;
out:
	json_object_put(a);
	json_object_put(o);
	return s;
}

/* A string member that fits size bytes, into dst: 0 or -EINVAL. */
static int rec_str(json_object *o, const char *key, bool required,
		   char *dst, size_t size, char *err)
{
	const char *s;
	int rc = hook_get_str(o, key, "record", &s, err);

	if (rc)
		return rc;
	if (!s && required)
		return hook_fail(err, -EINVAL, "record: no %s", key);
	if (s && strlen(s) >= size)
		return hook_fail(err, -EINVAL, "record: %s too long", key);
	snprintf(dst, size, "%s", s ? s : "");
	return 0;
}

/* One budget of the record's "budgets". */
static int rec_budget(json_object *e, struct hook_rec_budget *rb, char *err)
{
	json_object *max, *min, *created;
	char scope[16];
	int rc;

	if (!json_object_is_type(e, json_type_object))
		return hook_fail(err, -EINVAL, "record: a budget is not an object");
	rc = rec_str(e, "device", true, rb->device, sizeof(rb->device), err);
	if (!rc)
		rc = rec_str(e, "scope", true, scope, sizeof(scope), err);
	if (!rc)
		rc = hook_get_typed(e, "max", json_type_int, "record", &max, err);
	if (!rc)
		rc = hook_get_typed(e, "min", json_type_int, "record", &min, err);
	if (!rc)
		rc = hook_get_typed(e, "created", json_type_boolean, "record",
			       &created, err);
	if (rc)
		return rc;
	if (strcmp(scope, "container") && strcmp(scope, "pod"))
		return hook_fail(err, -EINVAL, "record: unknown scope %s",
			    hook_q(scope));
	rb->scope = strcmp(scope, "pod") ? HOOK_CONTAINER : HOOK_POD;
	rb->has_max = max;
	rb->max = max ? json_object_get_uint64(max) : 0;
	rb->has_min = min;
	rb->min = min ? json_object_get_uint64(min) : 0;
	rb->created = created && json_object_get_boolean(created);
	return 0;
}

int hook_record_parse(const char *buf, size_t len, struct hook_record *r,
		      char *err)
{
	json_object *o, *v, *a;
	char auth[16];
	size_t i;
	int rc;

	memset(r, 0, sizeof(*r));
	rc = hook_json_parse(buf, len, "the record", &o, err);
	if (rc)
		return rc;
	rc = hook_get_typed(o, "version", json_type_int, "record", &v, err);
	if (!rc && (!v || json_object_get_int(v) != 1))
		rc = hook_fail(err, -EINVAL, "record: not version 1");
	if (!rc)
		rc = rec_str(o, "id", true, r->id, sizeof(r->id), err);
	if (!rc)
		rc = rec_str(o, "authority", true, auth, sizeof(auth), err);
	if (!rc)
		rc = rec_str(o, "control", false, r->control, sizeof(r->control),
			     err);
	if (!rc && strcmp(auth, "module") &&
	    (strcmp(auth, "nxquotad") || !r->control[0]))
		rc = hook_fail(err, -EINVAL, "record: unknown authority %s",
			  hook_q(auth));
	if (!rc && !strcmp(auth, "module"))
		r->control[0] = '\0';
	if (!rc)
		rc = rec_str(o, "cgroup", true, r->cgroup, sizeof(r->cgroup), err);
	if (!rc)
		rc = rec_str(o, "pod_cgroup", false, r->pod, sizeof(r->pod), err);
	if (!rc)
		rc = hook_get_typed(o, "kubernetes", json_type_object, "record",
				    &v, err);
	/* optional, member by member: a record of an older hook has none */
	for (i = 0; !rc && v && i < sizeof(k8s_keys) / sizeof(k8s_keys[0]); i++) {
		char *dst = (char *)r + k8s_keys[i].off;

		rc = rec_str(v, k8s_members[i], false, dst,
			     HOOK_K8S_NAME_MAX + 1, err);
		if (!rc && dst[0] && !k8s_name(dst))
			rc = hook_fail(err, -EINVAL, "record: kubernetes.%s %s "
				       "is not a name", k8s_members[i],
				       hook_q(dst));
	}
	if (!rc)
		rc = hook_get_typed(o, "budgets", json_type_array, "record", &a, err);
	if (!rc && a && json_object_array_length(a) > HOOK_MAX_BUDGETS)
		rc = hook_fail(err, -EINVAL, "record: too many budgets");
	for (i = 0; !rc && a && i < json_object_array_length(a); i++)
		rc = rec_budget(json_object_array_get_idx(a, i), &r->b[r->n++],
				err);
	json_object_put(o);
	return rc;
}

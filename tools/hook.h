/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota-hook's decisions (hook.c): what an OCI state and a bundle's
 * config.json ask for, checked against the devices the authority has
 * registered, as pure functions over parsed JSON.  No I/O, no libnl:
 * the host's view (registered devices, /dev/nvidiaN, the cgroups) comes
 * in as arguments, so tests/tools/test_hook.c drives every rule with a
 * fake device list.  nxquota-hook.c does the reading, the authority and
 * the record.
 *
 * Every function that can refuse writes one line (no newline, no prefix)
 * into an error buffer of HOOK_ERR_LEN bytes and returns a negative
 * errno; anything a tenant wrote appears in it quoted and escaped.
 */
#ifndef NXQ_TOOLS_HOOK_H
#define NXQ_TOOLS_HOOK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <json-c/json.h>
#include <linux/nxquota.h>

#define HOOK_ERR_LEN		4096
#define HOOK_WHY_LEN		256	/* the authority's reason for one step */
#define HOOK_STATE_MAX		(1 << 20)	/* bytes of state JSON read */
#define HOOK_CONFIG_MAX		(16 << 20)	/* bytes of config.json read */
#define HOOK_ID_MAX		128
#define HOOK_PATH_MAX		4096
#define HOOK_MAX_DEVS		128	/* registered devices considered */
#define HOOK_MAX_BUDGETS	(2 * HOOK_MAX_DEVS)
#define HOOK_NO_MAX		UINT64_MAX	/* NXQ_UNLIMITED: no own max */

/* The stage a run of the hook serves. */
enum hook_stage { HOOK_CREATE, HOOK_STOP };

/* Whose budget: the container's cgroup, or its parent, the pod's. */
enum hook_scope { HOOK_CONTAINER, HOOK_POD };

/* A device the authority registered, as the hook needs it. */
struct hook_dev {
	char key[NXQ_DEVICE_KEY_MAX];
	bool has_devt;
	unsigned int major, minor;
};

/*
 * The MAJOR:MINOR of /dev/nvidia<index> on the host: 0, or a negative
 * errno when there is no such character device.
 */
typedef int (*hook_nvidia_fn)(unsigned int index, unsigned int *major,
			      unsigned int *minor, void *arg);

/* The host as the decisions see it. */
/*
 * @trust_env: process.env's device lists (NVIDIA_VISIBLE_DEVICES,
 * NXQUOTA_DEVICES, NXQUOTA_DEVICE_*) give a device that has a node only
 * when the operator says so (NXQUOTA_HOOK_TRUST_ENV=1 in the hook's own
 * environment: a legacy runtime hook that adds nodes after createRuntime);
 * otherwise such a device counts as given only with its node in
 * linux.devices, since a tenant writes process.env.
 */
struct hook_host {
	const struct hook_dev *devs;
	size_t ndevs;
	hook_nvidia_fn nvidia;
	void *arg;
	bool trust_env;
};

/* The OCI state on stdin; the strings live as long as root. */
struct hook_state {
	json_object *root;
	const char *id, *status, *bundle;	/* NULL when absent */
	long long pid;				/* 0 when absent */
	json_object *annotations;		/* NULL when absent */
};

/* One budget to set: which device, whose cgroup, which fields. */
struct hook_budget {
	enum hook_scope scope;
	size_t dev;			/* index into hook_host.devs */
	bool has_max, has_min;
	uint64_t max, min;
	/* where each value came from: a key ("nxquota.io/max.0",
	 * "NVIDIA_GPU_MEMORY_LIMIT") and its text ("40Gi") */
	const char *max_src, *min_src, *max_txt, *min_txt;
	/* filled by hook_reconcile() */
	bool existed;			/* the node had a budget before */
	uint64_t old_max, old_min;	/* and these values */
	bool skip;			/* the pod's, identical: left alone */
	/* kept by hook_apply() and hook_undo() */
	bool applied;			/* set, or maybe (no answer) */
	bool maybe;			/* asked, never answered */
	char why[HOOK_WHY_LEN];		/* why its undo failed */
};

struct hook_plan {
	struct hook_budget b[HOOK_MAX_BUDGETS];
	size_t n;
	bool pod;			/* some budget has pod scope */
};

/* A budget as the authority's BUDGET_GET dump shows it. */
struct hook_node {
	const char *device, *path;
	uint64_t max;			/* HOOK_NO_MAX: none of its own */
	uint64_t min;			/* 0: no guarantee */
};

/* A Kubernetes name as a record keeps it: at most 253 bytes (a DNS subdomain). */
#define HOOK_K8S_NAME_MAX	253

/*
 * What the hook set for a container, kept for poststop; the Kubernetes
 * names come from the annotations the CRI runtime writes
 * (io.kubernetes.pod.namespace, io.kubernetes.pod.name,
 * io.kubernetes.container.name), "" when absent or not a name, and
 * label the metrics of the two cgroups (tools/prom.c).  A record written
 * before they were kept has none: it still reads.
 */
struct hook_record {
	char id[HOOK_ID_MAX + 1];
	char control[HOOK_PATH_MAX];	/* nxquotad's socket; "" = module */
	char cgroup[HOOK_PATH_MAX], pod[HOOK_PATH_MAX];
	char k8s_namespace[HOOK_K8S_NAME_MAX + 1];
	char k8s_pod[HOOK_K8S_NAME_MAX + 1];
	char k8s_container[HOOK_K8S_NAME_MAX + 1];
	struct hook_rec_budget {
		char device[NXQ_DEVICE_KEY_MAX];
		enum hook_scope scope;
		bool created, has_max, has_min;
		uint64_t max, min;
	} b[HOOK_MAX_BUDGETS];
	size_t n;
};

/* ---- input --------------------------------------------------------------- */

/*
 * Whether len bytes are JSON as RFC 8259 writes it, which json-c then
 * reads exactly (hook_json.c): no comment, single quote, NaN, trailing
 * comma, leading zero or garbage after the value; an integer within
 * int64 or uint64; strings in UTF-8 without a lone surrogate, no key
 * written twice in an object, and no NUL in any key or string (raw or
 * \u0000).  0 (with the number of values and of decoded string bytes,
 * when asked), or -EINVAL naming where (annotations."nxquota.io/max").
 */
int hook_json_exact(const char *buf, size_t len, const char *what,
		    size_t *values, size_t *bytes, char *err);
/*
 * Parse exactly len bytes of JSON, one object and nothing after, that
 * hook_json_exact() accepts, and check that json-c read every value and
 * string byte of it: 0 or -EINVAL.
 */
int hook_json_parse(const char *buf, size_t len, const char *what,
		    json_object **out, char *err);
/* The state's fields (st->root = root, still owned by the caller). */
int hook_state_parse(json_object *root, struct hook_state *st, char *err);
/* A container id that is a safe file name: [A-Za-z0-9_.-]{1,128}, no '.' first. */
int hook_id_check(const char *id, char *err);
/* The stage from the argument, else from the state's status. */
int hook_stage(const char *arg, const char *status, enum hook_stage *out,
	       char *err);
/*
 * The annotations that count: the state's, else config.json's; *ann is
 * NULL when neither has any.  0, or -EINVAL when config.json's are not
 * an object.
 */
int hook_annotations(const struct hook_state *st, json_object *cfg,
		     json_object **ann, char *err);
/*
 * process.env's value of name in cfg: 1 and *val, 0 when unset, -EINVAL
 * when process.env is malformed or sets name twice.
 */
int hook_env(json_object *cfg, const char *name, const char **val, char *err);
/* Whether the container asks for anything: an nxquota.io/ annotation,
 * NVIDIA_GPU_MEMORY_REQUEST/LIMIT or HAMi's CUDA_DEVICE_MEMORY_LIMIT[_<i>]
 * in process.env. */
bool hook_wanted(json_object *ann, json_object *cfg);

/* ---- the container's cgroups ---------------------------------------------- */

/*
 * The cgroup v2 path in the text of /proc/PID/cgroup (its "0::" line),
 * as written: 0, or -ENOENT (no such line: cgroup v1 only), -EINVAL.
 */
int hook_proc_cgroup(const char *text, char *path, size_t size, char *err);
/* A container's cgroup path we may budget: not the root, no ".", "..",
 * empty component or control character, not removed.  0 or -EINVAL. */
int hook_cgroup_check(const char *path, char *err);
/* The container's cgroup may be budgeted: not the hook's own (the
 * runtime's) nor one of its ancestors.  0 or -EINVAL. */
int hook_cgroup_own(const char *ctr, const char *self, char *err);
/* The parent of a cgroup path, which must not be the root: 0 or -EINVAL. */
int hook_cgroup_parent(const char *path, char *out, size_t size, char *err);
/* Whether annotations mark a container in a pod (Kubernetes, podman). */
bool hook_in_pod(json_object *ann);
/*
 * The pod's cgroup is laid out as kubelet's (cgroupfs or systemd driver,
 * with the pod's UID of the annotations where they give one) or podman's
 * pod cgroup, never a container's own (hook.c): 0 or -EINVAL.
 */
int hook_pod_cgroup_check(const char *pod, json_object *ann, char *err);

/* ---- devices and budgets ---------------------------------------------------- */

/* A device of the DEVICE_GET dump: key and "MAJOR:MINOR" (or ""). */
int hook_dev_init(struct hook_dev *d, const char *key, const char *devt);
/*
 * The devices the container was given (given[i] for host->devs[i]):
 * linux.devices' character devices by MAJOR:MINOR; and, from
 * NVIDIA_VISIBLE_DEVICES, NXQUOTA_DEVICES and each NXQUOTA_DEVICE_<X>
 * (what nxquotactl's CDI spec sets), the devices without a node, and
 * those with one when host->trust_env.  0 or -EINVAL.
 */
/* Could cfg be given a device or ask a budget (hook_dev.c)?  False: it is
 * given nothing, whatever the authority has registered. */
bool hook_gpu_hinted(json_object *ann, json_object *cfg);
int hook_given(json_object *cfg, const struct hook_host *host, bool *given,
	       char *err);
/*
 * The budgets the annotations (and NVIDIA_GPU_MEMORY_*) ask for, every
 * value checked; p->n == 0 when there is nothing to set.  0 or -EINVAL.
 */
int hook_plan_build(json_object *ann, json_object *cfg,
		    const struct hook_host *host, const bool *given,
		    struct hook_plan *p, char *err);
/*
 * What a container gets before it exists, for a runtime plugin that
 * adjusts it then (nxquota-hook given, nxquota-nri's CreateContainer):
 * from cfg in config.json's shape (annotations as ann, process.env,
 * linux.devices), {"given": [KEY...], "budget": BOOL}: the devices
 * hook_given() gives, in the host's order, and whether it has a budget
 * (hook_wanted(), and hook_plan_build() sets one or refuses: the
 * refusal itself comes at createRuntime).  When the devices given cannot
 * be decided: -EINVAL with the reason if it asks for a budget (its start
 * would be refused alike), else {"given": [], "budget": false,
 * "unresolved": WHY}.  0 and *out (the caller puts it), or a negative
 * errno.
 */
int hook_given_report(json_object *ann, json_object *cfg,
		      const struct hook_host *host, json_object **out,
		      char *err);
/*
 * Compare the plan with the budgets in place (ctr and pod are the two
 * cgroups' paths): note what existed, skip a pod budget that is already
 * there with the same values, refuse one with other values (-EEXIST).
 */
int hook_reconcile(struct hook_plan *p, const struct hook_host *host,
		   const char *ctr, const char *pod,
		   const struct hook_node *nodes, size_t nnodes, char *err);

/* ---- setting the plan --------------------------------------------------------- */

/* The authority as hook_apply() asks it (nxquota-hook.c's, or a test's). */
struct hook_ops {
	/*
	 * Set (clear: remove) the budget of path on key, the fields has_*
	 * only: 0, or a negative errno with the reason in why (one line, at
	 * most size bytes); -ETIMEDOUT when no answer came in time, and the
	 * request may still take effect.
	 */
	int (*budget)(void *arg, bool clear, const char *path, const char *key,
		      bool has_max, uint64_t max, bool has_min, uint64_t min,
		      char *why, size_t size);
	/* An undo begins: a deadline of its own (may be NULL). */
	void (*undo_begin)(void *arg);
	/* What is set changed: hook_left()'s text (may be NULL). */
	void (*note)(void *arg, const char *left);
	void *arg;
};

/*
 * Set the plan's budgets (not those hook_reconcile() skipped), pods'
 * first; control is nxquotad's socket ("" for the module), for the
 * commands a message names.  0; or, when one is refused or not answered,
 * hook_undo() and that step's negative errno, err saying which step, why,
 * and what the undo left.
 */
int hook_apply(struct hook_plan *p, const struct hook_host *h,
	       const char *ctr, const char *pod, const char *control,
	       const struct hook_ops *ops, char *err);
/*
 * Undo every step hook_apply() took (and one not answered), the last
 * first, going on past an undo that fails: a budget it created is
 * cleared, one it changed gets its old values.  Writes into msg "; the N
 * budgets it set were undone" or "; undone N, LEFT M: " and
 * hook_left()'s list; returns how many are left.
 */
size_t hook_undo(struct hook_plan *p, const struct hook_host *h,
		 const char *ctr, const char *pod, const char *control,
		 const struct hook_ops *ops, char *msg, size_t size);
/*
 * The budgets set now (applied), one "PATH on KEY (max=N, ...; put back
 * with: nxquotactl ... clear|set ...)" each, "; " between: their number.
 */
size_t hook_left(const struct hook_plan *p, const struct hook_host *h,
		 const char *ctr, const char *pod, const char *control,
		 char *buf, size_t size);

/* ---- the record ------------------------------------------------------------- */

/* The record as JSON text (free() it), or NULL on ENOMEM. */
/*
 * The Kubernetes names of annotations ann (NULL: none) into r: each one
 * that is a name (1..HOOK_K8S_NAME_MAX bytes of [a-z0-9.-], Kubernetes'
 * DNS rules, loosely); anything else stays "".
 */
void hook_record_k8s(json_object *ann, struct hook_record *r);
char *hook_record_format(const struct hook_record *r);
/* Parse a record: 0 or -EINVAL. */
int hook_record_parse(const char *buf, size_t len, struct hook_record *r,
		      char *err);

/* ---- the timeout --------------------------------------------------------------- */

#define HOOK_TIMEOUT_MAX_MS	600000

/* Seconds as NXQUOTA_HOOK_TIMEOUT and --timeout write them ("5", "0.25"):
 * 0 and *ms, or -EINVAL. */
int hook_timeout_parse(const char *s, unsigned int *ms, char *err);

/* ---- messages --------------------------------------------------------------- */

/*
 * s quoted for a one-line message: in double quotes, control bytes,
 * quotes and backslashes escaped, shortened past 120 bytes.  The result
 * lives in one of 8 static buffers, reused in turn (one thread only).
 */
const char *hook_q(const char *s);

#endif /* NXQ_TOOLS_HOOK_H */

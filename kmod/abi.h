/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota ledger, on top: the ABI's rules that do not depend on the
 * transport, in one copy that both authorities compile -- the module's
 * shells (cdev.c, netlink.c) and nxquotad's (daemon/client.c, ctl.c):
 *
 *  - the ioctl commands (nxq_abi_cmds[]): each argument's size, its first
 *    published size, the flags it accepts, whether it names a holder and
 *    is copied back, and the checks that come before the holder lookup;
 *    registration's checks; the features reported;
 *  - the generic netlink family (with CONFIG_NET): the request policies
 *    and the operations (nxq_abi_nlops[]), generated from
 *    Documentation/netlink/specs/nxquota.yaml, the rules of the
 *    administration's arguments, and the attributes of every message the
 *    family sends (dumps and events);
 *  - the translation between the uapi structs and the ledger's calls.
 *
 * Copying, framing, who the caller is and the holder lookup stay in each
 * shell.  The KUnit suite "nxquota-abi" (in abi.c) holds the tables to the
 * uapi header and the spec, in the module's KUnit build and in nxquotad's.
 */
#ifndef _NXQ_ABI_H
#define _NXQ_ABI_H

#include "charge.h"

struct nla_policy;
struct nlattr;

/* ---- the ioctl commands ---- */

/* The features both authorities report (NXQ_IOC_VERSION). */
#define NXQ_ABI_FEATURES	(NXQ_FEAT_HOLDERS | NXQ_FEAT_CHARGE |	\
				 NXQ_FEAT_STATUS | NXQ_FEAT_CHARGE_WAIT |	\
				 NXQ_FEAT_TICKETS | NXQ_FEAT_STATUS_V1 |	\
				 NXQ_FEAT_CHARGE_PROBE | NXQ_FEAT_CHARGE_V1)

/* A command's @flags for an argument that has no flags field. */
#define NXQ_ABI_NO_FLAGS	U32_MAX

/**
 * struct nxq_abi_cmd - one ioctl command's rules
 * @cmd: NXQ_IOC_*, 0 for a hole in the table
 * @ksize: the size of the argument struct this ABI knows
 * @ver0: the smallest size accepted (NXQ_*_SIZE_VER0)
 * @flags: the flags the command accepts (the field after size), or
 *	NXQ_ABI_NO_FLAGS when it has none
 * @holder: the argument names a holder (holder_id after flags)
 * @out: the argument is copied back
 * @err_out: 0, or the smallest size from which the argument is copied
 *	back also when the command fails in its handler (not on its
 *	arguments): a refused charge says what refused
 * @check: checks of the argument that come before the holder lookup, or
 *	NULL
 */
struct nxq_abi_cmd {
	unsigned int cmd;
	u16 ksize, ver0, err_out;
	u32 flags;
	bool holder, out;
	int (*check)(const void *karg);
};

/* Indexed by the command's number (_IOC_NR). */
/* _IOC_NR(NXQ_IOC_TICKET_ANSWER) + 1; the kernel's _IOC() is not constant */
#define NXQ_ABI_NR_CMDS		9
extern const struct nxq_abi_cmd nxq_abi_cmds[NXQ_ABI_NR_CMDS];

/* The largest argument any command takes. */
#define NXQ_ABI_ARG_MAX		sizeof(struct nxq_status)

/* What every argument struct that names a holder starts with. */
struct nxq_abi_head {
	__u32 size;
	__u32 flags;
	__u64 holder_id;
};

/* An argument, copied in. */
union nxq_abi_arg {
	struct nxq_abi_head head;
	u8 bytes[NXQ_ABI_ARG_MAX];
};

const struct nxq_abi_cmd *nxq_abi_cmd(unsigned int cmd);
int nxq_abi_size(const struct nxq_abi_cmd *op, u32 usize);
int nxq_abi_args(const struct nxq_abi_cmd *op, const void *karg);
int nxq_abi_charge_check(const void *karg);
int nxq_abi_uncharge_check(const void *karg);
int nxq_abi_register_check(const struct nxq_holder_reg *a);
int nxq_abi_devnode_check(const struct nxq_device *dev, bool given,
			  bool chr, dev_t rdev);
void nxq_abi_version(struct nxq_version *a);
int nxq_abi_status(struct nxq_holder *h, struct nxq_status *a);
int nxq_abi_charge(struct nxq_holder *h, struct nxq_charge *a, u64 timeout_ns);
void nxq_abi_charge_refused(struct nxq_charge *a,
			    const struct nxq_refusal_rec *r);
bool nxq_abi_err_out(const struct nxq_abi_cmd *op, u32 usize, int err);
int nxq_abi_ticket_read(struct nxq_holder *h, struct nxq_ticket *a);
int nxq_abi_ticket_answer(struct nxq_holder *h, struct nxq_ticket_answer *a);
int nxq_abi_rehome(struct nxq_holder *h, struct nxq_node *node);

/**
 * struct nxq_abi_devnode - the device proof a registration brought
 * @given: a descriptor came with NXQ_HOLDER_DEVFD (open for reading or
 *	writing: an O_PATH one is refused before this)
 * @chr: it is a character device
 * @rdev: its device number, in the shell's encoding (MKDEV())
 */
struct nxq_abi_devnode {
	bool given, chr;
	dev_t rdev;
};

struct nxq_holder *nxq_abi_holder_new(struct nxq_ledger *l,
				      const struct nxq_holder_reg *a,
				      const struct nxq_abi_devnode *proof,
				      struct nxq_node *(*node_of)(struct nxq_device *dev,
								  void *ctx),
				      void *ctx, void *priv, struct pid *owner,
				      u32 tgid, int *err);

/* ---- the administration's values (netlink, sysfs, nxquotad's state) ---- */

/**
 * struct nxq_abi_field - one attribute of the budget table, as the spec has
 *	it (NXQ_BUDGET_FIELDS in the uapi header, made by daemon/ynl-gen.sh)
 * @name: its name in sysfs and nxquotad's state file ("kill_on_ignore")
 * @attr: its netlink attribute (NXQUOTA_A_BUDGET_*)
 * @unit: enum nxq_unit
 * @parse: enum nxq_parse: how its text is read
 * @who: enum nxq_who: who may set it
 * @lim: its enum nxq_limit, or -1 when it is not a per-cgroup limit
 * @kept: a node keeps it (budget-get reports it); else it modifies a
 *	request only
 * @lo: the least value root may set
 * @hi: the largest (a size's is the ledger's to check)
 * @dflt: what a cgroup that sets none gets
 */
struct nxq_abi_field {
	const char *name;
	u16 attr;
	u8 unit, parse, who;
	s8 lim;
	bool kept;
	u64 lo, hi, dflt;
};
extern const struct nxq_abi_field nxq_abi_fields[NXQ_NR_BUDGET_FIELDS];

int nxq_abi_field_find(const char *name, size_t len);
int nxq_abi_parse_size(const char *s, bool allow_max, u64 *out);
int nxq_abi_field_parse(enum nxq_budget_field f, const char *s, u64 *v);
bool nxq_abi_field_valid(enum nxq_budget_field f, u64 v);
bool nxq_abi_req_get(const struct nxq_budget_req *r, enum nxq_budget_field f,
		     u64 *v);
int nxq_abi_req_put(struct nxq_budget_req *r, enum nxq_budget_field f, u64 v);
int nxq_abi_budget_word(const char *word, struct nxq_budget_req *r);
bool nxq_abi_node_req(struct nxq_node *node, struct nxq_budget_req *r);
bool nxq_abi_node_field(struct nxq_node *node, enum nxq_budget_field f,
			u64 *v);

/**
 * struct nxq_abi_dfield - one setting of a device, as the spec has it
 *	(NXQ_DEVICE_FIELDS in the uapi header, made by daemon/ynl-gen.sh)
 * @name: its name in sysfs (the device's file) and nxquotad's state file
 * @attr: its netlink attribute (NXQUOTA_A_DEVICE_*)
 * @unit: enum nxq_unit
 * @parse: enum nxq_parse: how its text is read
 * @who: enum nxq_who: who may set it
 * @add: device-add takes it
 * @set: device-set changes it
 * @lo: the least value root may set
 * @hi: the largest (a size's: not checked, see nxq_abi_dfield_valid())
 * @dflt: what a device registered without it starts with
 */
struct nxq_abi_dfield {
	const char *name;
	u16 attr;
	u8 unit, parse, who;
	bool add, set;
	u64 lo, hi, dflt;
};
extern const struct nxq_abi_dfield nxq_abi_dfields[NXQ_NR_DEVICE_FIELDS];

int nxq_abi_dfield_find(const char *name, size_t len);
bool nxq_abi_dfield_valid(enum nxq_device_field f, u64 v);
int nxq_abi_dfield_parse(enum nxq_device_field f, const char *s, u64 *v);
u64 nxq_abi_dev_get(struct nxq_device *dev, enum nxq_device_field f);
int nxq_abi_dev_put(struct nxq_device *dev, enum nxq_device_field f, u64 v);
int nxq_abi_parse_devt(const char *s, unsigned int *major,
		       unsigned int *minor);

/* The extended-ack messages both authorities give. */
#define NXQ_ABI_MSG_KEY		"a key is 1-63 characters of [A-Za-z0-9._:-]"
#define NXQ_ABI_MSG_DEVT	"a dev_t is MAJOR:MINOR, not 0:0"
#define NXQ_ABI_MSG_DEV_EXISTS	"device already registered"
#define NXQ_ABI_MSG_NODEV	"no such device"
#define NXQ_ABI_MSG_BUSY	"holders are registered on the device"
#define NXQ_ABI_MSG_NOCGROUP	"no such cgroup"
#define NXQ_ABI_MSG_PATH	"a cgroup path starts with /"
#define NXQ_ABI_MSG_ADMIN	"needs CAP_SYS_ADMIN"

/* ---- the generic netlink family ---- */

/**
 * struct nxq_abi_nlop - one operation of the family "nxquota"
 * @cmd: NXQUOTA_CMD_*
 * @doit: it has a do
 * @dumpit: it has a dump
 * @policy: its request's policy (struct nla_policy[@maxattr + 1]), or
 *	NULL for none (no attribute at all is accepted)
 * @maxattr: the highest attribute its policy names
 * @flags: GENL_ADMIN_PERM (the administration's capability),
 *	GENL_CMD_CAP_DO, GENL_CMD_CAP_DUMP
 *
 * Generated from the spec: the policies and this table are the ops
 * table ynl-gen-c.py --mode kernel renders (see abi_genl.c), with the
 * handlers left to each shell.
 */
struct nxq_abi_nlop {
	u8 cmd;
	bool doit, dumpit;
	const struct nla_policy *policy;
	unsigned int maxattr;
	u8 flags;
};

#define NXQ_ABI_NR_NLOPS	8
extern const struct nxq_abi_nlop nxq_abi_nlops[NXQ_ABI_NR_NLOPS];

const struct nxq_abi_nlop *nxq_abi_nlop(u8 cmd);
u32 nxq_abi_event_type(enum nxq_event_type type);

/**
 * struct nxq_abi_fail - why a request's arguments were refused
 * @attr: the attribute at fault, or NULL for the request as a whole
 * @msg: the extended-ack message
 */
struct nxq_abi_fail {
	const struct nlattr *attr;
	const char *msg;
};

int nxq_abi_budget_req(struct nlattr **a, struct nxq_budget_req *r,
		       struct nxq_abi_fail *why);
struct nxq_device *nxq_abi_device_add(struct nxq_ledger *l, struct nlattr **a,
				      struct nxq_abi_fail *why);
int nxq_abi_device_del_err(struct nlattr **a, int err,
			   struct nxq_abi_fail *why);

/*
 * What device-set changes: the values before, by enum nxq_device_field,
 * for a shell to put back.
 */
struct nxq_abi_device_vals {
	u64 v[NXQ_NR_DEVICE_FIELDS];
};

int nxq_abi_device_set(struct nxq_ledger *l, struct nlattr **a,
		       struct nxq_abi_device_vals *was,
		       struct nxq_abi_fail *why);
void nxq_abi_device_reset(struct nxq_ledger *l, const char *key,
			  const struct nxq_abi_device_vals *v);
int nxq_abi_budget_path(struct nlattr **a, struct nxq_abi_fail *why);
int nxq_abi_budget_err(struct nlattr **a, int err, struct nxq_abi_fail *why);

/* What an attribute of a message the family sends holds. */
enum nxq_abi_kind {
	NXQ_ABI_U8,
	NXQ_ABI_U32,
	NXQ_ABI_U64,
	NXQ_ABI_STR,
};

/**
 * struct nxq_abi_attr - one attribute of a message
 * @type: NXQUOTA_A_*
 * @kind: enum nxq_abi_kind
 * @s: the string, for NXQ_ABI_STR
 * @v: the value, for the integers
 */
struct nxq_abi_attr {
	u16 type;
	u8 kind;
	const char *s;
	u64 v;
};

#define NXQ_ABI_MSG_ATTRS	32

/**
 * struct nxq_abi_msg - a message's attributes, in the order to send them
 * @pad: the attribute set's pad attribute (for the 64-bit ones)
 * @n: how many there are
 * @a: the attributes
 */
struct nxq_abi_msg {
	u16 pad;
	unsigned int n;
	struct nxq_abi_attr a[NXQ_ABI_MSG_ATTRS];
};

/**
 * struct nxq_abi_refusals - what an authority counts outside the ledger
 * @conns: connections refused by a bound (nxquotad's -N, -K, -U, -P)
 * @creds: requests refused because their sender was not the process of
 *	the connection they came on
 * @restored: bytes given back to their holders after a restart, on the
 *	device
 * @restore_refused: bytes held before a restart that the device did not
 *	take back
 *
 * The module never restarts under its holders and has nothing of the
 * kind to refuse (a file is its process's to pass): it reports zeros.
 */
struct nxq_abi_refusals {
	u64 conns;
	u64 creds;
	u64 restored;
	u64 restore_refused;
};

void nxq_abi_device_msg(struct nxq_device *dev, const char *devt,
			const struct nxq_abi_refusals *ref,
			struct nxq_abi_msg *m);
void nxq_abi_budget_msg(struct nxq_node *node, const char *path,
			struct nxq_abi_msg *m);
void nxq_abi_holder_msg(struct nxq_holder *h, u32 pid, struct nxq_abi_msg *m);
u32 nxq_abi_event_msg(const struct nxq_event *ev, struct nxq_abi_msg *m);

#endif /* _NXQ_ABI_H */

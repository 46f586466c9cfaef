/* SPDX-License-Identifier: GPL-2.0 */
/*
 * <net/netlink.h> for userspace: the attribute policies the module's
 * generic netlink family is declared with (kmod/abi.c, generated from the
 * spec), the accessors, and the kernel's strict validation of a request
 * against a policy (lib/nlattr.c's __nla_validate_parse() for the policy
 * types the family uses), rendered in compat/nlattr.c.  The layout of
 * struct nla_policy is the kernel's, so that the generated initialisers
 * compile unchanged; the numbers of the types need not be.
 */
#ifndef _UK_NET_NETLINK_H
#define _UK_NET_NETLINK_H

#include <uk/uk.h>
#include <linux/netlink.h>	/* the uapi: nlmsghdr, nlattr, NLA_* masks */

enum {
	NLA_UNSPEC,
	NLA_U8,
	NLA_U16,
	NLA_U32,
	NLA_U64,
	NLA_STRING,
	NLA_FLAG,
	NLA_MSECS,
	NLA_NESTED,
	NLA_NESTED_ARRAY,
	NLA_NUL_STRING,
	NLA_BINARY,
	NLA_S8,
	NLA_S16,
	NLA_S32,
	NLA_S64,
	NLA_BITFIELD32,
	NLA_REJECT,
	NLA_BE16,
	NLA_BE32,
	NLA_SINT,
	NLA_UINT,
	__NLA_TYPE_MAX,
};
#define NLA_TYPE_MAX		(__NLA_TYPE_MAX - 1)

enum nla_policy_validation {
	NLA_VALIDATE_NONE,
	NLA_VALIDATE_RANGE,
	NLA_VALIDATE_RANGE_WARN_TOO_LONG,
	NLA_VALIDATE_MIN,
	NLA_VALIDATE_MAX,
	NLA_VALIDATE_MASK,
	NLA_VALIDATE_RANGE_PTR,
	NLA_VALIDATE_FUNCTION,
};

/* NLA_POLICY_FULL_RANGE's bounds, for those an s16 cannot hold. */
struct netlink_range_validation {
	u64 min, max;
};

struct nla_policy {
	u8 type;
	u8 validation_type;
	u16 len;
	union {
		u16 strict_start_type;
		const char *reject_message;
		const struct netlink_range_validation *range;
		struct {
			s16 min, max;
		};
	};
};

#define NLA_POLICY_MIN(tp, _min)	\
	{ .type = (tp), .validation_type = NLA_VALIDATE_MIN, .min = (_min) }
#define NLA_POLICY_MAX(tp, _max)	\
	{ .type = (tp), .validation_type = NLA_VALIDATE_MAX, .max = (_max) }
#define NLA_POLICY_RANGE(tp, _min, _max)				\
	{ .type = (tp), .validation_type = NLA_VALIDATE_RANGE,		\
	  .min = (_min), .max = (_max) }
#define NLA_POLICY_FULL_RANGE(tp, _range)				\
	{ .type = (tp), .validation_type = NLA_VALIDATE_RANGE_PTR,	\
	  .range = (_range) }

/* What a refused request tells its sender (the extended ack). */
struct netlink_ext_ack {
	const char *_msg;
	const struct nlattr *bad_attr;
	const struct nla_policy *policy;
	u32 miss_type;
};

#define NL_SET_ERR_MSG(extack, msg) do {				\
	struct netlink_ext_ack *__e = (extack);				\
	if (__e)							\
		__e->_msg = (msg);					\
} while (0)
#define NL_SET_BAD_ATTR(extack, attr) do {				\
	struct netlink_ext_ack *__e = (extack);				\
	if (__e)							\
		__e->bad_attr = (attr);					\
} while (0)
#define NL_SET_ERR_MSG_ATTR(extack, attr, msg) do {			\
	NL_SET_ERR_MSG(extack, msg);					\
	NL_SET_BAD_ATTR(extack, attr);					\
} while (0)
#define NL_SET_ERR_MSG_ATTR_POL(extack, attr, pol, msg) do {		\
	NL_SET_ERR_MSG_ATTR(extack, attr, msg);				\
	if (extack)							\
		(extack)->policy = (pol);				\
} while (0)

/* ---- attributes ---- */

static inline int nla_attr_size(int payload)
{
	return NLA_HDRLEN + payload;
}

static inline int nla_total_size(int payload)
{
	return NLA_ALIGN(nla_attr_size(payload));
}

static inline int nla_type(const struct nlattr *nla)
{
	return nla->nla_type & NLA_TYPE_MASK;
}

static inline void *nla_data(const struct nlattr *nla)
{
	return (char *)nla + NLA_HDRLEN;
}

static inline int nla_len(const struct nlattr *nla)
{
	return nla->nla_len - NLA_HDRLEN;
}

static inline int nla_ok(const struct nlattr *nla, int remaining)
{
	return remaining >= (int)sizeof(*nla) &&
	       nla->nla_len >= sizeof(*nla) &&
	       nla->nla_len <= remaining;
}

static inline struct nlattr *nla_next(const struct nlattr *nla, int *remaining)
{
	unsigned int totlen = NLA_ALIGN(nla->nla_len);

	*remaining -= totlen;
	return (struct nlattr *)((char *)nla + totlen);
}

#define nla_for_each_attr(pos, head, len, rem)				\
	for (pos = head, rem = len; nla_ok(pos, rem);			\
	     pos = nla_next(pos, &(rem)))

/* Fixed-size reads: the policy checked the length. */
static inline u8 nla_get_u8(const struct nlattr *nla)
{
	return *(u8 *)nla_data(nla);
}

static inline u16 nla_get_u16(const struct nlattr *nla)
{
	u16 v;

	memcpy(&v, nla_data(nla), sizeof(v));
	return v;
}

static inline u32 nla_get_u32(const struct nlattr *nla)
{
	u32 v;

	memcpy(&v, nla_data(nla), sizeof(v));
	return v;
}

static inline u64 nla_get_u64(const struct nlattr *nla)
{
	u64 v;

	memcpy(&v, nla_data(nla), sizeof(v));
	return v;
}

static inline bool nla_get_flag(const struct nlattr *nla)
{
	return !!nla;
}

/* ---- messages ---- */

static inline void *nlmsg_data(const struct nlmsghdr *nlh)
{
	return (unsigned char *)nlh + NLMSG_HDRLEN;
}

static inline struct nlattr *nlmsg_attrdata(const struct nlmsghdr *nlh,
					    int hdrlen)
{
	return (struct nlattr *)((char *)nlmsg_data(nlh) + NLMSG_ALIGN(hdrlen));
}

static inline int nlmsg_attrlen(const struct nlmsghdr *nlh, int hdrlen)
{
	return (int)nlh->nlmsg_len - NLMSG_HDRLEN - NLMSG_ALIGN(hdrlen);
}

/*
 * The kernel's strict parse (NL_VALIDATE_STRICT), as generic netlink
 * applies it to a command at or after resv_start_op: unknown types,
 * types the policy does not name, wrong lengths, NLA_F_NESTED on a
 * scalar and bytes left over are refused, with the kernel's messages.
 * @tb has @maxtype + 1 entries.  Return: 0 or -EINVAL, -ERANGE.
 */
int uk_nla_parse(struct nlattr **tb, int maxtype, const struct nlattr *head,
		 int len, const struct nla_policy *policy,
		 struct netlink_ext_ack *extack);
/* (named apart from libnl's nla_parse(), which the tests link) */
#define nla_parse	uk_nla_parse

static inline int nlmsg_parse(const struct nlmsghdr *nlh, int hdrlen,
			      struct nlattr **tb, int maxtype,
			      const struct nla_policy *policy,
			      struct netlink_ext_ack *extack)
{
	if (nlh->nlmsg_len < NLMSG_HDRLEN + NLMSG_ALIGN(hdrlen)) {
		NL_SET_ERR_MSG(extack, "Invalid header length");
		return -EINVAL;
	}
	return nla_parse(tb, maxtype, nlmsg_attrdata(nlh, hdrlen),
			 nlmsg_attrlen(nlh, hdrlen), policy, extack);
}

#endif /* _UK_NET_NETLINK_H */

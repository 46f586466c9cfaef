// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's validation of netlink attributes against a policy
 * (lib/nlattr.c, strict mode), rendered for the policy types and
 * validations the nxquota family's spec can produce: fixed-size
 * integers, flags, NUL-terminated strings with a length, and
 * NLA_POLICY_MIN/MAX/RANGE on the unsigned integers.  Errnos and
 * extended-ack messages are the kernel's; nested attributes are refused
 * (the family has none).  Written for this project from the kernel's
 * documented behaviour; see <net/netlink.h>.
 */
#include <net/netlink.h>

static const u8 nla_fixed_len[NLA_TYPE_MAX + 1] = {
	[NLA_U8] = sizeof(u8),
	[NLA_U16] = sizeof(u16),
	[NLA_U32] = sizeof(u32),
	[NLA_U64] = sizeof(u64),
	[NLA_S8] = sizeof(s8),
	[NLA_S16] = sizeof(s16),
	[NLA_S32] = sizeof(s32),
	[NLA_S64] = sizeof(s64),
};

/* NLA_VALIDATE_MIN, _MAX, _RANGE, _RANGE_PTR on an unsigned integer. */
static int nla_range(const struct nla_policy *pt, const struct nlattr *nla,
		     struct netlink_ext_ack *extack)
{
	u64 v, min = 0, max;

	switch (pt->type) {
	case NLA_U8:
		v = nla_get_u8(nla);
		max = U8_MAX;
		break;
	case NLA_U16:
		v = nla_get_u16(nla);
		max = U16_MAX;
		break;
	case NLA_U32:
		v = nla_get_u32(nla);
		max = U32_MAX;
		break;
	case NLA_U64:
		v = nla_get_u64(nla);
		max = U64_MAX;
		break;
	default:
		WARN(1, "nla_range: policy type %u not rendered", pt->type);
		return -EINVAL;
	}
	if (pt->validation_type == NLA_VALIDATE_MIN ||
	    pt->validation_type == NLA_VALIDATE_RANGE)
		min = pt->min;
	if (pt->validation_type == NLA_VALIDATE_MAX ||
	    pt->validation_type == NLA_VALIDATE_RANGE)
		max = pt->max;
	if (pt->validation_type == NLA_VALIDATE_RANGE_PTR) {
		min = pt->range->min;
		max = pt->range->max;
	}
	if (v < min || v > max) {
		NL_SET_ERR_MSG_ATTR_POL(extack, nla, pt, "integer out of range");
		return -ERANGE;
	}
	return 0;
}

static int nla_validate_one(const struct nlattr *nla,
			    const struct nla_policy *pt,
			    struct netlink_ext_ack *extack)
{
	int attrlen = nla_len(nla), minlen, err = -ERANGE;
	const char *s = nla_data(nla);

	if (nla_fixed_len[pt->type] && attrlen != nla_fixed_len[pt->type]) {
		NL_SET_ERR_MSG_ATTR_POL(extack, nla, pt,
					"invalid attribute length");
		return -EINVAL;
	}
	if (pt->type != NLA_NESTED && pt->type != NLA_NESTED_ARRAY &&
	    pt->type != NLA_UNSPEC && (nla->nla_type & NLA_F_NESTED)) {
		NL_SET_ERR_MSG_ATTR_POL(extack, nla, pt,
					"NLA_F_NESTED not expected");
		return -EINVAL;
	}
	switch (pt->type) {
	case NLA_UNSPEC:
		NL_SET_ERR_MSG_ATTR(extack, nla, "Unsupported attribute");
		return -EINVAL;
	case NLA_REJECT:
		err = -EINVAL;
		goto out_err;
	case NLA_FLAG:
		if (attrlen > 0)
			goto out_err;
		break;
	case NLA_NUL_STRING:
		minlen = pt->len ? min_t(int, attrlen, pt->len + 1) : attrlen;
		if (!minlen || !memchr(s, '\0', minlen)) {
			err = -EINVAL;
			goto out_err;
		}
		fallthrough;
	case NLA_STRING:
		if (attrlen < 1)
			goto out_err;
		if (pt->len) {
			if (s[attrlen - 1] == '\0')
				attrlen--;
			if (attrlen > pt->len)
				goto out_err;
		}
		break;
	case NLA_U8:
	case NLA_U16:
	case NLA_U32:
	case NLA_U64:
		break;
	default:
		/* not in the family's spec: refused, loudly */
		WARN(1, "nla_parse: policy type %u not rendered", pt->type);
		err = -EINVAL;
		goto out_err;
	}
	switch (pt->validation_type) {
	case NLA_VALIDATE_NONE:
		return 0;
	case NLA_VALIDATE_MIN:
	case NLA_VALIDATE_MAX:
	case NLA_VALIDATE_RANGE:
	case NLA_VALIDATE_RANGE_PTR:
		return nla_range(pt, nla, extack);
	default:
		WARN(1, "nla_parse: validation %u not rendered",
		     pt->validation_type);
		return -EINVAL;
	}
out_err:
	NL_SET_ERR_MSG_ATTR_POL(extack, nla, pt,
				"Attribute failed policy validation");
	return err;
}

/* genl's policy for an operation that declares none: no attribute. */
static const struct nla_policy nla_reject_all[] = {
	{ .type = NLA_REJECT },
	{ .type = NLA_REJECT },
};

int nla_parse(struct nlattr **tb, int maxtype, const struct nlattr *head,
	      int len, const struct nla_policy *policy,
	      struct netlink_ext_ack *extack)
{
	const struct nlattr *nla;
	int rem, err;

	if (!policy) {
		policy = nla_reject_all;
		maxtype = 1;
	}
	memset(tb, 0, sizeof(*tb) * (maxtype + 1));
	nla_for_each_attr(nla, head, len, rem) {
		int type = nla_type(nla);

		if (type == 0 || type > maxtype) {
			NL_SET_ERR_MSG_ATTR(extack, nla,
					    "Unknown attribute type");
			return -EINVAL;
		}
		err = nla_validate_one(nla, &policy[type], extack);
		if (err)
			return err;
		tb[type] = (struct nlattr *)nla;
	}
	if (rem > 0) {
		NL_SET_ERR_MSG(extack, "bytes leftover after parsing attributes");
		return -EINVAL;
	}
	return 0;
}

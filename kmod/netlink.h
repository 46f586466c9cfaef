/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquota generic netlink family "nxquota" (netlink.c): dumps, budget and
 * device administration, and the events multicast group.  Built only with
 * CONFIG_NET; without it these are no-ops, so the module (and the KUnit
 * build on UML) still links.
 */
#ifndef _NXQ_NETLINK_H
#define _NXQ_NETLINK_H

struct nxq_event;

#if IS_ENABLED(CONFIG_NET)
int nxq_nl_init(void);
void nxq_nl_exit(void);
void nxq_nl_event(const struct nxq_event *ev);
void nxq_nl_changed(void);
bool nxq_nl_listening(void);
#else
static inline int nxq_nl_init(void)
{
	return 0;
}

static inline void nxq_nl_exit(void)
{
}

static inline void nxq_nl_event(const struct nxq_event *ev)
{
}

static inline void nxq_nl_changed(void)
{
}

static inline bool nxq_nl_listening(void)
{
	return false;
}
#endif

#endif /* _NXQ_NETLINK_H */

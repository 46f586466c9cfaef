/* SPDX-License-Identifier: GPL-2.0 */
/*
 * nxquotactl cdi: the CDI spec (Container Device Interface) that gives a
 * container what it needs to be charged (cdi.c).
 */
#ifndef NXQ_TOOLS_CDI_H
#define NXQ_TOOLS_CDI_H

#include "ctl.h"

/* "cdi generate [OPTIONS]": EX_* */
int cmd_cdi(struct ctl *n, int argc, char **argv);

#endif /* NXQ_TOOLS_CDI_H */

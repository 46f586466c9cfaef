/* SPDX-License-Identifier: GPL-2.0 */
/* <linux/completion.h> for userspace: see uk/uk.h */
#ifndef _UK_LINUX_COMPLETION_H
#define _UK_LINUX_COMPLETION_H
#include <uk/uk.h>
#endif

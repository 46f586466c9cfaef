// SPDX-License-Identifier: GPL-2.0
/*
 * nxq_dmem_fake: a test-only "GPU driver" that charges the dmem cgroup
 * controller as amdgpu, xe and nouveau do, so that the VM can show what
 * happens when a driver and nxquota account the same device
 * (tests/vm/scenarios/dmem_coexist.c, Documentation/dmem.rst).
 *
 * It registers one region, "nxq-fake/vram0", of @size bytes.  Each open
 * file of /dev/nxq-dmem-fake is one "buffer owner": a write of a decimal
 * byte count charges that many bytes to the writer's dmem cgroup
 * (dmem_cgroup_try_charge(), as a driver does when it places a buffer),
 * and fails with the charge's error (-EAGAIN past a dmem.max on the path)
 * without charging anything; close uncharges every charge of the file.
 * It evicts nothing and registers no reclaim callback.
 *
 * Lifetimes: the region lives from load to unload; a charge (struct
 * fake_buf: the pool dmem returned, the size) lives from its write to its
 * file's release.  fake_file.lock protects the file's list.
 */
#include <linux/cgroup_dmem.h>
#include <linux/fs.h>
#include <linux/miscdevice.h>
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/slab.h>
#include <linux/uaccess.h>
#include <linux/version.h>

static ulong size = 64 << 20;
module_param(size, ulong, 0444);
MODULE_PARM_DESC(size, "bytes of the region");

static struct dmem_cgroup_region *region;

struct fake_buf {
	struct list_head node;
	struct dmem_cgroup_pool_state *pool;
	u64 size;
};

struct fake_file {
	struct mutex lock;
	struct list_head bufs;	/* protected by lock */
};

static int fake_open(struct inode *inode, struct file *file)
{
	struct fake_file *ff = kzalloc(sizeof(*ff), GFP_KERNEL);

	if (!ff)
		return -ENOMEM;
	mutex_init(&ff->lock);
	INIT_LIST_HEAD(&ff->bufs);
	file->private_data = ff;
	return 0;
}

static ssize_t fake_write(struct file *file, const char __user *ubuf,
			  size_t len, loff_t *ppos)
{
	struct fake_file *ff = file->private_data;
	struct dmem_cgroup_pool_state *pool, *limit = NULL;
	struct fake_buf *b;
	u64 bytes;
	int ret;

	ret = kstrtou64_from_user(ubuf, len, 0, &bytes);
	if (ret)
		return ret;
	if (!bytes)
		return -EINVAL;
	b = kzalloc(sizeof(*b), GFP_KERNEL);
	if (!b)
		return -ENOMEM;
	ret = dmem_cgroup_try_charge(region, bytes, &pool, &limit);
	if (limit)
		dmem_cgroup_pool_state_put(limit);
	if (ret) {
		kfree(b);
		return ret;
	}
	b->pool = pool;
	b->size = bytes;
	mutex_lock(&ff->lock);
	list_add(&b->node, &ff->bufs);
	mutex_unlock(&ff->lock);
	return len;
}

static int fake_release(struct inode *inode, struct file *file)
{
	struct fake_file *ff = file->private_data;
	struct fake_buf *b, *n;

	list_for_each_entry_safe(b, n, &ff->bufs, node) {
		dmem_cgroup_uncharge(b->pool, b->size);
		kfree(b);
	}
	kfree(ff);
	return 0;
}

static const struct file_operations fake_fops = {
	.owner = THIS_MODULE,
	.open = fake_open,
	.write = fake_write,
	.release = fake_release,
};

static struct miscdevice fake_misc = {
	.minor = MISC_DYNAMIC_MINOR,
	.name = "nxq-dmem-fake",
	.fops = &fake_fops,
	.mode = 0600,
};

static int __init fake_init(void)
{
	int ret;

	/* 7.3 gave registration a struct (size, reclaim callback). */
#if KERNEL_VERSION(7, 3, 0) <= LINUX_VERSION_CODE
	region = dmem_cgroup_register_region(&(struct dmem_cgroup_init){ .size = size },
					     "nxq-fake/vram0");
#else
	region = dmem_cgroup_register_region(size, "nxq-fake/vram0");
#endif
	if (IS_ERR_OR_NULL(region))
		return region ? PTR_ERR(region) : -ENODEV;
	ret = misc_register(&fake_misc);
	if (ret)
		dmem_cgroup_unregister_region(region);
	return ret;
}

static void __exit fake_exit(void)
{
	misc_deregister(&fake_misc);
	dmem_cgroup_unregister_region(region);
}

module_init(fake_init);
module_exit(fake_exit);
MODULE_DESCRIPTION("nxquota tests: a fake driver charging the dmem cgroup controller");
MODULE_LICENSE("GPL");

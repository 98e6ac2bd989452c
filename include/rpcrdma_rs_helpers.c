// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rpcrdma_rs.ko.  Kept small: each one exists because the
 * thing it wraps is a macro, a static inline or a const ops table.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <rdma/ib_verbs.h>

#include "rpcrdma_rs_helpers.h"

static int rpcrdma_rs_show_seq(struct seq_file *m, void *unused)
{
	const struct rpcrdma_rs_show *show = m->private;

	return show->show(m, show->data);
}

static int rpcrdma_rs_show_open(struct inode *inode, struct file *file)
{
	return single_open(file, rpcrdma_rs_show_seq, inode->i_private);
}

static const struct file_operations rpcrdma_rs_show_fops = {
	.owner = THIS_MODULE,
	.open = rpcrdma_rs_show_open,
	.read = seq_read,
	.llseek = seq_lseek,
	.release = single_release,
};

/*
 * debugfs_create_file() files are removal-protected: debugfs_remove() waits
 * for readers in ->show, so @show may be freed once the file is removed.
 */
struct dentry *rpcrdma_rs_debugfs_create_show(const char *name,
					      struct dentry *parent,
					      struct rpcrdma_rs_show *show)
{
	return debugfs_create_file(name, 0444, parent, show,
				   &rpcrdma_rs_show_fops);
}

const char *rpcrdma_rs_ib_device_name(const struct ib_device *device)
{
	return dev_name(&device->dev);
}

u32 rpcrdma_rs_ib_device_index(const struct ib_device *device)
{
	return device->index;
}

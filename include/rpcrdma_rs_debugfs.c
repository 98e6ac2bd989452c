// SPDX-License-Identifier: GPL-2.0
/*
 * The one file_operations table behind rpcrdma_rs's debugfs files: each
 * file is rendered, and written, by a Rust callback (struct
 * rpcrdma_rs_show), through seq_file.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <linux/uaccess.h>

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

static ssize_t rpcrdma_rs_show_write(struct file *file, const char __user *ubuf,
				     size_t len, loff_t *ppos)
{
	struct seq_file *m = file->private_data;
	const struct rpcrdma_rs_show *show = m->private;
	char *buf;
	int ret;

	if (!show->write)
		return -EINVAL;
	if (len >= PAGE_SIZE)
		return -E2BIG;
	buf = memdup_user_nul(ubuf, len);
	if (IS_ERR(buf))
		return PTR_ERR(buf);
	ret = show->write(show->data, buf, len);
	kfree(buf);
	return ret < 0 ? ret : len;
}

static const struct file_operations rpcrdma_rs_show_fops = {
	.owner = THIS_MODULE,
	.open = rpcrdma_rs_show_open,
	.read = seq_read,
	.write = rpcrdma_rs_show_write,
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
	return debugfs_create_file(name, show->write ? 0644 : 0444, parent,
				   show, &rpcrdma_rs_show_fops);
}

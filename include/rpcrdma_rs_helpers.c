// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rpcrdma_rs.ko.  Kept small: each one exists because the
 * thing it wraps is a macro, a static inline or a const ops table.
 */
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

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

const char *rpcrdma_rs_ib_device_name(const struct ib_device *device)
{
	return dev_name(&device->dev);
}

u32 rpcrdma_rs_ib_device_index(const struct ib_device *device)
{
	return device->index;
}

/* rdma_create_id() is a macro that names the calling module. */
struct rdma_cm_id *rpcrdma_rs_create_id(rpcrdma_rs_cm_handler handler,
					void *context)
{
	return rdma_create_id(&init_net, handler, context, RDMA_PS_TCP,
			      IB_QPT_RC);
}

/* An IPv4 or IPv6 address (with an optional %scope) and a port, parsed. */
int rpcrdma_rs_parse_addr(const char *addr, const char *port,
			  struct __kernel_sockaddr_storage *ss)
{
	return inet_pton_with_scope(&init_net, AF_UNSPEC, addr, port, ss);
}

/* ib_alloc_pd() is a macro that names the calling module. */
struct ib_pd *rpcrdma_rs_alloc_pd(struct ib_device *device)
{
	return ib_alloc_pd(device, 0);
}

void rpcrdma_rs_dealloc_pd(struct ib_pd *pd)
{
	ib_dealloc_pd(pd);
}

/* ib_alloc_cq_any() is a static inline that names the calling module. */
struct ib_cq *rpcrdma_rs_alloc_cq(struct ib_device *device, int nr_cqe)
{
	return ib_alloc_cq_any(device, NULL, nr_cqe, IB_POLL_WORKQUEUE);
}

u32 rpcrdma_rs_ib_device_max_qp_rd_atom(const struct ib_device *device)
{
	return device->attrs.max_qp_rd_atom;
}

u32 rpcrdma_rs_pd_local_dma_lkey(const struct ib_pd *pd)
{
	return pd->local_dma_lkey;
}

static enum dma_data_direction rpcrdma_rs_dir(bool to_device)
{
	return to_device ? DMA_TO_DEVICE : DMA_FROM_DEVICE;
}

/* ib_dma_map_single() and ib_dma_mapping_error() are static inlines. */
int rpcrdma_rs_dma_map(struct ib_device *device, void *buf, size_t len,
		       bool to_device, u64 *addr)
{
	*addr = ib_dma_map_single(device, buf, len, rpcrdma_rs_dir(to_device));
	return ib_dma_mapping_error(device, *addr) ? -EIO : 0;
}

void rpcrdma_rs_dma_unmap(struct ib_device *device, u64 addr, size_t len,
			  bool to_device)
{
	ib_dma_unmap_single(device, addr, len, rpcrdma_rs_dir(to_device));
}

void rpcrdma_rs_dma_sync_for_cpu(struct ib_device *device, u64 addr,
				 size_t len, bool to_device)
{
	ib_dma_sync_single_for_cpu(device, addr, len, rpcrdma_rs_dir(to_device));
}

void rpcrdma_rs_dma_sync_for_device(struct ib_device *device, u64 addr,
				    size_t len, bool to_device)
{
	ib_dma_sync_single_for_device(device, addr, len,
				      rpcrdma_rs_dir(to_device));
}

/* ib_post_recv() is a static inline; one buffer, one SGE. */
int rpcrdma_rs_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr,
			 u32 len, u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_recv_wr wr = { .wr_cqe = cqe, .sg_list = &sge, .num_sge = 1 };

	return ib_post_recv(qp, &wr, NULL);
}

/* ib_post_send() is a static inline; one signaled Send of one buffer. */
int rpcrdma_rs_post_send(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr,
			 u32 len, u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_send_wr wr = {
		.wr_cqe = cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = IB_SEND_SIGNALED,
	};

	return ib_post_send(qp, &wr, NULL);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * C helpers for rpcrdma_rs.ko.  Kept small: each one exists because the
 * thing it wraps is a macro, a static inline or a const ops table.
 */
#include <linux/completion.h>
#include <linux/debugfs.h>
#include <linux/fs.h>
#include <linux/inet.h>
#include <linux/module.h>
#include <linux/rcupdate.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/seq_file.h>
#include <linux/string.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rpcrdma_rs_helpers.h"
#include "rpcrdma_rs_params.h"

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

/*
 * A registration reference, as ib_device_try_get() takes (a static
 * inline): unregistration waits until every one is put.  The caller holds
 * the device registered already (a client callback, or an rdma_cm_id bound
 * to it), so the count is not zero.
 */
void rpcrdma_rs_ib_device_get(struct ib_device *device)
{
	refcount_inc(&device->refcount);
}

void rpcrdma_rs_ib_device_put(struct ib_device *device)
{
	ib_device_put(device);
}

/*
 * rdma_create_id() is a macro that names the calling module.  A NULL @net
 * is the initial namespace.
 */
struct rdma_cm_id *rpcrdma_rs_create_id(struct net *net,
					rpcrdma_rs_cm_handler handler,
					void *context)
{
	return rdma_create_id(net ? net : &init_net, handler, context,
			      RDMA_PS_TCP, IB_QPT_RC);
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

bool rpcrdma_rs_ib_device_is_siw(const struct ib_device *device)
{
	return device->ops.driver_id == RDMA_DRIVER_SIW;
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
/*
 * Posts one Receive on *@qp while *@open, under the RCU read lock: the
 * QP's shutdown clears *@open and waits for a grace period before it
 * destroys the QP, so a post either finds it closed or is over by then,
 * without a lock of its own.  *@posted says the QP holds the buffer: set
 * before the post, and cleared again if it fails.
 */
int rpcrdma_rs_post_recv(struct ib_qp *const *qp, const bool *open,
			 bool *posted, struct ib_cqe *cqe, u64 addr, u32 len,
			 u32 lkey)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_recv_wr wr = { .wr_cqe = cqe, .sg_list = &sge, .num_sge = 1 };
	int rc = -ENOTCONN;

	rcu_read_lock();
	/* Acquire: *@qp was set before *@open. */
	if (smp_load_acquire(open)) {
		WRITE_ONCE(*posted, true);
		rc = ib_post_recv(READ_ONCE(*qp), &wr, NULL);
		if (rc)
			WRITE_ONCE(*posted, false);
	}
	rcu_read_unlock();
	return rc;
}

/* After this, no rpcrdma_rs_post_recv() that found its QP open is running. */
void rpcrdma_rs_synchronize_rcu(void)
{
	synchronize_rcu();
}

/* FRWR: ib_alloc_mr() and ib_dereg_mr() are static inlines or macros. */

void rpcrdma_rs_frwr_attrs(const struct ib_device *device,
			   struct rpcrdma_rs_frwr_attrs *out)
{
	const struct ib_device_attr *attrs = &device->attrs;
	u32 depth;

	out->supported = (attrs->device_cap_flags &
			  IB_DEVICE_MEM_MGT_EXTENSIONS) &&
			 attrs->max_fast_reg_page_list_len;
	/*
	 * As the C transport: some devices advertise a page list longer than
	 * they can use; a large max_sge_rd is the better limit.
	 */
	depth = attrs->max_sge_rd > 16 ? attrs->max_sge_rd :
					 attrs->max_fast_reg_page_list_len;
	out->depth = depth;
	out->max_qp_wr = attrs->max_qp_wr;
}

struct ib_mr *rpcrdma_rs_alloc_mr(struct ib_pd *pd, u32 depth)
{
	return ib_alloc_mr(pd, IB_MR_TYPE_MEM_REG, depth);
}

int rpcrdma_rs_dereg_mr(struct ib_mr *mr)
{
	return ib_dereg_mr(mr);
}

struct scatterlist *rpcrdma_rs_alloc_sg(u32 depth)
{
	struct scatterlist *sg = kcalloc(depth, sizeof(*sg), GFP_KERNEL);

	if (sg)
		sg_init_table(sg, depth);
	return sg;
}

void rpcrdma_rs_free_sg(struct scatterlist *sg)
{
	kfree(sg);
}

/*
 * The page of a linear-mapped kernel address (kmalloc or page allocator
 * memory), or NULL for any other address (vmalloc, module data, ...),
 * whose virt_to_page() would name no page of it.
 */
struct page *rpcrdma_rs_virt_to_page(const void *addr)
{
	return virt_addr_valid(addr) ? virt_to_page(addr) : NULL;
}

/*
 * DMA-maps @n pieces into @sg and maps them into @mr, with a new key and
 * the XID in the upper half of the I/O virtual address (as the C client,
 * which makes the segments of one RPC recognisable on the wire).
 */
int rpcrdma_rs_mr_map(struct ib_device *device, struct ib_mr *mr,
		      struct scatterlist *sg,
		      const struct rpcrdma_rs_piece *pieces, u32 n,
		      bool writing, u32 xid, struct rpcrdma_rs_mr_seg *seg)
{
	enum dma_data_direction dir = writing ? DMA_FROM_DEVICE : DMA_TO_DEVICE;
	int nents, mapped;
	u32 i;
	u8 key;

	for (i = 0; i < n; i++)
		sg_set_page(&sg[i], pieces[i].page, pieces[i].len,
			    pieces[i].offset);
	nents = ib_dma_map_sg(device, sg, n, dir);
	if (!nents)
		return -EIO;
	mapped = ib_map_mr_sg(mr, sg, nents, NULL, PAGE_SIZE);
	if (mapped != nents) {
		ib_dma_unmap_sg(device, sg, n, dir);
		return -EIO;
	}
	mr->iova &= 0x00000000ffffffff;
	mr->iova |= ((u64)xid) << 32;
	key = (u8)(mr->rkey & 0xff);
	ib_update_fast_reg_key(mr, ++key);
	seg->handle = mr->rkey;
	seg->length = mr->length;
	seg->offset = mr->iova;
	return 0;
}

void rpcrdma_rs_mr_unmap(struct ib_device *device, struct scatterlist *sg,
			 u32 n, bool writing)
{
	ib_dma_unmap_sg(device, sg, n, writing ? DMA_FROM_DEVICE :
						 DMA_TO_DEVICE);
}

/*
 * Fills @wr, a region's own work request, as an unsignaled IB_WR_REG_MR of
 * @mr with its current key; @cqe sees it only if it fails or is flushed.
 */
void rpcrdma_rs_prep_reg_wr(struct ib_reg_wr *wr, struct ib_mr *mr,
			    bool writing, struct ib_cqe *cqe)
{
	*wr = (struct ib_reg_wr){
		.wr = {
			.opcode = IB_WR_REG_MR,
			.wr_cqe = cqe,
		},
		.mr = mr,
		.key = mr->rkey,
		.access = writing ?
			  IB_ACCESS_REMOTE_WRITE | IB_ACCESS_LOCAL_WRITE :
			  IB_ACCESS_REMOTE_READ,
	};
}

/*
 * One ib_post_send() of the @nregs prepared REG_MRs @regs, in order, and
 * then a Send of one buffer (@nregs may be 0), as the C transport's
 * frwr_send() chains them.  Unless @signaled, @cqe sees the Send only if
 * it fails or is flushed.  A device may take a prefix of a chain:
 * *@taken says how many work requests it may have taken, the REG_MRs
 * first (@nregs + 1 when it took them all, as whenever this returns 0).
 */
int rpcrdma_rs_post_chain(struct ib_qp *qp, struct ib_reg_wr *const *regs,
			  u32 nregs, struct ib_cqe *cqe, u64 addr, u32 len,
			  u32 lkey, bool signaled, u32 *taken)
{
	struct ib_sge sge = { .addr = addr, .length = len, .lkey = lkey };
	struct ib_send_wr send = {
		.wr_cqe = cqe,
		.sg_list = &sge,
		.num_sge = 1,
		.opcode = IB_WR_SEND,
		.send_flags = signaled ? IB_SEND_SIGNALED : 0,
	};
	const struct ib_send_wr *bad = NULL;
	u32 i;
	int rc;
#ifdef RPCRDMA_RS_TEST_HOOKS
	int k;
#endif

	for (i = 0; i < nregs; i++)
		regs[i]->wr.next = i + 1 < nregs ? &regs[i + 1]->wr : &send;
#ifdef RPCRDMA_RS_TEST_HOOKS
	/*
	 * The test hook, as a device that fails a post: it takes the first k
	 * work requests and names the next as failed, for k from 0 to @nregs,
	 * or (k = @nregs + 1) takes them all and names none.
	 */
	k = rpcrdma_rs_param_chain_cut(nregs);
	if (k >= 0) {
		const struct ib_send_wr *next =
			(u32)k < nregs ? &regs[k]->wr : &send;

		rc = 0;
		if ((u32)k > nregs) {
			rc = ib_post_send(qp, nregs ? &regs[0]->wr : &send,
					  &bad);
			if (!rc)
				rc = -EIO;
		} else if (k > 0) {
			regs[k - 1]->wr.next = NULL;
			rc = ib_post_send(qp, &regs[0]->wr, &bad);
			/* A failure naming nothing took no more than the prefix. */
			if (rc && !bad)
				bad = next;
		}
		if (!rc) {
			bad = next;
			rc = -EIO;
		}
		goto out;
	}
#endif
	rc = ib_post_send(qp, nregs ? &regs[0]->wr : &send, &bad);
#ifdef RPCRDMA_RS_TEST_HOOKS
out:
#endif
	/* The chain's end was on this stack: leave no pointer to it. */
	for (i = 0; i < nregs; i++)
		regs[i]->wr.next = NULL;
	if (!rc) {
		*taken = nregs + 1;
		return 0;
	}
	/*
	 * What came before @bad was taken.  A @bad that is none of the chain
	 * says nothing (siw returns an error after queueing the whole chain
	 * when it cannot start sending it, leaving @bad NULL): count the whole
	 * chain as taken.  Its completions, or the QP's end, then hand back
	 * what it holds; taking a request that was not taken for one that was
	 * only keeps memory mapped longer.
	 */
	if (bad == &send) {
		*taken = nregs;
		return rc;
	}
	for (i = 0; i < nregs && bad != &regs[i]->wr; i++)
		;
	*taken = i < nregs ? i : nregs + 1;
	return rc;
}

/* Fills a region's LOCAL_INV of @rkey, for rpcrdma_rs_post_local_invs. */
void rpcrdma_rs_prep_inv_wr(struct ib_send_wr *wr, u32 rkey,
			    struct ib_cqe *cqe, bool signaled)
{
	*wr = (struct ib_send_wr){
		.opcode = IB_WR_LOCAL_INV,
		.wr_cqe = cqe,
		.ex.invalidate_rkey = rkey,
		.send_flags = signaled ? IB_SEND_SIGNALED : 0,
	};
}

/*
 * Posts the LOCAL_INVs @wrs[0..@n] in one chain (C: frwr_unmap_async);
 * *@taken is how many of them, from the first, the QP may have taken.
 */
int rpcrdma_rs_post_local_invs(struct ib_qp *qp, struct ib_send_wr *const *wrs,
			       u32 n, u32 *taken)
{
	const struct ib_send_wr *bad = NULL;
	u32 i;
	int rc;

	*taken = 0;
	if (!n)
		return 0;
	for (i = 0; i < n; i++)
		wrs[i]->next = i + 1 < n ? wrs[i + 1] : NULL;
	rc = ib_post_send(qp, wrs[0], &bad);
	if (!rc) {
		*taken = n;
		return 0;
	}
	/* Those before the one named failed were taken; none named: unknown. */
	*taken = n;
	for (i = 0; bad && i < n; i++)
		if (wrs[i] == bad) {
			*taken = i;
			break;
		}
	return rc;
}

struct rpcrdma_rs_drain {
	struct ib_cqe cqe;
	struct completion done;
};

static void rpcrdma_rs_drain_done(struct ib_cq *cq, struct ib_wc *wc)
{
	struct rpcrdma_rs_drain *d =
		container_of(wc->wr_cqe, struct rpcrdma_rs_drain, cqe);

	complete(&d->done);
}

/*
 * ib_drain_qp(), but telling its caller when a drain could not be posted
 * (ib_drain_qp() only warns): then completions may still come, and the
 * caller must not free what they refer to before the QP and its CQs are
 * gone.  A queue whose device drains it its own way is drained so.
 */
int rpcrdma_rs_drain_qp(struct ib_qp *qp)
{
	struct ib_qp_attr attr = { .qp_state = IB_QPS_ERR };
	struct rpcrdma_rs_drain sd, rd;
	struct ib_rdma_wr swr = {
		.wr = {
			.wr_cqe = &sd.cqe,
			.opcode = IB_WR_RDMA_WRITE,
		},
	};
	struct ib_recv_wr rwr = { .wr_cqe = &rd.cqe };
	int rc;

	rc = ib_modify_qp(qp, &attr, IB_QP_STATE);
	if (rc)
		return rc;
	if (qp->device->ops.drain_sq) {
		ib_drain_sq(qp);
	} else {
		sd.cqe.done = rpcrdma_rs_drain_done;
		init_completion(&sd.done);
		rc = ib_post_send(qp, &swr.wr, NULL);
		if (rc)
			return rc;
		wait_for_completion(&sd.done);
	}
	if (qp->device->ops.drain_rq) {
		ib_drain_rq(qp);
	} else {
		rd.cqe.done = rpcrdma_rs_drain_done;
		init_completion(&rd.done);
		rc = ib_post_recv(qp, &rwr, NULL);
		if (rc)
			return rc;
		wait_for_completion(&rd.done);
	}
	return 0;
}

struct ib_pd *rpcrdma_rs_qp_pd(const struct ib_qp *qp)
{
	return qp->pd;
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The RDMA core's macros and static inlines, as functions Rust can call:
 * device attributes, connection identifiers and addresses, protection
 * domains, CQs, DMA mapping, and FRWR regions, their scatterlists and
 * the pages they map.  Each exists because what it wraps
 * cannot be reached through bindgen; none decides anything.  Posting
 * work requests and draining a QP are in rpcrdma_rs_qp.c, the debugfs
 * files in rpcrdma_rs_debugfs.c.
 */
#include <linux/inet.h>
#include <linux/scatterlist.h>
#include <linux/slab.h>
#include <linux/string.h>
#include <net/net_namespace.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>

#include "rpcrdma_rs_helpers.h"

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

struct ib_pd *rpcrdma_rs_qp_pd(const struct ib_qp *qp)
{
	return qp->pd;
}

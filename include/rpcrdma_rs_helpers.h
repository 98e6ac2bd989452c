/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers linked into rpcrdma_rs.ko: what Rust cannot reach through
 * bindgen (static inline functions, macros, file_operations tables).
 */
#ifndef RPCRDMA_RS_HELPERS_H
#define RPCRDMA_RS_HELPERS_H

#include <linux/types.h>

struct dentry;
struct ib_cq;
struct ib_device;
struct ib_cqe;
struct ib_pd;
struct ib_qp;
struct rdma_cm_event;
struct rdma_cm_id;
struct seq_file;
struct __kernel_sockaddr_storage;

/**
 * struct rpcrdma_rs_show - a debugfs file rendered by a callback
 * @show: fills @m; @data is the pointer given below
 * @write: if not NULL, the file is writable: called with what was written,
 *	NUL-terminated, in kernel memory; returns 0 or a negative errno
 * @data: owner's context, valid until the file is removed
 */
struct rpcrdma_rs_show {
	int (*show)(struct seq_file *m, void *data);
	int (*write)(void *data, const char *buf, size_t len);
	void *data;
};

struct dentry *rpcrdma_rs_debugfs_create_show(const char *name,
					      struct dentry *parent,
					      struct rpcrdma_rs_show *show);

typedef int (*rpcrdma_rs_cm_handler)(struct rdma_cm_id *id,
				     struct rdma_cm_event *event);
struct rdma_cm_id *rpcrdma_rs_create_id(rpcrdma_rs_cm_handler handler,
					void *context);
int rpcrdma_rs_parse_addr(const char *addr, const char *port,
			  struct __kernel_sockaddr_storage *ss);
struct ib_pd *rpcrdma_rs_alloc_pd(struct ib_device *device);
void rpcrdma_rs_dealloc_pd(struct ib_pd *pd);
struct ib_cq *rpcrdma_rs_alloc_cq(struct ib_device *device, int nr_cqe);
u32 rpcrdma_rs_ib_device_max_qp_rd_atom(const struct ib_device *device);
u32 rpcrdma_rs_pd_local_dma_lkey(const struct ib_pd *pd);

int rpcrdma_rs_dma_map(struct ib_device *device, void *buf, size_t len,
		       bool to_device, u64 *addr);
void rpcrdma_rs_dma_unmap(struct ib_device *device, u64 addr, size_t len,
			  bool to_device);
void rpcrdma_rs_dma_sync_for_cpu(struct ib_device *device, u64 addr,
				 size_t len, bool to_device);
void rpcrdma_rs_dma_sync_for_device(struct ib_device *device, u64 addr,
				    size_t len, bool to_device);
int rpcrdma_rs_post_recv(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr,
			 u32 len, u32 lkey);
int rpcrdma_rs_post_send(struct ib_qp *qp, struct ib_cqe *cqe, u64 addr,
			 u32 len, u32 lkey);

const char *rpcrdma_rs_ib_device_name(const struct ib_device *device);
u32 rpcrdma_rs_ib_device_index(const struct ib_device *device);

#endif /* RPCRDMA_RS_HELPERS_H */

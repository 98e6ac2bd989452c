/* SPDX-License-Identifier: GPL-2.0 */
/*
 * C helpers linked into rpcrdma_rs.ko: what Rust cannot reach through
 * bindgen (static inline functions, macros, file_operations tables,
 * rpc_xprt internals).  Defined by concern: the RDMA core's wrappers in
 * rpcrdma_rs_helpers.c, work requests and the drain in rpcrdma_rs_qp.c,
 * debugfs in rpcrdma_rs_debugfs.c, sunrpc's requests and xdr_bufs in
 * rpcrdma_rs_xdr.c, the transport class and rpc_xprt in
 * rpcrdma_rs_sunrpc.c, the backchannel in rpcrdma_rs_backchannel.c.
 */
#ifndef RPCRDMA_RS_HELPERS_H
#define RPCRDMA_RS_HELPERS_H

#include <linux/types.h>

/*
 * Limits shared by the C glue and the Rust transport (bindgen passes
 * these to Rust): each is defined here only.
 */
/* Backchannel requests the server may have outstanding (C: 32 >> 1). */
#define RPCRDMA_RS_BC_SLOTS		16
/* Memory regions per connection. */
#define RPCRDMA_RS_MRS			256
/* Most segments in one chunk (C: RPCRDMA_MAX_HDR_SEGS). */
#define RPCRDMA_RS_MAX_SEGS		16
/* Most pages of RPC payload (C: RPCRDMA_MAX_DATA_SEGS, less one). */
#define RPCRDMA_RS_MAX_DATA_PAGES	256

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
struct net;
struct rpc_rqst;
struct rpc_xprt;
struct sockaddr_storage;
struct xdr_buf;

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
struct rdma_cm_id *rpcrdma_rs_create_id(struct net *net,
					rpcrdma_rs_cm_handler handler,
					void *context);
int rpcrdma_rs_parse_addr(const char *addr, const char *port,
			  struct __kernel_sockaddr_storage *ss);
struct ib_pd *rpcrdma_rs_alloc_pd(struct ib_device *device);
void rpcrdma_rs_dealloc_pd(struct ib_pd *pd);
struct ib_cq *rpcrdma_rs_alloc_cq(struct ib_device *device, int nr_cqe);
u32 rpcrdma_rs_ib_device_max_qp_rd_atom(const struct ib_device *device);
bool rpcrdma_rs_ib_device_is_siw(const struct ib_device *device);
u32 rpcrdma_rs_pd_local_dma_lkey(const struct ib_pd *pd);

int rpcrdma_rs_dma_map(struct ib_device *device, void *buf, size_t len,
		       bool to_device, u64 *addr);
void rpcrdma_rs_dma_unmap(struct ib_device *device, u64 addr, size_t len,
			  bool to_device);
void rpcrdma_rs_dma_sync_for_cpu(struct ib_device *device, u64 addr,
				 size_t len, bool to_device);
void rpcrdma_rs_dma_sync_for_device(struct ib_device *device, u64 addr,
				    size_t len, bool to_device);
int rpcrdma_rs_post_recv(struct ib_qp *const *qp, const bool *open,
			 bool *posted, struct ib_cqe *cqe, u64 addr, u32 len,
			 u32 lkey);
void rpcrdma_rs_synchronize_rcu(void);

const char *rpcrdma_rs_ib_device_name(const struct ib_device *device);
u32 rpcrdma_rs_ib_device_index(const struct ib_device *device);
void rpcrdma_rs_ib_device_get(struct ib_device *device);
void rpcrdma_rs_ib_device_put(struct ib_device *device);

/**
 * struct rpcrdma_rs_stats - the transport's counters for print_stats, in
 * the C transport's struct rpcrdma_stats order
 */
struct rpcrdma_rs_stats {
	u64 read_chunk_count;
	u64 write_chunk_count;
	u64 reply_chunk_count;
	u64 total_rdma_request;
	u64 total_rdma_reply;
	u64 pullup_copy_count;
	u64 fixup_copy_count;
	u64 hardway_register_count;
	u64 failed_marshal_count;
	u64 bad_reply_count;
	u64 nomsg_call_count;
	u64 mrs_recycled;
	u64 mrs_orphaned;
	u64 mrs_allocated;
	u64 local_inv_needed;
	u64 empty_sendctx_q;
};

/* FRWR memory registration. */
struct ib_mr;
struct ib_reg_wr;
struct ib_send_wr;
struct page;
struct scatterlist;

/**
 * struct rpcrdma_rs_frwr_attrs - what a device offers for FRWR
 * @supported: memory management extensions and a page list
 * @depth: pages one MR may map
 * @max_qp_wr: work requests a queue may hold
 */
struct rpcrdma_rs_frwr_attrs {
	bool supported;
	u32 depth;
	u32 max_qp_wr;
};

/* A piece of memory to register: part of one page. */
struct rpcrdma_rs_piece {
	struct page *page;
	u32 offset;
	u32 len;
};

/* The RPC-over-RDMA segment a registered MR is advertised as. */
struct rpcrdma_rs_mr_seg {
	u32 handle;
	u32 length;
	u64 offset;
};

void rpcrdma_rs_frwr_attrs(const struct ib_device *device,
			   struct rpcrdma_rs_frwr_attrs *out);
struct ib_mr *rpcrdma_rs_alloc_mr(struct ib_pd *pd, u32 depth);
int rpcrdma_rs_dereg_mr(struct ib_mr *mr);
struct scatterlist *rpcrdma_rs_alloc_sg(u32 depth);
void rpcrdma_rs_free_sg(struct scatterlist *sg);
struct page *rpcrdma_rs_virt_to_page(const void *addr);
int rpcrdma_rs_mr_map(struct ib_device *device, struct ib_mr *mr,
		      struct scatterlist *sg,
		      const struct rpcrdma_rs_piece *pieces, u32 n,
		      bool writing, u32 xid, struct rpcrdma_rs_mr_seg *seg);
void rpcrdma_rs_mr_unmap(struct ib_device *device, struct scatterlist *sg,
			 u32 n, bool writing);
void rpcrdma_rs_prep_reg_wr(struct ib_reg_wr *wr, struct ib_mr *mr,
			    bool writing, struct ib_cqe *cqe);
int rpcrdma_rs_post_chain(struct ib_qp *qp, struct ib_reg_wr *const *regs,
			  u32 nregs, struct ib_cqe *cqe, u64 addr, u32 len,
			  u32 lkey, bool signaled, u32 *taken);
void rpcrdma_rs_prep_inv_wr(struct ib_send_wr *wr, u32 rkey,
			    struct ib_cqe *cqe, bool signaled);
int rpcrdma_rs_post_local_invs(struct ib_qp *qp, struct ib_send_wr *const *wrs,
			       u32 n, u32 *taken);
struct ib_pd *rpcrdma_rs_qp_pd(const struct ib_qp *qp);
int rpcrdma_rs_drain_qp(struct ib_qp *qp);

/* The transport class (rpcrdma_rs_sunrpc.c). */
int rpcrdma_rs_xprt_class_register(void *class_data);
void rpcrdma_rs_xprt_class_unregister(void);
void rpcrdma_rs_xprt_force_disconnect(struct rpc_xprt *xprt);
void rpcrdma_rs_xprt_set_cwnd(struct rpc_xprt *xprt, u32 credits);
void rpcrdma_rs_xprt_reset_cwnd(struct rpc_xprt *xprt);
void rpcrdma_rs_xprt_write_space(struct rpc_xprt *xprt);
void rpcrdma_rs_xprt_wait_for_buffer_space(struct rpc_xprt *xprt);
void rpcrdma_rs_xprt_reply_arrived(struct rpc_xprt *xprt);
void rpcrdma_rs_xprt_window(struct rpc_xprt *xprt, u32 *cong, u32 *cwnd);
size_t rpcrdma_rs_xprt_addr(const struct rpc_xprt *xprt,
			    struct __kernel_sockaddr_storage *out);
struct net *rpcrdma_rs_xprt_net(const struct rpc_xprt *xprt);
unsigned int rpcrdma_rs_xprt_max_reqs(const struct rpc_xprt *xprt);
void rpcrdma_rs_xprt_peer(const struct rpc_xprt *xprt, char *buf, size_t len);
u32 rpcrdma_rs_rqst_xid(const struct rpc_rqst *rqst);
void rpcrdma_rs_rqst_rcv_room(const struct rpc_rqst *rqst, u32 *buflen,
			      u32 *page_len);
struct rpc_rqst *rpcrdma_rs_lookup_pin(struct rpc_xprt *xprt, u32 xid);
/**
 * struct rpcrdma_rs_xdr_layout - one of a request's xdr_bufs
 * @buf: the send buffer's xdr_buf, for rpcrdma_rs_xdr_read(); NULL for
 *	the receive buffer
 * @ddp: the page data may be placed directly (XDRBUF_READ, XDRBUF_WRITE)
 * @ddp_allowed: the request's security flavor allows direct placement
 */
struct rpcrdma_rs_xdr_layout {
	const struct xdr_buf *buf;
	void *head;
	u32 head_len;
	struct page **pages;
	u32 page_base;
	u32 page_len;
	void *tail;
	u32 tail_len;
	u32 buflen;
	u32 len;
	bool ddp;
	bool ddp_allowed;
};

int rpcrdma_rs_rqst_layouts(struct rpc_rqst *rqst,
			    struct rpcrdma_rs_xdr_layout *call,
			    struct rpcrdma_rs_xdr_layout *reply);
int rpcrdma_rs_xdr_read(const struct xdr_buf *buf, u32 offset, void *out,
			u32 len);
int rpcrdma_rs_rqst_deliver(struct rpc_rqst *rqst, const void *data, u32 len,
			    u32 writelist, u32 *dropped);
bool rpcrdma_rs_rqst_rcv_word0(const struct rpc_rqst *rqst, u32 *word);
void rpcrdma_rs_complete_unpin(struct rpc_rqst *rqst, int result);
void rpcrdma_rs_unpin(struct rpc_rqst *rqst);
/* The rate-limit budgets of the module's log lines. */
#define RPCRDMA_RS_BUDGET_FAULT 0
#define RPCRDMA_RS_BUDGET_CONN 1
#define RPCRDMA_RS_BUDGET_INFO 2
#define RPCRDMA_RS_BUDGETS 3
bool rpcrdma_rs_ratelimit(unsigned int budget);
int rpcrdma_rs_bc_receive_call(struct rpc_xprt *xprt, const void *data,
			       u32 len);

#endif /* RPCRDMA_RS_HELPERS_H */

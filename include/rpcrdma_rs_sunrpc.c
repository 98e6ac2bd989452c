// SPDX-License-Identifier: GPL-2.0
/*
 * The sunrpc side of rpcrdma_rs.ko: the "rdma" transport class and its
 * rpc_xprt_ops table, and the glue around struct rpc_xprt that needs its
 * macros, static inlines and locks.  The transport's own work (connection
 * management, marshalling, reply handling) is Rust, in the functions
 * declared in rpcrdma_rs_ops.h.
 */
#include <linux/module.h>
#include <linux/ratelimit.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/workqueue.h>
#include <linux/sunrpc/addr.h>
#include <linux/sunrpc/clnt.h>
#include <linux/sunrpc/sched.h>
#include <linux/sunrpc/svc.h>
#include <linux/sunrpc/bc_xprt.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/xdr.h>

#include "rpcrdma_rs_helpers.h"
#include "rpcrdma_rs_ops.h"

/* As the C transport: 60 second timeout, no retries. */
static const struct rpc_timeout rpcrdma_rs_default_timeout = {
	.to_initval = 60 * HZ,
	.to_maxval = 60 * HZ,
};

#define RPCRDMA_RS_BIND_TO		(60U * HZ)
#define RPCRDMA_RS_INIT_REEST_TO	(5U * HZ)
#define RPCRDMA_RS_IDLE_DISC_TO		(5U * 60 * HZ)
#define RPCRDMA_RS_SLOT_TABLE_ENTRIES	128

/**
 * struct rpcrdma_rs_xprt - one transport instance
 * @xprt: what sunrpc sees; first, so the two convert by a cast
 * @connect_worker: runs the Rust connect in process context
 * @timeout: private copy for set_connect_timeout
 * @transport: the Rust transport state (an Arc turned into a pointer)
 */
struct rpcrdma_rs_xprt {
	struct rpc_xprt xprt;
	struct delayed_work connect_worker;
	struct rpc_timeout timeout;
	void *transport;
};

static struct rpcrdma_rs_xprt *rs_xprt(struct rpc_xprt *xprt)
{
	return container_of(xprt, struct rpcrdma_rs_xprt, xprt);
}

static void rpcrdma_rs_format_addresses(struct rpc_xprt *xprt,
					struct sockaddr *sap)
{
	char buf[128];

	switch (sap->sa_family) {
	case AF_INET:
		snprintf(buf, sizeof(buf), "%08x",
			 ntohl(((struct sockaddr_in *)sap)->sin_addr.s_addr));
		xprt->address_strings[RPC_DISPLAY_NETID] = RPCBIND_NETID_RDMA;
		break;
	case AF_INET6:
		snprintf(buf, sizeof(buf), "%pi6",
			 &((struct sockaddr_in6 *)sap)->sin6_addr);
		xprt->address_strings[RPC_DISPLAY_NETID] = RPCBIND_NETID_RDMA6;
		break;
	default:
		buf[0] = '\0';
		break;
	}
	xprt->address_strings[RPC_DISPLAY_HEX_ADDR] = kstrdup(buf, GFP_KERNEL);

	(void)rpc_ntop(sap, buf, sizeof(buf));
	xprt->address_strings[RPC_DISPLAY_ADDR] = kstrdup(buf, GFP_KERNEL);

	snprintf(buf, sizeof(buf), "%u", rpc_get_port(sap));
	xprt->address_strings[RPC_DISPLAY_PORT] = kstrdup(buf, GFP_KERNEL);

	snprintf(buf, sizeof(buf), "%4hx", rpc_get_port(sap));
	xprt->address_strings[RPC_DISPLAY_HEX_PORT] = kstrdup(buf, GFP_KERNEL);

	xprt->address_strings[RPC_DISPLAY_PROTO] = "rdma";
}

static void rpcrdma_rs_free_addresses(struct rpc_xprt *xprt)
{
	unsigned int i;

	for (i = 0; i < RPC_DISPLAY_MAX; i++)
		if (i != RPC_DISPLAY_PROTO && i != RPC_DISPLAY_NETID)
			kfree(xprt->address_strings[i]);
}

static void rpcrdma_rs_connect_worker(struct work_struct *work)
{
	struct rpcrdma_rs_xprt *r = container_of(work, struct rpcrdma_rs_xprt,
						 connect_worker.work);
	struct rpc_xprt *xprt = &r->xprt;
	unsigned int pflags = current->flags;
	int rc;

	if (atomic_read(&xprt->swapper))
		current->flags |= PF_MEMALLOC;
	xprt_clear_connected(xprt);
	rc = rpcrdma_rs_op_connect(r->transport);
	xprt_clear_connecting(xprt);
	if (!rc) {
		xprt->connect_cookie++;
		xprt->stat.connect_count++;
		xprt->stat.connect_time += (long)jiffies -
					   xprt->stat.connect_start;
		xprt_set_connected(xprt);
		rc = -EAGAIN;
	}
	xprt_unlock_connect(xprt, r);
	xprt_wake_pending_tasks(xprt, rc);
	current_restore_flags(pflags, PF_MEMALLOC);
}

static void rpcrdma_rs_connect(struct rpc_xprt *xprt, struct rpc_task *task)
{
	struct rpcrdma_rs_xprt *r = rs_xprt(xprt);
	unsigned long delay = 0;

	WARN_ON_ONCE(!xprt_lock_connect(xprt, task, r));
	if (rpcrdma_rs_op_connect_failed(r->transport)) {
		delay = xprt_reconnect_delay(xprt);
		xprt_reconnect_backoff(xprt, RPCRDMA_RS_INIT_REEST_TO);
	}
	queue_delayed_work(system_long_wq, &r->connect_worker, delay);
}

static void rpcrdma_rs_close(struct rpc_xprt *xprt)
{
	rpcrdma_rs_op_close(rs_xprt(xprt)->transport);
	xprt->reestablish_timeout = 0;
	++xprt->connect_cookie;
	xprt_disconnect_done(xprt);
}

static int rpcrdma_rs_bc_send_reply(struct rpc_rqst *rqst);

static int rpcrdma_rs_send_request(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;
	int rc;

	/* Only backchannel replies have no buffer of ours. */
	if (!rqst->rq_buffer)
		return rpcrdma_rs_bc_send_reply(rqst);
	if (!xprt_connected(xprt))
		return -ENOTCONN;
	if (!xprt_request_get_cong(xprt, rqst))
		return -EBADSLT;
	/*
	 * RDMA is reliable: a retransmission on the same connection means a
	 * lost reply, and the credit it held is lost with it.  Only a new
	 * connection resets the credit accounting.
	 */
	if (rqst->rq_connect_cookie == xprt->connect_cookie)
		goto drop_connection;
	rc = rpcrdma_rs_op_send_request(rs_xprt(xprt)->transport, rqst, false);
	if (rc == -ENOTCONN)
		goto drop_connection;
	if (rc)
		return rc;
	rqst->rq_xtime = ktime_get();
	rqst->rq_xmit_bytes_sent += rqst->rq_snd_buf.len;
	/* A call with no reply would leave its credit unreturned. */
	if (!rpc_reply_expected(rqst->rq_task))
		goto drop_connection;
	return 0;

drop_connection:
	rpcrdma_rs_close(xprt);
	return -ENOTCONN;
}

/*
 * The NFSv4.1 backchannel (RFC 8167): the server's callbacks arrive as
 * RDMA_MSG Calls on this connection.  Each is copied into a request from
 * xprt->bc_pa_list (made on demand, up to a limit), queued to the
 * callback service, and its reply sent inline by send_request.
 */
#define RPCRDMA_RS_BC_SLOTS		16
#define RPCRDMA_RS_BC_MAX_ALLOC		(2 * RPCRDMA_RS_BC_SLOTS)

struct rpcrdma_rs_bc_rqst {
	struct rpc_rqst rqst;
	char rcvbuf[PAGE_SIZE];
	char sndbuf[PAGE_SIZE];
};

static int rpcrdma_rs_bc_send_reply(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;
	int rc;

	if (!xprt_connected(xprt))
		return -ENOTCONN;
	if (!xprt_request_get_cong(xprt, rqst))
		return -EBADSLT;
	rc = rpcrdma_rs_op_send_request(rs_xprt(xprt)->transport, rqst, true);
	if (rc == -ENOTCONN) {
		rpcrdma_rs_close(xprt);
		return -ENOTCONN;
	}
	return rc;
}

static int rpcrdma_rs_bc_setup(struct rpc_xprt *xprt, unsigned int reqs)
{
	return 0;
}

static size_t rpcrdma_rs_bc_maxpayload(struct rpc_xprt *xprt)
{
	return rpcrdma_rs_op_bc_maxpayload(rs_xprt(xprt)->transport);
}

static unsigned int rpcrdma_rs_bc_num_slots(struct rpc_xprt *xprt)
{
	return RPCRDMA_RS_BC_SLOTS;
}

static void rpcrdma_rs_bc_free_rqst(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->bc_pa_lock);
	list_add_tail(&rqst->rq_bc_pa_list, &xprt->bc_pa_list);
	spin_unlock(&xprt->bc_pa_lock);
	xprt_put(xprt);
}

static void rpcrdma_rs_bc_destroy(struct rpc_xprt *xprt, unsigned int reqs)
{
	struct rpc_rqst *rqst, *tmp;
	LIST_HEAD(doomed);

	spin_lock(&xprt->bc_pa_lock);
	list_splice_init(&xprt->bc_pa_list, &doomed);
	spin_unlock(&xprt->bc_pa_lock);
	list_for_each_entry_safe(rqst, tmp, &doomed, rq_bc_pa_list) {
		list_del(&rqst->rq_bc_pa_list);
		xprt->bc_alloc_count--;
		kfree(container_of(rqst, struct rpcrdma_rs_bc_rqst, rqst));
	}
}

/*
 * Queues a backchannel Call (@data, @len bytes, starting at the RPC
 * header) to the callback service.  -ENOPROTOOPT: no callback service,
 * so not a Call for us; -ENOBUFS: the server sent more than it may.
 */
int rpcrdma_rs_bc_receive_call(struct rpc_xprt *xprt, const void *data,
			       u32 len)
{
	struct svc_serv *bc_serv = xprt->bc_serv;
	struct rpcrdma_rs_bc_rqst *b;
	struct rpc_rqst *rqst;
	struct xdr_buf *buf;

	if (!bc_serv)
		return -ENOPROTOOPT;
	if (len > PAGE_SIZE || len < 4)
		return -EMSGSIZE;

	spin_lock(&xprt->bc_pa_lock);
	rqst = list_first_entry_or_null(&xprt->bc_pa_list, struct rpc_rqst,
					rq_bc_pa_list);
	if (rqst)
		list_del(&rqst->rq_bc_pa_list);
	spin_unlock(&xprt->bc_pa_lock);
	if (rqst) {
		b = container_of(rqst, struct rpcrdma_rs_bc_rqst, rqst);
	} else {
		if (xprt->bc_alloc_count >= RPCRDMA_RS_BC_MAX_ALLOC)
			return -ENOBUFS;
		b = kzalloc(sizeof(*b), GFP_NOWAIT | __GFP_NOWARN);
		if (!b)
			return -ENOBUFS;
		xprt->bc_alloc_count++;
		rqst = &b->rqst;
		rqst->rq_xprt = xprt;
		INIT_LIST_HEAD(&rqst->rq_bc_pa_list);
		__set_bit(RPC_BC_PA_IN_USE, &rqst->rq_bc_pa_state);
	}

	memcpy(b->rcvbuf, data, len);
	xdr_buf_init(&rqst->rq_snd_buf, b->sndbuf, PAGE_SIZE);
	rqst->rq_reply_bytes_recvd = 0;
	rqst->rq_xid = *(const __be32 *)data;
	rqst->rq_private_buf.len = len;
	buf = &rqst->rq_rcv_buf;
	memset(buf, 0, sizeof(*buf));
	buf->head[0].iov_base = b->rcvbuf;
	buf->head[0].iov_len = len;
	buf->len = len;

	xprt_get(xprt);
	lwq_enqueue(&rqst->rq_bc_list, &bc_serv->sv_cb_list);
	svc_pool_wake_idle_thread(&bc_serv->sv_pools[0]);
	return 0;
}

/* No RPC's memory is freed while the server can still reach it. */
static void rpcrdma_rs_buf_free(struct rpc_task *task)
{
	struct rpc_rqst *rqst = task->tk_rqstp;

	rpcrdma_rs_op_buf_free(rs_xprt(rqst->rq_xprt)->transport,
			       be32_to_cpu(rqst->rq_xid));
	rpc_free(task);
}

static void rpcrdma_rs_timer(struct rpc_xprt *xprt, struct rpc_task *task)
{
	/* RDMA has no keepalive: a timeout probes the path by reconnecting. */
	xprt_force_disconnect(xprt);
}

static void rpcrdma_rs_set_port(struct rpc_xprt *xprt, unsigned short port)
{
	struct sockaddr *sap = (struct sockaddr *)&xprt->addr;
	char buf[8];

	rpc_set_port(sap, port);

	kfree(xprt->address_strings[RPC_DISPLAY_PORT]);
	snprintf(buf, sizeof(buf), "%u", port);
	xprt->address_strings[RPC_DISPLAY_PORT] = kstrdup(buf, GFP_KERNEL);

	kfree(xprt->address_strings[RPC_DISPLAY_HEX_PORT]);
	snprintf(buf, sizeof(buf), "%4hx", port);
	xprt->address_strings[RPC_DISPLAY_HEX_PORT] = kstrdup(buf, GFP_KERNEL);
}

static void rpcrdma_rs_set_connect_timeout(struct rpc_xprt *xprt,
					   unsigned long connect_timeout,
					   unsigned long reconnect_timeout)
{
	struct rpcrdma_rs_xprt *r = rs_xprt(xprt);

	spin_lock(&xprt->transport_lock);
	if (connect_timeout < xprt->connect_timeout) {
		unsigned long initval = connect_timeout;

		if (initval < RPCRDMA_RS_INIT_REEST_TO << 1)
			initval = RPCRDMA_RS_INIT_REEST_TO << 1;
		r->timeout = *xprt->timeout;
		r->timeout.to_initval = initval;
		r->timeout.to_maxval = initval;
		xprt->timeout = &r->timeout;
		xprt->connect_timeout = connect_timeout;
	}
	if (reconnect_timeout < xprt->max_reconnect_timeout)
		xprt->max_reconnect_timeout = reconnect_timeout;
	spin_unlock(&xprt->transport_lock);
}

/* The C transport's "xprt: rdma" line, field for field, so that
 * mountstats and nfsiostat read it unchanged. */
static void rpcrdma_rs_print_stats(struct rpc_xprt *xprt, struct seq_file *seq)
{
	struct rpcrdma_rs_stats s = {};
	long idle_time = 0;

	rpcrdma_rs_op_stats(rs_xprt(xprt)->transport, &s);
	if (xprt_connected(xprt))
		idle_time = (long)(jiffies - xprt->last_used) / HZ;

	seq_puts(seq, "\txprt:\trdma ");
	seq_printf(seq, "%u %lu %lu %lu %ld %lu %lu %lu %llu %llu ",
		   0,	/* need a local port? */
		   xprt->stat.bind_count,
		   xprt->stat.connect_count,
		   xprt->stat.connect_time / HZ,
		   idle_time,
		   xprt->stat.sends,
		   xprt->stat.recvs,
		   xprt->stat.bad_xids,
		   xprt->stat.req_u,
		   xprt->stat.bklog_u);
	seq_printf(seq, "%lu %lu %lu %llu %llu %llu %llu %lu %lu %lu %lu ",
		   (unsigned long)s.read_chunk_count,
		   (unsigned long)s.write_chunk_count,
		   (unsigned long)s.reply_chunk_count,
		   s.total_rdma_request, s.total_rdma_reply,
		   s.pullup_copy_count, s.fixup_copy_count,
		   (unsigned long)s.hardway_register_count,
		   (unsigned long)s.failed_marshal_count,
		   (unsigned long)s.bad_reply_count,
		   (unsigned long)s.nomsg_call_count);
	seq_printf(seq, "%lu %lu %lu %lu %lu %lu\n",
		   (unsigned long)s.mrs_recycled,
		   (unsigned long)s.mrs_orphaned,
		   (unsigned long)s.mrs_allocated,
		   (unsigned long)s.local_inv_needed,
		   (unsigned long)s.empty_sendctx_q,
		   0LU);
}

static int rpcrdma_rs_enable_swap(struct rpc_xprt *xprt)
{
	return 0;
}

static void rpcrdma_rs_disable_swap(struct rpc_xprt *xprt)
{
}

static void rpcrdma_rs_inject_disconnect(struct rpc_xprt *xprt)
{
	xprt_force_disconnect(xprt);
}

static void rpcrdma_rs_destroy(struct rpc_xprt *xprt)
{
	struct rpcrdma_rs_xprt *r = rs_xprt(xprt);

	cancel_delayed_work_sync(&r->connect_worker);
	rpcrdma_rs_op_detach(r->transport);
	rpcrdma_rs_bc_destroy(xprt, 0);
	rpcrdma_rs_free_addresses(xprt);
	xprt_free(xprt);
	module_put(THIS_MODULE);
}

static const struct rpc_xprt_ops rpcrdma_rs_procs = {
	.reserve_xprt		= xprt_reserve_xprt_cong,
	.release_xprt		= xprt_release_xprt_cong,
	.alloc_slot		= xprt_alloc_slot,
	.free_slot		= xprt_free_slot,
	.release_request	= xprt_release_rqst_cong,
	.wait_for_reply_request	= xprt_wait_for_reply_request_def,
	.timer			= rpcrdma_rs_timer,
	.rpcbind		= rpcb_getport_async,
	.set_port		= rpcrdma_rs_set_port,
	.connect		= rpcrdma_rs_connect,
	.buf_alloc		= rpc_malloc,
	.buf_free		= rpcrdma_rs_buf_free,
	.send_request		= rpcrdma_rs_send_request,
	.close			= rpcrdma_rs_close,
	.destroy		= rpcrdma_rs_destroy,
	.set_connect_timeout	= rpcrdma_rs_set_connect_timeout,
	.print_stats		= rpcrdma_rs_print_stats,
	.enable_swap		= rpcrdma_rs_enable_swap,
	.disable_swap		= rpcrdma_rs_disable_swap,
	.inject_disconnect	= rpcrdma_rs_inject_disconnect,
	.bc_setup		= rpcrdma_rs_bc_setup,
	.bc_maxpayload		= rpcrdma_rs_bc_maxpayload,
	.bc_num_slots		= rpcrdma_rs_bc_num_slots,
	.bc_free_rqst		= rpcrdma_rs_bc_free_rqst,
	.bc_destroy		= rpcrdma_rs_bc_destroy,
};

static struct xprt_class rpcrdma_rs_class;

static struct rpc_xprt *rpcrdma_rs_setup(struct xprt_create *args)
{
	struct rpcrdma_rs_xprt *r;
	struct rpc_xprt *xprt;
	struct sockaddr *sap = args->dstaddr;
	unsigned int max_payload = 0;

	if (args->addrlen > sizeof(xprt->addr))
		return ERR_PTR(-EBADF);
	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-EIO);

	xprt = xprt_alloc(args->net, sizeof(*r), 2,
			  RPCRDMA_RS_SLOT_TABLE_ENTRIES);
	if (!xprt) {
		module_put(THIS_MODULE);
		return ERR_PTR(-ENOMEM);
	}
	r = rs_xprt(xprt);

	xprt->timeout = &rpcrdma_rs_default_timeout;
	xprt->connect_timeout = xprt->timeout->to_initval;
	xprt->max_reconnect_timeout = xprt->timeout->to_maxval;
	xprt->bind_timeout = RPCRDMA_RS_BIND_TO;
	xprt->reestablish_timeout = RPCRDMA_RS_INIT_REEST_TO;
	xprt->idle_timeout = RPCRDMA_RS_IDLE_DISC_TO;
	xprt->resvport = 0;
	xprt->ops = &rpcrdma_rs_procs;
	/* Side protocols (rpcbind) that peek at the address expect TCP. */
	xprt->prot = IPPROTO_TCP;
	xprt->xprt_class = &rpcrdma_rs_class;
	xprt->addrlen = args->addrlen;
	memcpy(&xprt->addr, sap, xprt->addrlen);
	if (rpc_get_port(sap))
		xprt_set_bound(xprt);
	rpcrdma_rs_format_addresses(xprt, sap);
	INIT_DELAYED_WORK(&r->connect_worker, rpcrdma_rs_connect_worker);

	r->transport = rpcrdma_rs_op_attach(xprt, &max_payload);
	if (!r->transport) {
		rpcrdma_rs_free_addresses(xprt);
		xprt_free(xprt);
		module_put(THIS_MODULE);
		return ERR_PTR(-ENOMEM);
	}
	xprt->max_payload = max_payload;
	return xprt;
}

static struct xprt_class rpcrdma_rs_class = {
	.list		= LIST_HEAD_INIT(rpcrdma_rs_class.list),
	.name		= "rdma",
	.owner		= THIS_MODULE,
	.ident		= XPRT_TRANSPORT_RDMA,
	.setup		= rpcrdma_rs_setup,
	.netid		= { "rdma", "rdma6", "" },
};

int rpcrdma_rs_xprt_class_register(void)
{
	return xprt_register_transport(&rpcrdma_rs_class);
}

void rpcrdma_rs_xprt_class_unregister(void)
{
	xprt_unregister_transport(&rpcrdma_rs_class);
}

/* Accessors for the Rust side. */

void rpcrdma_rs_xprt_force_disconnect(struct rpc_xprt *xprt)
{
	xprt_force_disconnect(xprt);
}

void rpcrdma_rs_xprt_set_cwnd(struct rpc_xprt *xprt, u32 credits)
{
	spin_lock(&xprt->transport_lock);
	xprt->cwnd = credits << RPC_CWNDSHIFT;
	spin_unlock(&xprt->transport_lock);
}

void rpcrdma_rs_xprt_reset_cwnd(struct rpc_xprt *xprt)
{
	spin_lock(&xprt->transport_lock);
	xprt->cong = 0;
	xprt->cwnd = RPC_CWNDSHIFT;
	spin_unlock(&xprt->transport_lock);
}

void rpcrdma_rs_xprt_write_space(struct rpc_xprt *xprt)
{
	xprt_write_space(xprt);
}

void rpcrdma_rs_xprt_wait_for_buffer_space(struct rpc_xprt *xprt)
{
	xprt_wait_for_buffer_space(xprt);
}

void rpcrdma_rs_xprt_reply_arrived(struct rpc_xprt *xprt)
{
	xprt->reestablish_timeout = 0;
}

const struct sockaddr_storage *rpcrdma_rs_xprt_addr(const struct rpc_xprt *xprt,
						    size_t *len)
{
	*len = xprt->addrlen;
	return &xprt->addr;
}

struct net *rpcrdma_rs_xprt_net(const struct rpc_xprt *xprt)
{
	return xprt->xprt_net;
}

const char *rpcrdma_rs_xprt_peer(const struct rpc_xprt *xprt)
{
	const char *addr = xprt->address_strings[RPC_DISPLAY_ADDR];

	return addr ? addr : "?";
}

/* One warning per 5 seconds at most per burst of 10, module-wide. */
static DEFINE_RATELIMIT_STATE(rpcrdma_rs_warn_rs, 5 * HZ, 10);

bool rpcrdma_rs_warn_ratelimit(void)
{
	return __ratelimit(&rpcrdma_rs_warn_rs);
}

u32 rpcrdma_rs_rqst_xid(const struct rpc_rqst *rqst)
{
	return be32_to_cpu(rqst->rq_xid);
}

u32 rpcrdma_rs_rqst_call_len(const struct rpc_rqst *rqst)
{
	return rqst->rq_snd_buf.len;
}

int rpcrdma_rs_rqst_read_call(const struct rpc_rqst *rqst, u32 offset,
			      void *buf, u32 len)
{
	return read_bytes_from_xdr_buf(&rqst->rq_snd_buf, offset, buf, len);
}

void rpcrdma_rs_rqst_rcv_room(const struct rpc_rqst *rqst, u32 *buflen,
			      u32 *page_len)
{
	*buflen = rqst->rq_rcv_buf.buflen;
	*page_len = rqst->rq_rcv_buf.page_len;
}

struct rpc_rqst *rpcrdma_rs_lookup_pin(struct rpc_xprt *xprt, u32 xid)
{
	struct rpc_rqst *rqst;

	spin_lock(&xprt->queue_lock);
	rqst = xprt_lookup_rqst(xprt, cpu_to_be32(xid));
	if (rqst)
		xprt_pin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
	return rqst;
}

static int rpcrdma_rs_alloc_sparse_pages(struct xdr_buf *buf)
{
	unsigned int i, npages;

	if (!(buf->flags & XDRBUF_SPARSE_PAGES) || !buf->page_len)
		return 0;
	npages = (buf->page_base + buf->page_len + PAGE_SIZE - 1) >> PAGE_SHIFT;
	for (i = buf->page_base >> PAGE_SHIFT; i < npages; i++) {
		if (buf->pages[i])
			continue;
		buf->pages[i] = alloc_page(GFP_NOWAIT | __GFP_NOWARN);
		if (!buf->pages[i])
			return -ENOMEM;
	}
	return 0;
}

/*
 * Describes the Call's send buffer (@reply false) or the Reply's receive
 * buffer (@reply true) for chunk planning and registration.  Sparse
 * receive pages are allocated first: they are about to be registered.
 */
int rpcrdma_rs_rqst_layout(struct rpc_rqst *rqst, bool reply,
			   struct rpcrdma_rs_xdr_layout *out)
{
	struct xdr_buf *buf = reply ? &rqst->rq_rcv_buf : &rqst->rq_snd_buf;
	int rc = 0;

	if (reply)
		rc = rpcrdma_rs_alloc_sparse_pages(buf);
	out->head = buf->head[0].iov_base;
	out->head_len = buf->head[0].iov_len;
	out->pages = buf->pages;
	out->page_base = buf->page_base;
	out->page_len = buf->page_len;
	out->tail = buf->tail[0].iov_base;
	out->tail_len = buf->tail[0].iov_len;
	out->buflen = buf->buflen;
	out->len = buf->len;
	out->ddp = reply ? !!(buf->flags & XDRBUF_READ) :
			   !!(buf->flags & XDRBUF_WRITE);
	/* Security flavors that checksum or encrypt the payload forbid DDP. */
	out->ddp_allowed = !(rqst->rq_cred &&
			     rqst->rq_cred->cr_auth->au_flags &
			     RPCAUTH_AUTH_DATATOUCH);
	return rc;
}

static void rpcrdma_rs_copy_to_pages(struct page **pages, unsigned int base,
				     const char *src, unsigned int len)
{
	while (len) {
		struct page *page = pages[base >> PAGE_SHIFT];
		unsigned int off = offset_in_page(base);
		unsigned int n = min_t(unsigned int, len, PAGE_SIZE - off);

		memcpy_to_page(page, off, src, n);
		src += n;
		base += n;
		len -= n;
	}
}

/*
 * Copies the inline part of an RPC Reply (@len bytes at @data) into the
 * request's receive buffer, as the C transport's rpcrdma_inline_fixup
 * places it: the head first, then the pages, then the tail.  @writelist
 * bytes of the Reply were placed in the pages by RDMA Write; a head left
 * partly empty by such a reduced Reply is trimmed so that the decoder
 * does not move the placed data.  Returns the bytes copied into pages.
 */
int rpcrdma_rs_rqst_deliver(struct rpc_rqst *rqst, const void *data, u32 len,
			    u32 writelist)
{
	struct xdr_buf *rcv = &rqst->rq_rcv_buf;
	struct xdr_buf *priv = &rqst->rq_private_buf;
	const char *src = data;
	unsigned int copy_len = len, curlen, delta, fixup = 0;
	unsigned int pad = writelist & 3;
	int rc;

	rc = rpcrdma_rs_alloc_sparse_pages(priv);
	if (rc)
		return rc;

	curlen = rcv->head[0].iov_len;
	if (curlen > copy_len) {
		if (writelist) {
			delta = curlen - copy_len;
			rcv->head[0].iov_len = copy_len;
			priv->head[0].iov_len = copy_len;
			rcv->buflen -= delta;
			priv->buflen -= delta;
		}
		curlen = copy_len;
	}
	memcpy(rcv->head[0].iov_base, src, curlen);
	src += curlen;
	copy_len -= curlen;

	if (copy_len && rcv->page_len) {
		unsigned int n = min(copy_len, rcv->page_len);

		rpcrdma_rs_copy_to_pages(rcv->pages, rcv->page_base, src, n);
		src += n;
		copy_len -= n;
		fixup = n;
		/* The Write chunk's XDR pad sits at the front of the tail. */
		if (pad) {
			src -= pad;
			copy_len += pad;
		}
	}
	if (copy_len) {
		if (copy_len > rcv->tail[0].iov_len)
			return -EMSGSIZE;
		memmove(rcv->tail[0].iov_base, src, copy_len);
	}
	return fixup;
}

/*
 * Completes a pinned request with @result bytes received, or fails it with
 * @result as a negative errno (as the C transport does for a bad reply).
 */
void rpcrdma_rs_complete_unpin(struct rpc_rqst *rqst, int result)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;

	spin_lock(&xprt->queue_lock);
	if (result < 0) {
		rqst->rq_task->tk_status = result;
		result = 0;
	}
	xprt_complete_rqst(rqst->rq_task, result);
	xprt_unpin_rqst(rqst);
	spin_unlock(&xprt->queue_lock);
}

// SPDX-License-Identifier: GPL-2.0
/*
 * The sunrpc side of rpcrdma_rs.ko (the C transport.c): the "rdma"
 * transport class and its rpc_xprt_ops table, and the glue around struct
 * rpc_xprt that needs its macros, static inlines and locks.  The
 * transport's own work (connection management, marshalling, reply
 * handling) is Rust, in the functions declared in rpcrdma_rs_ops.h; the
 * backchannel is rpcrdma_rs_backchannel.c, the xdr_buf helpers
 * rpcrdma_rs_xdr.c.
 */
#include <linux/module.h>
#include <linux/mutex.h>
#include <linux/ratelimit.h>
#include <linux/rcupdate.h>
#include <linux/sched/mm.h>
#include <linux/seq_file.h>
#include <linux/slab.h>
#include <linux/string.h>
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
#include "rpcrdma_rs_params.h"
#include "rpcrdma_rs_sunrpc.h"
#include "rpcrdma_rs_trace_calls.h"

/* As the C transport: 60 second timeout, no retries. */
static const struct rpc_timeout rpcrdma_rs_default_timeout = {
	.to_initval = 60 * HZ,
	.to_maxval = 60 * HZ,
};

#define RPCRDMA_RS_BIND_TO		(60U * HZ)
#define RPCRDMA_RS_INIT_REEST_TO	(5U * HZ)
#define RPCRDMA_RS_IDLE_DISC_TO		(5U * 60 * HZ)

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
	unsigned int nofs;
	int rc;

	if (atomic_read(&xprt->swapper))
		current->flags |= PF_MEMALLOC;
	xprt_clear_connected(xprt);
	/*
	 * The connection's buffers are allocated here: reclaim must not
	 * write back through NFS, which may wait for this very transport
	 * (sunrpc's own workers do the same).
	 */
	nofs = memalloc_nofs_save();
	rc = rpcrdma_rs_op_connect(r->transport, xprt);
	memalloc_nofs_restore(nofs);
	xprt_clear_connecting(xprt);
	if (!rc) {
		/*
		 * Credits are per connection: the slots of requests sent on
		 * earlier connections are forgotten here, together with the
		 * cookie that tells them apart (rpcrdma_rs_get_cong).  Not
		 * before: sunrpc stamps a waiting request with the current
		 * cookie while it connects, so a release in between still
		 * counts its old slot down.
		 */
		spin_lock(&xprt->transport_lock);
		xprt->cong = 0;
		xprt->connect_cookie++;
		spin_unlock(&xprt->transport_lock);
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

	/*
	 * The worker connects with the write lock the task hands it: the
	 * transport's connection state is the lock holder's alone.
	 */
	if (WARN_ON_ONCE(!xprt_lock_connect(xprt, task, r))) {
		xprt_clear_connecting(xprt);
		return;
	}
	if (rpcrdma_rs_op_connect_failed(r->transport)) {
		delay = xprt_reconnect_delay(xprt);
		xprt_reconnect_backoff(xprt, RPCRDMA_RS_INIT_REEST_TO);
	}
	rpcrdma_rs_trace_op_connect(xprt, delay);
	queue_delayed_work(system_long_wq, &r->connect_worker, delay);
}

void rpcrdma_rs_close(struct rpc_xprt *xprt)
{
	struct rpcrdma_rs_xprt *r = rs_xprt(xprt);

	rpcrdma_rs_op_close(r->transport, xprt);
	/* A connection the server broke keeps the backoff it has earned. */
	if (!rpcrdma_rs_op_peer_faulted(r->transport))
		xprt->reestablish_timeout = 0;
	++xprt->connect_cookie;
	xprt_disconnect_done(xprt);
}

/*
 * Takes a congestion slot for @rqst.  Credits are valid for one connection
 * only (C: rpcrdma_req_reset): a slot taken before the last reconnect was
 * forgotten when that connection came up, so it is dropped without being
 * counted down.
 * A request holds a slot only while it was sent on the connection of
 * rq_connect_cookie (a send that fails gives its slot back), so the cookie
 * tells which.
 */
static void rpcrdma_rs_forget_stale_cong(struct rpc_xprt *xprt,
					 struct rpc_rqst *rqst)
{
	if (rqst->rq_cong && rqst->rq_connect_cookie != xprt->connect_cookie)
		rqst->rq_cong = 0;
}

bool rpcrdma_rs_get_cong(struct rpc_xprt *xprt, struct rpc_rqst *rqst)
{
	rpcrdma_rs_forget_stale_cong(xprt, rqst);
	return xprt_request_get_cong(xprt, rqst);
}

/* Gives back the slot of a request that was not sent after all. */
void rpcrdma_rs_put_cong(struct rpc_xprt *xprt, struct rpc_rqst *rqst)
{
	spin_lock(&xprt->transport_lock);
	xprt_release_rqst_cong(rqst->rq_task);
	spin_unlock(&xprt->transport_lock);
}

/*
 * GSS privacy encrypts a Call into pages of its own and frees them
 * through rq_release_snd_buf when it encodes the Call again
 * (alloc_enc_pages: after a timeout, or a close that woke the task before
 * its drain) or releases the request.  A Long Call may have registered
 * those pages for the server to read, so the transport's release of the
 * RPC runs first: it returns only once the server can no longer reach the
 * RPC's memory.  In 6.12 every request's function is the same one
 * (auth_gss's priv_release_snd_buf).
 */
static void (*rpcrdma_rs_gss_release_snd_buf)(struct rpc_rqst *);

static void rpcrdma_rs_release_snd_buf(struct rpc_rqst *rqst)
{
	void (*release)(struct rpc_rqst *) =
		READ_ONCE(rpcrdma_rs_gss_release_snd_buf);

	rpcrdma_rs_op_buf_free(rs_xprt(rqst->rq_xprt)->transport,
			       be32_to_cpu(rqst->rq_xid));
	rqst->rq_release_snd_buf = NULL;
	release(rqst);
}

/*
 * The latest function seen is kept: auth_rpcgss cannot be unloaded while a
 * request it encrypted exists, so after a reload every wrapped request
 * has the new module's function.
 */
static void rpcrdma_rs_hook_release_snd_buf(struct rpc_rqst *rqst)
{
	void (*release)(struct rpc_rqst *) = rqst->rq_release_snd_buf;

	if (!release || release == rpcrdma_rs_release_snd_buf)
		return;
	WRITE_ONCE(rpcrdma_rs_gss_release_snd_buf, release);
	rqst->rq_release_snd_buf = rpcrdma_rs_release_snd_buf;
}

static int rpcrdma_rs_send_request(struct rpc_rqst *rqst)
{
	struct rpc_xprt *xprt = rqst->rq_xprt;
	int rc;

	/* Only backchannel replies have no buffer of ours. */
	if (!rqst->rq_buffer)
		return rpcrdma_rs_bc_send_reply(rqst);
	if (!xprt_connected(xprt))
		return -ENOTCONN;
	if (!rpcrdma_rs_get_cong(xprt, rqst))
		return -EBADSLT;
	/*
	 * RDMA is reliable: a retransmission on the same connection means a
	 * lost reply, and the credit it held is lost with it.  Only a new
	 * connection resets the credit accounting.
	 */
	if (rqst->rq_connect_cookie == xprt->connect_cookie)
		goto drop_connection;
	rpcrdma_rs_hook_release_snd_buf(rqst);
	rc = rpcrdma_rs_op_send_request(rs_xprt(xprt)->transport, xprt, rqst,
					false);
	if (rc)
		rpcrdma_rs_put_cong(xprt, rqst);
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
 * Gives back the request's congestion slot, unless it was taken on an
 * earlier connection: the window reset forgot that one already, and
 * counting it down again would wrap xprt->cong and stall every sender.
 * Called with the transport lock held.
 */
static void rpcrdma_rs_release_rqst(struct rpc_task *task)
{
	struct rpc_rqst *rqst = task->tk_rqstp;

	rpcrdma_rs_forget_stale_cong(rqst->rq_xprt, rqst);
	xprt_release_rqst_cong(task);
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
	/*
	 * RDMA has no keepalive: a timeout probes the path by reconnecting.
	 * Rust logs the loss (once per connection) and forces the disconnect
	 * of a live connection; this one covers a connection not yet up.
	 */
	rpcrdma_rs_op_timer(rs_xprt(xprt)->transport);
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
	rpcrdma_rs_op_detach(r->transport, xprt);
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
	.release_request	= rpcrdma_rs_release_rqst,
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

/*
 * What Rust registered the class with, for rpcrdma_rs_op_attach.  sunrpc
 * finds the class and then calls setup unlocked, holding a reference on
 * this module (xprt_create_transport), so module exit never runs during a
 * setup, and registering is the last step of init that can fail.  The
 * mutex is defensive only: it keeps attach and unregistering apart should
 * that order ever change.
 */
static DEFINE_MUTEX(rpcrdma_rs_class_mutex);
static void *rpcrdma_rs_class_data;

static void rpcrdma_rs_set_class_data(void *class_data)
{
	mutex_lock(&rpcrdma_rs_class_mutex);
	rpcrdma_rs_class_data = class_data;
	mutex_unlock(&rpcrdma_rs_class_mutex);
}

static struct rpc_xprt *rpcrdma_rs_setup(struct xprt_create *args)
{
	struct rpcrdma_rs_xprt *r;
	struct rpc_xprt *xprt;
	struct sockaddr *sap = args->dstaddr;
	unsigned int max_payload = 0;
	unsigned int slots;

	if (args->addrlen > sizeof(xprt->addr))
		return ERR_PTR(-EBADF);
	if (!try_module_get(THIS_MODULE))
		return ERR_PTR(-EIO);

	/*
	 * The slot table size is read once, here, as C's xprt_setup_rdma
	 * does: it is this transport's max_reqs from now on, which its
	 * connections size their credits and buffers by.  Every slot is
	 * allocated now, as C allocates every rpcrdma_req: with fewer, sunrpc
	 * allocates and frees an rpc_rqst for each RPC past them.
	 */
	slots = rpcrdma_rs_param_slot_table_entries();
	xprt = xprt_alloc(args->net, sizeof(*r), slots, slots);
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

	mutex_lock(&rpcrdma_rs_class_mutex);
	if (rpcrdma_rs_class_data)
		r->transport = rpcrdma_rs_op_attach(rpcrdma_rs_class_data, xprt,
						    &max_payload);
	mutex_unlock(&rpcrdma_rs_class_mutex);
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

/* @class_data is handed to rpcrdma_rs_op_attach until unregistered. */
int rpcrdma_rs_xprt_class_register(void *class_data)
{
	int rc;

	rpcrdma_rs_set_class_data(class_data);
	rc = xprt_register_transport(&rpcrdma_rs_class);
	if (rc)
		rpcrdma_rs_set_class_data(NULL);
	return rc;
}

/* On return, no setup uses the class data, and none will. */
void rpcrdma_rs_xprt_class_unregister(void)
{
	xprt_unregister_transport(&rpcrdma_rs_class);
	rpcrdma_rs_set_class_data(NULL);
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

/*
 * A new connection starts with a window of one request (RFC 8166, section
 * 3.3.3).  The slots taken are forgotten once it is up (see the connect
 * worker).
 */
void rpcrdma_rs_xprt_reset_cwnd(struct rpc_xprt *xprt)
{
	spin_lock(&xprt->transport_lock);
	xprt->cwnd = RPC_CWNDSCALE;
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

/* The congestion window and the slots taken, in requests, for reports. */
void rpcrdma_rs_xprt_window(struct rpc_xprt *xprt, u32 *cong, u32 *cwnd)
{
	spin_lock(&xprt->transport_lock);
	*cong = xprt->cong >> RPC_CWNDSHIFT;
	*cwnd = xprt->cwnd >> RPC_CWNDSHIFT;
	spin_unlock(&xprt->transport_lock);
}

void rpcrdma_rs_xprt_reply_arrived(struct rpc_xprt *xprt)
{
	xprt->reestablish_timeout = 0;
}

/*
 * Copies the server's address into @out; returns its length, or 0 when
 * it is too short for its family.  sunrpc rewrites it through sysfs
 * (dstaddr) holding the transport's write lock, which the connect worker,
 * the only caller, holds; and through set_port when rpcbind answers for
 * an unbound transport, which is not serialized with a connect worker, as
 * for the kernel's socket transports.  A dstaddr that sysfs could not
 * parse leaves addrlen 0 (6.12 gives rpc_pton the size of a struct
 * sockaddr, too small for IPv6): the connect then fails, rather than go
 * to the old server under the new name.
 */
size_t rpcrdma_rs_xprt_addr(const struct rpc_xprt *xprt,
			    struct __kernel_sockaddr_storage *out)
{
	size_t need;

	memcpy(out, &xprt->addr, sizeof(*out));
	switch (out->ss_family) {
	case AF_INET:
		need = sizeof(struct sockaddr_in);
		break;
	case AF_INET6:
		need = sizeof(struct sockaddr_in6);
		break;
	default:
		return 0;
	}
	return xprt->addrlen >= need ? xprt->addrlen : 0;
}

struct net *rpcrdma_rs_xprt_net(const struct rpc_xprt *xprt)
{
	return xprt->xprt_net;
}

/* Set by xprt_alloc in setup and never changed. */
unsigned int rpcrdma_rs_xprt_max_reqs(const struct rpc_xprt *xprt)
{
	return xprt->max_reqs;
}

/*
 * Copies the server's address as text into @buf (@len bytes, NUL
 * included; truncated if longer).  sysfs (dstaddr) replaces the string
 * and frees the old one after an RCU grace period: it is read under the
 * RCU read lock.
 */
void rpcrdma_rs_xprt_peer(const struct rpc_xprt *xprt, char *buf, size_t len)
{
	const char *addr;

	rcu_read_lock();
	addr = rcu_dereference_raw(xprt->address_strings[RPC_DISPLAY_ADDR]);
	strscpy(buf, addr ? addr : "?", len);
	rcu_read_unlock();
}

/*
 * Ten lines per 5 seconds at most in each budget, module-wide: faults,
 * connection losses and information each have their own, so that a
 * server flooding the client with bad replies cannot hide the line saying
 * the connection went.
 */
static struct ratelimit_state rpcrdma_rs_budgets[RPCRDMA_RS_BUDGETS] = {
	[0 ... RPCRDMA_RS_BUDGETS - 1] =
		RATELIMIT_STATE_INIT(rpcrdma_rs_budget, 5 * HZ, 10),
};

bool rpcrdma_rs_ratelimit(unsigned int budget)
{
	if (WARN_ON_ONCE(budget >= RPCRDMA_RS_BUDGETS))
		return false;
	return __ratelimit(&rpcrdma_rs_budgets[budget]);
}

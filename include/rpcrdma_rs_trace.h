/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracepoints of rpcrdma_rs.ko, under rpcrdma_rs: in tracefs: the
 * events an administrator debugs a mount with.  Only
 * rpcrdma_rs_trace.c includes this file (twice over, through
 * define_trace.h); Rust fires the events through the functions that file
 * defines (rpcrdma_rs_trace_calls.h), as it cannot call the static inline
 * trace_*() these macros make.  bindgen never reads this file.
 *
 * Every event of a transport records the server's address as sunrpc shows
 * it (peer=).  The strings Rust passes come as a pointer and a length
 * (__string_len), at most RPCRDMA_RS_TRACE_STR_MAX bytes.  A string that
 * may hold spaces is the last field an event prints.
 */
#undef TRACE_SYSTEM
#define TRACE_SYSTEM rpcrdma_rs

#if !defined(RPCRDMA_RS_TRACE_H) || defined(TRACE_HEADER_MULTI_READ)
#define RPCRDMA_RS_TRACE_H

#include <linux/tracepoint.h>
#include <rdma/ib_cm.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
/* rdma_show_wc_status(); it needs the three above. */
#include <trace/misc/rdma.h>

/*
 * A connection attempt ended: connected (result 0) or failed (-errno).
 * device is the RDMA device the route went through ("-" when the attempt
 * failed before one was found); credits are those the connection asks of
 * the server (0 when the attempt failed before they were known).
 */
TRACE_EVENT(rpcrdma_rs_connect,
	TP_PROTO(const char *peer, const char *device, size_t device_len,
		 int result, u32 credits),
	TP_ARGS(peer, device, device_len, result, credits),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string_len(device, device, device_len)
		__field(int, result)
		__field(u32, credits)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(device);
		__entry->result = result;
		__entry->credits = credits;
	),
	TP_printk("peer=%s device=%s result=%d credits=%u",
		  __get_str(peer), __get_str(device), __entry->result,
		  __entry->credits)
);

/*
 * An established connection ended, once per connection: lost (the reason
 * the kernel log gives, e.g. "DISCONNECTED", "Send flushed", "RPC timed
 * out") or closed by the client ("closed": idle, unmount, sunrpc's
 * autoclose, an injected disconnect).
 */
TRACE_EVENT(rpcrdma_rs_disconnect,
	TP_PROTO(const char *peer, const char *reason, size_t reason_len),
	TP_ARGS(peer, reason, reason_len),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string_len(reason, reason, reason_len)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(reason);
	),
	TP_printk("peer=%s reason=%s", __get_str(peer), __get_str(reason))
);

/*
 * A connection was established: what the server's RFC 8797 private data
 * said (valid=1 and its sizes and R flag; valid=0, zeros, and why not in
 * status) and the inline thresholds the connection uses.
 */
TRACE_EVENT(rpcrdma_rs_private_data,
	TP_PROTO(const char *peer, bool valid, u32 peer_send, u32 peer_recv,
		 bool peer_rinv, u32 inline_send, u32 inline_recv,
		 const char *status, size_t status_len),
	TP_ARGS(peer, valid, peer_send, peer_recv, peer_rinv, inline_send,
		inline_recv, status, status_len),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(bool, valid)
		__field(bool, peer_rinv)
		__field(u32, peer_send)
		__field(u32, peer_recv)
		__field(u32, inline_send)
		__field(u32, inline_recv)
		__string_len(status, status, status_len)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->valid = valid;
		__entry->peer_rinv = peer_rinv;
		__entry->peer_send = peer_send;
		__entry->peer_recv = peer_recv;
		__entry->inline_send = inline_send;
		__entry->inline_recv = inline_recv;
		__assign_str(status);
	),
	TP_printk("peer=%s valid=%u peer_send=%u peer_recv=%u peer_rinv=%u inline_send=%u inline_recv=%u status=%s",
		  __get_str(peer), __entry->valid, __entry->peer_send,
		  __entry->peer_recv, __entry->peer_rinv,
		  __entry->inline_send, __entry->inline_recv,
		  __get_str(status))
);

/*
 * A received message the transport could not use as the reply it claims
 * to be, or an RDMA_ERROR.  kind is one word (rdma_error, short,
 * malformed, bad_chunk, duplicate, unknown_xid); detail is what the
 * kernel log says of it.  xid is 0 when the message was too short to
 * hold one.
 */
TRACE_EVENT(rpcrdma_rs_reply_error,
	TP_PROTO(const char *peer, u32 xid, const char *kind, size_t kind_len,
		 const char *detail, size_t detail_len),
	TP_ARGS(peer, xid, kind, kind_len, detail, detail_len),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, xid)
		__string_len(kind, kind, kind_len)
		__string_len(detail, detail, detail_len)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->xid = xid;
		__assign_str(kind);
		__assign_str(detail);
	),
	TP_printk("peer=%s xid=0x%08x kind=%s detail=%s", __get_str(peer),
		  __entry->xid, __get_str(kind), __get_str(detail))
);

/* The server's credit grant changed (the first reply of a connection
 * changes it from 1). */
TRACE_EVENT(rpcrdma_rs_credits,
	TP_PROTO(const char *peer, u32 old, u32 new),
	TP_ARGS(peer, old, new),
	TP_STRUCT__entry(
		__string(peer, peer)
		__field(u32, old)
		__field(u32, new)
	),
	TP_fast_assign(
		__assign_str(peer);
		__entry->old = old;
		__entry->new = new;
	),
	TP_printk("peer=%s old=%u new=%u", __get_str(peer), __entry->old,
		  __entry->new)
);

/*
 * A memory region's REG_MR or LOCAL_INV failed (not flushed: flushes
 * follow every connection loss).  mr is the region's index in its
 * connection's pool; status the work completion status.
 */
TRACE_EVENT(rpcrdma_rs_mr_error,
	TP_PROTO(const char *peer, const char *op, size_t op_len, u32 mr,
		 u32 status),
	TP_ARGS(peer, op, op_len, mr, status),
	TP_STRUCT__entry(
		__string(peer, peer)
		__string_len(op, op, op_len)
		__field(u32, mr)
		__field(u32, status)
	),
	TP_fast_assign(
		__assign_str(peer);
		__assign_str(op);
		__entry->mr = mr;
		__entry->status = status;
	),
	TP_printk("peer=%s op=%s mr=%u status=%s (%u)", __get_str(peer),
		  __get_str(op), __entry->mr,
		  rdma_show_wc_status(__entry->status), __entry->status)
);

/*
 * An RDMA device is going away.  Each connection through it is lost
 * after this, with rpcrdma_rs_disconnect reason=DEVICE_REMOVAL.  It also
 * fires for every device when the module unloads (no connection is left
 * then).
 */
TRACE_EVENT(rpcrdma_rs_device_removal,
	TP_PROTO(const char *device, size_t device_len, u32 index),
	TP_ARGS(device, device_len, index),
	TP_STRUCT__entry(
		__string_len(device, device, device_len)
		__field(u32, index)
	),
	TP_fast_assign(
		__assign_str(device);
		__entry->index = index;
	),
	TP_printk("device=%s index=%u", __get_str(device), __entry->index)
);

#endif /* RPCRDMA_RS_TRACE_H */

/*
 * Out of tree, define_trace.h finds this file through the include path:
 * Kbuild adds $(src)/include.
 */
#undef TRACE_INCLUDE_PATH
#define TRACE_INCLUDE_PATH .
#undef TRACE_INCLUDE_FILE
#define TRACE_INCLUDE_FILE rpcrdma_rs_trace
#include <trace/define_trace.h>

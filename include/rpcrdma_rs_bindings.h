/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The C declarations bindgen turns into rust/bindings/generated.rs.
 * Only what the module uses is generated: see the allowlists in Kbuild.
 */
#include <linux/debugfs.h>
#include <linux/seq_file.h>
#include <rdma/ib_verbs.h>
#include <rdma/rdma_cm.h>
#include <linux/sunrpc/xprt.h>
#include <linux/sunrpc/rpc_rdma.h>

#include "rpcrdma_rs_helpers.h"
#include "rpcrdma_rs_params.h"
#include "rpcrdma_rs_trace_calls.h"

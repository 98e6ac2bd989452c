/* SPDX-License-Identifier: GPL-2.0 */
/* What the peer uses of rdma-core, for bindgen. */
#include <infiniband/verbs.h>
#include <rdma/rdma_cma.h>

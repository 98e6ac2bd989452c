// SPDX-License-Identifier: GPL-2.0

//! librdmacm and libibverbs, as bindgen sees <rdma/rdma_cma.h> and
//! <infiniband/verbs.h>, and the shim's exported data-path verbs.

#![allow(
    non_upper_case_globals,
    non_camel_case_types,
    non_snake_case,
    dead_code,
    unnecessary_transmutes,
    clippy::all
)]

include!(concat!(env!("OUT_DIR"), "/verbs.rs"));

unsafe extern "C" {
    pub fn peer_ibv_post_send(
        qp: *mut ibv_qp,
        wr: *mut ibv_send_wr,
        bad_wr: *mut *mut ibv_send_wr,
    ) -> ::std::os::raw::c_int;
    pub fn peer_ibv_post_recv(
        qp: *mut ibv_qp,
        wr: *mut ibv_recv_wr,
        bad_wr: *mut *mut ibv_recv_wr,
    ) -> ::std::os::raw::c_int;
    pub fn peer_ibv_poll_cq(
        cq: *mut ibv_cq,
        num_entries: ::std::os::raw::c_int,
        wc: *mut ibv_wc,
    ) -> ::std::os::raw::c_int;
    pub fn peer_ibv_req_notify_cq(
        cq: *mut ibv_cq,
        solicited_only: ::std::os::raw::c_int,
    ) -> ::std::os::raw::c_int;
}

# tests/mpi_bugs: small MPI programs with the bugs that hang real jobs, and
# correct ones (each says in its header what scout must say about it, and
# "scout-expect: KIND", which bench/mpi-bugs.sh reads); built by `make`
# (README runs one). Included by Makefile.am.
MPI_BUGS = \
	tests/mpi_bugs/coll_allgather_alltoall \
	tests/mpi_bugs/coll_args_ok \
	tests/mpi_bugs/coll_bcast_reduce \
	tests/mpi_bugs/coll_comm \
	tests/mpi_bugs/coll_comm_swap \
	tests/mpi_bugs/coll_extra_barrier \
	tests/mpi_bugs/coll_finalized \
	tests/mpi_bugs/exit_early \
	tests/mpi_bugs/coll_gather_root \
	tests/mpi_bugs/coll_loop_count \
	tests/mpi_bugs/coll_ok \
	tests/mpi_bugs/coll_order \
	tests/mpi_bugs/coll_reduce_root \
	tests/mpi_bugs/coll_root \
	tests/mpi_bugs/coll_scatter_root \
	tests/mpi_bugs/coll_skip_branch \
	tests/mpi_bugs/icoll_bcast_root \
	tests/mpi_bugs/icoll_skip \
	tests/mpi_bugs/mpi_error_rank \
	tests/mpi_bugs/ok_alltoallv \
	tests/mpi_bugs/ok_any_source \
	tests/mpi_bugs/ok_comm_dup \
	tests/mpi_bugs/ok_errors_return \
	tests/mpi_bugs/ok_gatherv_scatterv \
	tests/mpi_bugs/ok_halo_waitall \
	tests/mpi_bugs/ok_waitall_status \
	tests/mpi_bugs/ok_iallreduce \
	tests/mpi_bugs/ok_ibarrier_test \
	tests/mpi_bugs/ok_large_sendrecv \
	tests/mpi_bugs/ok_persistent \
	tests/mpi_bugs/ok_probe \
	tests/mpi_bugs/ok_reduce_scatter \
	tests/mpi_bugs/ok_rotating_root \
	tests/mpi_bugs/ok_scan \
	tests/mpi_bugs/ok_sendrecv_ring \
	tests/mpi_bugs/ok_split_comm \
	tests/mpi_bugs/ok_ssend_ordered \
	tests/mpi_bugs/ok_waitany \
	tests/mpi_bugs/p2p_any_source_count \
	tests/mpi_bugs/p2p_comm \
	tests/mpi_bugs/p2p_halo_tag \
	tests/mpi_bugs/p2p_irecv_tag \
	tests/mpi_bugs/p2p_irecv_wait \
	tests/mpi_bugs/p2p_isend_finalized \
	tests/mpi_bugs/p2p_issend_wait \
	tests/mpi_bugs/p2p_missing_send \
	tests/mpi_bugs/p2p_ok \
	tests/mpi_bugs/p2p_probe_tag \
	tests/mpi_bugs/p2p_recv_barrier \
	tests/mpi_bugs/p2p_recv_finalized \
	tests/mpi_bugs/p2p_recv_recv \
	tests/mpi_bugs/p2p_ring_recv \
	tests/mpi_bugs/p2p_ring_send_large \
	tests/mpi_bugs/p2p_ring_ssend \
	tests/mpi_bugs/p2p_send_send_large \
	tests/mpi_bugs/p2p_sendrecv_tag \
	tests/mpi_bugs/p2p_ssend_self \
	tests/mpi_bugs/p2p_ssend_ssend \
	tests/mpi_bugs/p2p_tag \
	tests/mpi_bugs/p2p_wait_ring \
	tests/mpi_bugs/p2p_waitall_missing \
	tests/mpi_bugs/p2p_wrong_source \
	tests/mpi_bugs/spin_outside \
	tests/mpi_bugs/stop_self
noinst_PROGRAMS += $(MPI_BUGS)
tests_mpi_bugs_coll_allgather_alltoall_SOURCES = tests/mpi_bugs/coll_allgather_alltoall.c
tests_mpi_bugs_coll_allgather_alltoall_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_allgather_alltoall_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_args_ok_SOURCES = tests/mpi_bugs/coll_args_ok.c
tests_mpi_bugs_coll_args_ok_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_args_ok_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_bcast_reduce_SOURCES = tests/mpi_bugs/coll_bcast_reduce.c
tests_mpi_bugs_coll_bcast_reduce_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_bcast_reduce_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_comm_SOURCES = tests/mpi_bugs/coll_comm.c
tests_mpi_bugs_coll_comm_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_comm_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_comm_swap_SOURCES = tests/mpi_bugs/coll_comm_swap.c
tests_mpi_bugs_coll_comm_swap_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_comm_swap_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_extra_barrier_SOURCES = tests/mpi_bugs/coll_extra_barrier.c
tests_mpi_bugs_coll_extra_barrier_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_extra_barrier_LDADD = $(MPI_LIBS)
tests_mpi_bugs_exit_early_SOURCES = tests/mpi_bugs/exit_early.c
tests_mpi_bugs_exit_early_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_exit_early_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_finalized_SOURCES = tests/mpi_bugs/coll_finalized.c
tests_mpi_bugs_coll_finalized_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_finalized_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_gather_root_SOURCES = tests/mpi_bugs/coll_gather_root.c
tests_mpi_bugs_coll_gather_root_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_gather_root_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_loop_count_SOURCES = tests/mpi_bugs/coll_loop_count.c
tests_mpi_bugs_coll_loop_count_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_loop_count_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_ok_SOURCES = tests/mpi_bugs/coll_ok.c
tests_mpi_bugs_coll_ok_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_ok_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_order_SOURCES = tests/mpi_bugs/coll_order.c
tests_mpi_bugs_coll_order_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_order_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_reduce_root_SOURCES = tests/mpi_bugs/coll_reduce_root.c
tests_mpi_bugs_coll_reduce_root_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_reduce_root_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_root_SOURCES = tests/mpi_bugs/coll_root.c
tests_mpi_bugs_coll_root_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_root_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_scatter_root_SOURCES = tests/mpi_bugs/coll_scatter_root.c
tests_mpi_bugs_coll_scatter_root_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_scatter_root_LDADD = $(MPI_LIBS)
tests_mpi_bugs_coll_skip_branch_SOURCES = tests/mpi_bugs/coll_skip_branch.c
tests_mpi_bugs_coll_skip_branch_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_coll_skip_branch_LDADD = $(MPI_LIBS)
tests_mpi_bugs_icoll_bcast_root_SOURCES = tests/mpi_bugs/icoll_bcast_root.c
tests_mpi_bugs_icoll_bcast_root_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_icoll_bcast_root_LDADD = $(MPI_LIBS)
tests_mpi_bugs_icoll_skip_SOURCES = tests/mpi_bugs/icoll_skip.c
tests_mpi_bugs_icoll_skip_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_icoll_skip_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_alltoallv_SOURCES = tests/mpi_bugs/ok_alltoallv.c
tests_mpi_bugs_ok_alltoallv_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_alltoallv_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_any_source_SOURCES = tests/mpi_bugs/ok_any_source.c
tests_mpi_bugs_ok_any_source_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_any_source_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_comm_dup_SOURCES = tests/mpi_bugs/ok_comm_dup.c
tests_mpi_bugs_ok_comm_dup_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_comm_dup_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_gatherv_scatterv_SOURCES = tests/mpi_bugs/ok_gatherv_scatterv.c
tests_mpi_bugs_ok_gatherv_scatterv_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_gatherv_scatterv_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_halo_waitall_SOURCES = tests/mpi_bugs/ok_halo_waitall.c
tests_mpi_bugs_ok_waitall_status_SOURCES = tests/mpi_bugs/ok_waitall_status.c
tests_mpi_bugs_ok_waitall_status_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_waitall_status_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_halo_waitall_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_halo_waitall_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_iallreduce_SOURCES = tests/mpi_bugs/ok_iallreduce.c
tests_mpi_bugs_ok_iallreduce_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_iallreduce_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_ibarrier_test_SOURCES = tests/mpi_bugs/ok_ibarrier_test.c
tests_mpi_bugs_ok_ibarrier_test_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_ibarrier_test_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_large_sendrecv_SOURCES = tests/mpi_bugs/ok_large_sendrecv.c
tests_mpi_bugs_ok_large_sendrecv_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_large_sendrecv_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_persistent_SOURCES = tests/mpi_bugs/ok_persistent.c
tests_mpi_bugs_ok_persistent_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_persistent_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_probe_SOURCES = tests/mpi_bugs/ok_probe.c
tests_mpi_bugs_ok_probe_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_probe_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_reduce_scatter_SOURCES = tests/mpi_bugs/ok_reduce_scatter.c
tests_mpi_bugs_ok_reduce_scatter_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_reduce_scatter_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_rotating_root_SOURCES = tests/mpi_bugs/ok_rotating_root.c
tests_mpi_bugs_ok_rotating_root_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_rotating_root_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_scan_SOURCES = tests/mpi_bugs/ok_scan.c
tests_mpi_bugs_ok_scan_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_scan_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_sendrecv_ring_SOURCES = tests/mpi_bugs/ok_sendrecv_ring.c
tests_mpi_bugs_ok_sendrecv_ring_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_sendrecv_ring_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_split_comm_SOURCES = tests/mpi_bugs/ok_split_comm.c
tests_mpi_bugs_ok_split_comm_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_split_comm_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_ssend_ordered_SOURCES = tests/mpi_bugs/ok_ssend_ordered.c
tests_mpi_bugs_ok_ssend_ordered_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_ssend_ordered_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_waitany_SOURCES = tests/mpi_bugs/ok_waitany.c
tests_mpi_bugs_ok_waitany_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_waitany_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_any_source_count_SOURCES = tests/mpi_bugs/p2p_any_source_count.c
tests_mpi_bugs_p2p_any_source_count_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_any_source_count_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_comm_SOURCES = tests/mpi_bugs/p2p_comm.c
tests_mpi_bugs_p2p_comm_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_comm_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_halo_tag_SOURCES = tests/mpi_bugs/p2p_halo_tag.c
tests_mpi_bugs_p2p_halo_tag_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_halo_tag_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_irecv_tag_SOURCES = tests/mpi_bugs/p2p_irecv_tag.c
tests_mpi_bugs_p2p_irecv_tag_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_irecv_tag_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_irecv_wait_SOURCES = tests/mpi_bugs/p2p_irecv_wait.c
tests_mpi_bugs_p2p_irecv_wait_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_irecv_wait_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_isend_finalized_SOURCES = tests/mpi_bugs/p2p_isend_finalized.c
tests_mpi_bugs_p2p_isend_finalized_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_isend_finalized_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_issend_wait_SOURCES = tests/mpi_bugs/p2p_issend_wait.c
tests_mpi_bugs_p2p_issend_wait_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_issend_wait_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_missing_send_SOURCES = tests/mpi_bugs/p2p_missing_send.c
tests_mpi_bugs_p2p_missing_send_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_missing_send_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_ok_SOURCES = tests/mpi_bugs/p2p_ok.c
tests_mpi_bugs_p2p_ok_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_ok_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_probe_tag_SOURCES = tests/mpi_bugs/p2p_probe_tag.c
tests_mpi_bugs_p2p_probe_tag_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_probe_tag_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_recv_barrier_SOURCES = tests/mpi_bugs/p2p_recv_barrier.c
tests_mpi_bugs_p2p_recv_barrier_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_recv_barrier_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_recv_finalized_SOURCES = tests/mpi_bugs/p2p_recv_finalized.c
tests_mpi_bugs_p2p_recv_finalized_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_recv_finalized_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_recv_recv_SOURCES = tests/mpi_bugs/p2p_recv_recv.c
tests_mpi_bugs_p2p_recv_recv_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_recv_recv_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_ring_recv_SOURCES = tests/mpi_bugs/p2p_ring_recv.c
tests_mpi_bugs_p2p_ring_recv_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_ring_recv_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_ring_send_large_SOURCES = tests/mpi_bugs/p2p_ring_send_large.c
tests_mpi_bugs_p2p_ring_send_large_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_ring_send_large_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_ring_ssend_SOURCES = tests/mpi_bugs/p2p_ring_ssend.c
tests_mpi_bugs_p2p_ring_ssend_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_ring_ssend_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_send_send_large_SOURCES = tests/mpi_bugs/p2p_send_send_large.c
tests_mpi_bugs_p2p_send_send_large_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_send_send_large_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_sendrecv_tag_SOURCES = tests/mpi_bugs/p2p_sendrecv_tag.c
tests_mpi_bugs_p2p_sendrecv_tag_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_sendrecv_tag_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_ssend_self_SOURCES = tests/mpi_bugs/p2p_ssend_self.c
tests_mpi_bugs_p2p_ssend_self_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_ssend_self_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_ssend_ssend_SOURCES = tests/mpi_bugs/p2p_ssend_ssend.c
tests_mpi_bugs_p2p_ssend_ssend_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_ssend_ssend_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_tag_SOURCES = tests/mpi_bugs/p2p_tag.c
tests_mpi_bugs_p2p_tag_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_tag_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_wait_ring_SOURCES = tests/mpi_bugs/p2p_wait_ring.c
tests_mpi_bugs_p2p_wait_ring_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_wait_ring_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_waitall_missing_SOURCES = tests/mpi_bugs/p2p_waitall_missing.c
tests_mpi_bugs_p2p_waitall_missing_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_waitall_missing_LDADD = $(MPI_LIBS)
tests_mpi_bugs_p2p_wrong_source_SOURCES = tests/mpi_bugs/p2p_wrong_source.c
tests_mpi_bugs_p2p_wrong_source_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_p2p_wrong_source_LDADD = $(MPI_LIBS)
tests_mpi_bugs_spin_outside_SOURCES = tests/mpi_bugs/spin_outside.c
tests_mpi_bugs_spin_outside_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_spin_outside_LDADD = $(MPI_LIBS)
tests_mpi_bugs_stop_self_SOURCES = tests/mpi_bugs/stop_self.c
tests_mpi_bugs_stop_self_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_stop_self_LDADD = $(MPI_LIBS)
tests_mpi_bugs_mpi_error_rank_SOURCES = tests/mpi_bugs/mpi_error_rank.c
tests_mpi_bugs_mpi_error_rank_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_mpi_error_rank_LDADD = $(MPI_LIBS)
tests_mpi_bugs_ok_errors_return_SOURCES = tests/mpi_bugs/ok_errors_return.c
tests_mpi_bugs_ok_errors_return_CPPFLAGS = $(MPI_CFLAGS)
tests_mpi_bugs_ok_errors_return_LDADD = $(MPI_LIBS)

# The engine: actor thread, transport, wire codec, membership, collectives
# glue, point-to-point and the collab_* API (include/mpi_collab.h).
set(_eng ${CMAKE_CURRENT_LIST_DIR})
# Its tests: selftests in tests/unit/engine, scenario programs in tests/swarm.
set(_eng_unit ${PROJECT_SOURCE_DIR}/tests/unit/engine)
set(_eng_swarm ${PROJECT_SOURCE_DIR}/tests/swarm)

# Classes that do not need the collective algorithms; the unit selftests
# link these alone (an OBJECT library's objects cannot be re-exported, so
# they are compiled a second time for collab_engine).
set(COLLAB_ENGINE_BASE
    ${_eng}/cl_wire.c
    ${_eng}/cl_member.c
    ${_eng}/cl_member_change.c
    ${_eng}/cl_p2p.c
    ${_eng}/cl_flow.c
    ${_eng}/cl_handshake.c
    ${_eng}/cl_transport.c
    ${_eng}/cl_transport_poll.c
    ${_eng}/cl_transport_recv.c
    ${_eng}/cl_transport_limits.c
    ${_eng}/cl_transport_rate.c
    ${_eng}/cl_transport_stripe.c
    ${_eng}/cl_transport_connect.c
    ${_eng}/cl_stripe_probe.c
    ${_eng}/cl_tcpinfo.c
    ${_eng}/cl_linkrate.c
    ${_eng}/cl_shm.c
    ${_eng}/cl_shm_link.c
    ${_eng}/cl_elmsg.c
    ${_eng}/cl_sync_agree.c
    ${_eng}/cl_seal.c
    ${_eng}/cl_timer.c
    ${_eng}/cl_viewack.c
    ${_eng}/cl_held.c
    ${_eng}/cl_reqq.c)

collab_area(collab_engine ${COLLAB_ENGINE_BASE}
    ${_eng}/cl_comm.c
    ${_eng}/cl_request.c
    ${_eng}/cl_engine.c
    ${_eng}/cl_engine_clock.c
    ${_eng}/cl_engine_fanout.c
    ${_eng}/cl_engine_member.c
    ${_eng}/cl_engine_member_ctx.c
    ${_eng}/cl_engine_match.c
    ${_eng}/cl_engine_suspect.c
    ${_eng}/cl_engine_leave.c
    ${_eng}/cl_engine_join.c
    ${_eng}/cl_engine_join_ctx.c
    ${_eng}/cl_engine_coll.c
    ${_eng}/cl_engine_coll_ctx.c
    ${_eng}/cl_engine_coll_start.c
    ${_eng}/cl_engine_coll_env.c
    ${_eng}/cl_engine_gens.c
    ${_eng}/cl_engine_groups.c
    ${_eng}/cl_engine_route.c
    ${_eng}/cl_engine_p2p.c
    ${_eng}/cl_engine_flow.c
    ${_eng}/cl_api.c
    ${_eng}/cl_api_coll.c
    ${_eng}/cl_api_hier.c
    ${_eng}/cl_stage.c
    # Small collectives of two same-host peers on the calling thread.
    ${_eng}/cl_fast.c
    ${_eng}/cl_fast_group.c
    ${_eng}/cl_engine_fast.c
    ${_eng}/cl_engine_report.c
    ${_eng}/cl_engine_rate.c
    ${_eng}/cl_engine_dialback.c
    ${_eng}/cl_engine_relay.c
    # The elastic swarm: admission at step boundaries, state sync.
    ${_eng}/cl_engine_elastic.c
    ${_eng}/cl_engine_elastic_adm.c
    ${_eng}/cl_engine_elastic_ctx.c
    ${_eng}/cl_engine_elastic_hooks.c
    ${_eng}/cl_engine_pause.c
    ${_eng}/cl_engine_admitter.c
    ${_eng}/cl_engine_admittee.c
    ${_eng}/cl_engine_sync.c
    ${_eng}/cl_engine_sync_bound.c
    ${_eng}/cl_engine_donor.c
    ${_eng}/cl_engine_audit.c
    ${_eng}/cl_engine_checkpoint.c
    # Who may send what (docs/security.md), and the round after a pause.
    ${_eng}/cl_engine_authority.c
    ${_eng}/cl_engine_auth_probe.c)

add_library(collab_engine_base OBJECT ${COLLAB_ENGINE_BASE})
target_include_directories(collab_engine_base PUBLIC ${COLLAB_CORE_INCLUDES})
target_link_libraries(collab_engine_base PUBLIC ${COLLAB_CORE_DEPS})

foreach(t cl_wire_test cl_member_test cl_p2p_test cl_flow_test cl_transport_test cl_elmsg_test cl_shm_test
    cl_seal_test cl_sync_agree_test cl_transport_fd_test cl_timer_test cl_held_test cl_reqq_test
    cl_linkrate_test cl_stripe_test cl_stripe_probe_test)
  collab_selftest(${t} ${_eng_unit}/${t}.c collab_engine_base collab_elastic collab_util)
endforeach()
# The wire codec's selftest is two files.
target_sources(cl_wire_test PRIVATE ${_eng_unit}/cl_wire_test_ext.c)
# The authority alone (the gate and its round after a pause), on a fake
# context (real records and timer set; the clock, the roles this peer
# holds, the ban, PROBE and JOIN the test's): no sockets, no engine.
collab_selftest(cl_auth_test ${_eng_unit}/cl_auth_test.c collab_engine_base collab_elastic
                collab_util)
target_sources(cl_auth_test PRIVATE ${_eng}/cl_engine_authority.c ${_eng}/cl_engine_auth_probe.c)
# The authority's round after a pause, on the same fake context.
collab_selftest(cl_auth_probe_test ${_eng_unit}/cl_auth_probe_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_auth_probe_test PRIVATE ${_eng}/cl_engine_authority.c
               ${_eng}/cl_engine_auth_probe.c)

# The point-to-point component alone (with its credit), on a fake context:
# no sockets, no engine.
collab_selftest(cl_engine_p2p_test ${_eng_unit}/cl_engine_p2p_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_p2p_test PRIVATE ${_eng}/cl_engine_p2p.c ${_eng}/cl_engine_flow.c
               ${_eng}/cl_comm.c ${_eng}/cl_request.c ${_eng}/cl_stage.c
               ${PROJECT_SOURCE_DIR}/src/coll/cl_dtype.c)

# The donor component alone, on a fake context: no sockets, no engine.
collab_selftest(cl_engine_donor_test ${_eng_unit}/cl_engine_donor_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_donor_test PRIVATE ${_eng}/cl_engine_donor.c)
# The admitter alone, on a fake context over real peer records and a real
# world stream.
collab_selftest(cl_engine_admitter_test ${_eng_unit}/cl_engine_admitter_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_admitter_test PRIVATE ${_eng}/cl_engine_admitter.c)
# The admittee alone, on a fake context over real peer records, a real
# world stream and real requests.
collab_selftest(cl_engine_admittee_test ${_eng_unit}/cl_engine_admittee_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_admittee_test PRIVATE ${_eng}/cl_engine_admittee.c ${_eng}/cl_engine_sync.c
               ${_eng}/cl_engine_sync_bound.c
               ${_eng}/cl_comm.c
               ${_eng}/cl_request.c ${_eng}/cl_stage.c ${PROJECT_SOURCE_DIR}/src/coll/cl_dtype.c)
# The elastic layer's logic alone, on a fake context over real peer
# records (no engine; the world stream a handle); the components a view
# change calls are created on stubs, the others linked only.
collab_selftest(cl_engine_elastic_test ${_eng_unit}/cl_engine_elastic_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_elastic_test PRIVATE ${_eng}/cl_engine_elastic.c
               ${_eng}/cl_engine_elastic_adm.c
               ${_eng}/cl_engine_admitter.c ${_eng}/cl_engine_admittee.c ${_eng}/cl_engine_donor.c
               ${_eng}/cl_engine_audit.c ${_eng}/cl_engine_checkpoint.c ${_eng}/cl_engine_pause.c
               ${_eng}/cl_engine_sync.c ${_eng}/cl_engine_sync_bound.c ${_eng}/cl_comm.c
               ${_eng}/cl_request.c ${_eng}/cl_stage.c ${PROJECT_SOURCE_DIR}/src/coll/cl_dtype.c)
# test_adopt counts completions.
target_link_options(cl_engine_elastic_test PRIVATE -Wl,--wrap=cl_request_complete)
# The periodic state check alone, on a fake context.
collab_selftest(cl_engine_audit_test ${_eng_unit}/cl_engine_audit_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_audit_test PRIVATE ${_eng}/cl_engine_audit.c)
# The failure detector alone, on a fake context over real peer records.
collab_selftest(cl_engine_suspect_test ${_eng_unit}/cl_engine_suspect_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_suspect_test PRIVATE ${_eng}/cl_engine_suspect.c)
# The reports to the monitors alone, on a fake context.
collab_selftest(cl_engine_report_test ${_eng_unit}/cl_engine_report_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_report_test PRIVATE ${_eng}/cl_engine_report.c)
# The departures alone, on a fake context (real records and timer set;
# the clock, send and the communicators entered are the test's).
collab_selftest(cl_engine_leave_test ${_eng_unit}/cl_engine_leave_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_leave_test PRIVATE ${_eng}/cl_engine_leave.c)
# The pause alone, on a fake context (real records and timer set; the
# clocks, membership, the members asked and the collectives' resumption
# the test's).
collab_selftest(cl_engine_pause_test ${_eng_unit}/cl_engine_pause_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_pause_test PRIVATE ${_eng}/cl_engine_pause.c)
# The relay alone, on a fake context (real records, timer sets and
# identities; the clock, links, send and delivery the test's).
collab_selftest(cl_engine_relay_test ${_eng_unit}/cl_engine_relay_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_relay_test PRIVATE ${_eng}/cl_engine_relay.c)
# The collective streams' timer (the tick of running collectives, device
# input), on a fake engine (a real timer set and stream; the collective,
# the clock and the parts around the streams stubbed).
collab_selftest(cl_engine_coll_test ${_eng_unit}/cl_engine_coll_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_coll_test PRIVATE ${_eng}/cl_engine_coll.c ${_eng}/cl_engine_gens.c
               ${PROJECT_SOURCE_DIR}/src/coll/cl_dtype.c)

# The collective streams alone, on fake contexts: two peers over real
# peer records and real all-reduces, the messages one sends handed to the
# other; the other components the streams ask stubbed.
collab_selftest(cl_engine_streams_test ${_eng_unit}/cl_engine_streams_test.c collab_engine_base
                collab_coll collab_reduce collab_elastic collab_util)
target_sources(cl_engine_streams_test PRIVATE ${_eng}/cl_engine_coll.c
               ${_eng}/cl_engine_coll_start.c ${_eng}/cl_engine_coll_env.c
               ${_eng}/cl_engine_route.c ${_eng}/cl_engine_fast.c ${_eng}/cl_engine_gens.c
               ${_eng}/cl_comm.c ${_eng}/cl_request.c ${_eng}/cl_stage.c ${_eng}/cl_fast.c
               ${_eng}/cl_fast_group.c)

# Membership's deadlines (the join's timer, the matchmaking window) and the
# coordinator's tenure, on a fake engine: _member, _join and _suspect
# over real records and a real timer set; the rest stubbed by the test,
# the transport's calls recorded.
collab_selftest(cl_engine_member_test ${_eng_unit}/cl_engine_member_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_member_test PRIVATE ${_eng}/cl_engine_member.c
               ${_eng}/cl_engine_member_ctx.c ${_eng}/cl_engine_match.c
               ${_eng}/cl_engine_join.c
               ${_eng}/cl_engine_join_ctx.c ${_eng}/cl_engine_suspect.c)
target_link_options(cl_engine_member_test PRIVATE
  -Wl,--wrap=cl_transport_send,--wrap=cl_transport_reply,--wrap=cl_transport_connect
  -Wl,--wrap=cl_transport_has_link,--wrap=cl_transport_address,--wrap=cl_transport_link_version
  -Wl,--wrap=cl_transport_ban,--wrap=cl_transport_set_client,--wrap=cl_transport_set_min_version)
# Membership's views alone, on a fake context (real records; the clock,
# the engine's state, the sends and the other components the test's).
# The join's settings rule (eng_settings_conflict) is the real one.
collab_selftest(cl_engine_views_test ${_eng_unit}/cl_engine_views_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_views_test PRIVATE ${_eng}/cl_engine_member.c ${_eng}/cl_engine_join.c)
# The join alone, on a fake context (real records and timer set; the
# clock, the engine's state and the transport's calls the test's).
collab_selftest(cl_engine_join_test ${_eng_unit}/cl_engine_join_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_join_test PRIVATE ${_eng}/cl_engine_join.c)
# Matchmaking alone, on a fake context (real records and timer set; the
# clock, the engine's state, the sends, close_group and commit the test's).
collab_selftest(cl_engine_match_test ${_eng_unit}/cl_engine_match_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_match_test PRIVATE ${_eng}/cl_engine_match.c)
# The joiner's state sync alone, on a fake context.
collab_selftest(cl_engine_sync_test ${_eng_unit}/cl_engine_sync_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_sync_test PRIVATE ${_eng}/cl_engine_sync.c
               ${_eng}/cl_engine_sync_bound.c)
# The coordinator's dial-back of a joiner alone, on a fake context (the
# transport's calls recorded, a real timer set).
collab_selftest(cl_engine_dialback_test ${_eng_unit}/cl_engine_dialback_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_dialback_test PRIVATE ${_eng}/cl_engine_dialback.c)
# World all-reduces in several groups alone, on a fake context.
collab_selftest(cl_engine_groups_test ${_eng_unit}/cl_engine_groups_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_groups_test PRIVATE ${_eng}/cl_engine_groups.c)
# The generations of the world group alone, on a fake context.
collab_selftest(cl_engine_gens_test ${_eng_unit}/cl_engine_gens_test.c collab_engine_base
                collab_elastic collab_util)
target_sources(cl_engine_gens_test PRIVATE ${_eng}/cl_engine_gens.c)
# A monitor's checkpoints alone, on a fake context (the fetch runs as the
# real pull of cl_engine_sync.c).
collab_selftest(cl_engine_checkpoint_test ${_eng_unit}/cl_engine_checkpoint_test.c
                collab_engine_base collab_elastic collab_util)
target_sources(cl_engine_checkpoint_test PRIVATE ${_eng}/cl_engine_checkpoint.c
               ${_eng}/cl_engine_sync.c ${_eng}/cl_engine_sync_bound.c)

# Tests of the whole engine need the collective algorithms.
if(TARGET collab_coll AND TARGET collab_reduce AND TARGET collab_util)
  set(COLLAB_ENGINE_ALL collab_engine collab_elastic collab_coll collab_reduce collab_util)
  collab_selftest(cl_api_test ${_eng_unit}/cl_api_test.c ${COLLAB_ENGINE_ALL})
  # The same-host fast path's protocol: two threads on two mappings.
  collab_selftest(cl_fast_test ${_eng_unit}/cl_fast_test.c ${COLLAB_ENGINE_ALL})
  # The fast path among 3 and 4 members: threads, and processes killed
  # or stopped amid big all-reduces.
  collab_selftest(cl_fast_group_test ${_eng_unit}/cl_fast_group_test.c ${COLLAB_ENGINE_ALL})
  # A group's one grant: fake engines agree on the sequence to switch at.
  collab_selftest(cl_fast_agree_test ${_eng_unit}/cl_fast_agree_test.c ${COLLAB_ENGINE_ALL})
  # The group's fast and engine paths interleaved at random: every member
  # numbers every call alike.
  collab_selftest(cl_fast_mix_test ${_eng_unit}/cl_fast_mix_test.c ${COLLAB_ENGINE_ALL})
  # Device buffers staged through pinned memory, with a fake device.
  add_executable(cl_stage_test ${_eng_unit}/cl_stage_test.c ${_eng_swarm}/test_peers.c)
  target_include_directories(cl_stage_test PRIVATE ${_eng_swarm} ${PROJECT_SOURCE_DIR}/tests/unit)
  target_link_libraries(cl_stage_test PRIVATE ${COLLAB_ENGINE_ALL})
  add_test(NAME cl_stage_test COMMAND cl_stage_test)
  add_test(NAME cl_stage_mixed COMMAND cl_stage_test mixed)
  set_tests_properties(cl_stage_test PROPERTIES TIMEOUT 120 LABELS selftest)
  set_tests_properties(cl_stage_mixed PROPERTIES TIMEOUT 120 LABELS swarm)
  add_test(NAME cl_stage_mixed_verify COMMAND cl_stage_test mixed verify)
  set_tests_properties(cl_stage_mixed_verify PROPERTIES TIMEOUT 120 LABELS swarm)
  add_test(NAME cl_stage_mixed_whole COMMAND cl_stage_test mixed whole)
  set_tests_properties(cl_stage_mixed_whole PROPERTIES TIMEOUT 120 LABELS swarm)
  # Real processes over loopback (see the scenarios in tests/swarm/test_swarm.c).
  add_executable(test_swarm ${_eng_swarm}/test_swarm.c ${_eng_swarm}/test_swarm_util.c
    ${_eng_swarm}/test_swarm_groups.c
    ${_eng_swarm}/test_swarm_weight.c ${_eng_swarm}/test_swarm_leave.c
    ${_eng_swarm}/test_swarm_monitor.c ${_eng_swarm}/test_swarm_shm.c
    ${_eng_swarm}/test_swarm_shm_p2p.c ${_eng_swarm}/test_swarm_join.c
    ${_eng_swarm}/test_swarm_fast.c ${_eng_swarm}/test_swarm_fastgroup.c
    ${_eng_swarm}/test_swarm_unexpected.c ${_eng_swarm}/test_swarm_flow.c
    ${_eng_swarm}/test_swarm_early.c
    ${_eng_swarm}/test_swarm_streams.c ${_eng_swarm}/test_swarm_bw.c
    ${_eng_swarm}/test_peers.c)
  target_link_libraries(test_swarm PRIVATE ${COLLAB_ENGINE_ALL})
  foreach(sc basic kill kill0 stop goodbye restart client strict errors passphrase unreachable
      standby groups weight sigterm leave strict_leave group_wait monitor monitor_fast shm_kill
      shm_p2p shm_p2p_kill fast_bits fast_kill
      fast_stop engine_stop fast_big_kill fast_big_stop fast_group3_kill fast_group4_kill
      fast_group4_stop fast_group_rooted unexpected flow flow_v5 flow_net
      early early_comms
      streams bandwidth bandwidth_v6 bandwidth_claims adaptive ports)
    add_test(NAME swarm_${sc} COMMAND test_swarm ${sc})
    set_tests_properties(swarm_${sc} PROPERTIES TIMEOUT 150 LABELS swarm)
  endforeach()
  # Admission at step boundaries and state sync (scenarios in tests/swarm/test_elastic.c).
  add_executable(test_elastic ${_eng_swarm}/test_elastic.c ${_eng_swarm}/test_peers.c)
  target_link_libraries(test_elastic PRIVATE ${COLLAB_ENGINE_ALL})
  foreach(sc join_marks join_config join_learned straggler diverge join_groups rank_required
      fast_readmit diverge_end diverge_kill)
    add_test(NAME elastic_${sc} COMMAND test_elastic ${sc})
    set_tests_properties(elastic_${sc} PROPERTIES TIMEOUT 120 LABELS "swarm;elastic")
  endforeach()
endif()

include(${PROJECT_SOURCE_DIR}/tests/fuzz/wire/fuzz.cmake OPTIONAL)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/elmsg/fuzz.cmake OPTIONAL)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/handshake/fuzz.cmake OPTIONAL)

include_guard(GLOBAL)
# End-to-end tests: real processes, real signals (collab-run's --chaos),
# the example trainer built with mpicc.mpich.  Each test is a shell script
# in this folder; the ones that need the elastic swarm (joins, failures,
# stragglers) carry the label `elastic`.

set(_e2e_dir ${CMAKE_CURRENT_LIST_DIR})
set(_e2e_env
  E2E_RUN=${COLLAB_RUN}
  E2E_TRAINER=${COLLAB_TRAINER}
  E2E_MPIEXEC=${COLLAB_MPIEXEC_MPICH}
  E2E_LIBDIR=${COLLAB_LIBDIR}
  E2E_OUT=${CMAKE_CURRENT_BINARY_DIR}/e2e
  E2E_PYTHON=${COLLAB_PYTHON}
  E2E_MONITOR=${CMAKE_BINARY_DIR}/bin/collab-monitor
  E2E_COLL_CHECK=${COLLAB_COLL_CHECK}
  E2E_HIER_CHECK=${COLLAB_HIER_CHECK})

# collab_e2e(<name> <script> <peers> <timeout> <labels> [args...])
function(collab_e2e name script peers timeout labels)
  add_test(NAME e2e.${name} COMMAND bash ${_e2e_dir}/${script} ${ARGN})
  set_tests_properties(e2e.${name} PROPERTIES
    ENVIRONMENT "${_e2e_env};E2E_NAME=${name}"
    TIMEOUT ${timeout}
    PROCESSORS ${peers}
    LABELS "e2e;${labels}")
  if(NOT name STREQUAL "reference")
    set_tests_properties(e2e.${name} PROPERTIES FIXTURES_REQUIRED e2e_reference)
  endif()
endfunction()

if(COLLAB_MPICC_MPICH)
  collab_e2e(reference reference.sh 4 360 mpich)
  set_tests_properties(e2e.reference PROPERTIES FIXTURES_SETUP e2e_reference)
  collab_e2e(trainer_preload trainer.sh 4 200 ours preload)
  collab_e2e(trainer_replace trainer.sh 4 200 ours replace)
  collab_e2e(trainer_striped trainer.sh 4 200 ours striped)
  collab_e2e(bad_config bad_config.sh 2 900 ours)
  collab_e2e(unreachable_peer unreachable_peer.sh 1 200 ours)
  collab_e2e(unreachable_joiner unreachable_joiner.sh 3 200 "ours;elastic")
  collab_e2e(kill_join kill_join.sh 4 240 "ours;elastic")
  collab_e2e(kill_join_persistent kill_join.sh 4 240 "ours;elastic" persistent)
  collab_e2e(stop stop.sh 4 240 "ours;elastic")
  collab_e2e(kill_two_of_three kill_two_of_three.sh 3 240 "ours;elastic")
  collab_e2e(kill_leader kill_in_allreduce.sh 4 200 "ours;elastic" leader)
  # Slow links in network namespaces (root; skipped elsewhere).
  collab_e2e(early_done early_done.sh 3 200 "ours;elastic" plain)
  collab_e2e(early_done_kill early_done.sh 3 200 "ours;elastic" kill)
  set_tests_properties(e2e.early_done e2e.early_done_kill PROPERTIES SKIP_RETURN_CODE 77)
  collab_e2e(host_leader host_leader.sh 5 300 ours plain)
  collab_e2e(host_leader_kill_member host_leader.sh 5 200 ours kill_member)
  collab_e2e(host_leader_kill_leader host_leader.sh 5 200 ours kill_leader)
  set_tests_properties(e2e.host_leader e2e.host_leader_kill_member e2e.host_leader_kill_leader
    PROPERTIES SKIP_RETURN_CODE 77)
  collab_e2e(measured_bw measured_bw.sh 4 300 "ours;elastic")
  set_tests_properties(e2e.measured_bw PROPERTIES SKIP_RETURN_CODE 77)
  collab_e2e(stripes_auto stripes_auto.sh 2 200 ours capped)
  collab_e2e(stripes_auto_full stripes_auto.sh 2 200 ours full)
  set_tests_properties(e2e.stripes_auto e2e.stripes_auto_full PROPERTIES SKIP_RETURN_CODE 77)
  # Their peers wait on links of 8 to 40 Mbit/s (tbf) and use a few per
  # cent of a core, so ctest may run each beside another test (a subnet
  # of their own each: 10.78, 10.80, 10.81, 10.83, 10.84) instead of
  # holding every core for 2 to 4 idle peers.  The host leaders' tests,
  # on unlimited links, do hold them, and share one subnet (10.85).
  set_tests_properties(e2e.early_done e2e.early_done_kill e2e.measured_bw
    e2e.stripes_auto e2e.stripes_auto_full PROPERTIES PROCESSORS 1)
  set_tests_properties(e2e.host_leader e2e.host_leader_kill_member e2e.host_leader_kill_leader
    PROPERTIES RESOURCE_LOCK netns_10.85)
  collab_e2e(kill_reducer kill_in_allreduce.sh 4 200 "ours;elastic" reducer)
  collab_e2e(kill_sender kill_in_allreduce.sh 4 200 "ours;elastic" sender)
  collab_e2e(chaos_soak chaos_soak.sh 4 260 "ours;elastic")
  collab_e2e(kill_matchmaking kill_matchmaking.sh 4 200 "ours;elastic" member)
  collab_e2e(kill_matchmaking_leader kill_matchmaking.sh 4 200 "ours;elastic" leader)
  collab_e2e(kill_admitter kill_admitter.sh 8 240 "ours;elastic")
  collab_e2e(two_programs two_programs.sh 4 240 "ours;elastic")
  collab_e2e(by_hand by_hand.sh 4 200 "ours;elastic")
  collab_e2e(stop_edge stop_edge.sh 4 200 "ours;elastic")
  collab_e2e(stop_kill_coord stop_kill_coord.sh 4 260 "ours;elastic")
  set_tests_properties(e2e.stop_kill_coord PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
  collab_e2e(stop_startup stop_startup.sh 4 230 "ours;elastic")
  set_tests_properties(e2e.stop_startup PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
  collab_e2e(stop_went_on stop_went_on.sh 4 260 "ours;elastic")
  set_tests_properties(e2e.stop_went_on PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
  collab_e2e(stop_taken_back stop_taken_back.sh 4 260 "ours;elastic")
  set_tests_properties(e2e.stop_taken_back PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
  collab_e2e(stop_newcomer_coord stop_newcomer_coord.sh 4 230 "ours;elastic")
  set_tests_properties(e2e.stop_newcomer_coord PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
  collab_e2e(views_once views_once.sh 4 150 "ours;elastic")
  set_tests_properties(e2e.views_once PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
  collab_e2e(late_joiner_end late_joiner_end.sh 3 200 "ours;elastic")
  set_tests_properties(e2e.late_joiner_end PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
  collab_e2e(groups groups.sh 4 240 "ours;elastic" plain)
  collab_e2e(groups_join groups.sh 4 240 "ours;elastic" join)
  collab_e2e(robust robust.sh 4 300 "ours;robust")
  if(TARGET collab-monitor)
    collab_e2e(monitor monitor.sh 4 200 "ours;elastic;monitor")
    set_tests_properties(e2e.monitor PROPERTIES FIXTURES_REQUIRED "") # no MPICH reference
    collab_e2e(monitor_checkpoint monitor_checkpoint.sh 4 150 "ours;elastic;monitor")
    collab_e2e(monitor_checkpoint_groups monitor_checkpoint.sh 4 150 "ours;elastic;monitor" groups)
    collab_e2e(monitor_restart_alive monitor_restart.sh 4 150 "ours;elastic;monitor" alive)
    collab_e2e(monitor_restart_all monitor_restart.sh 4 150 "ours;elastic;monitor" all)
    set_tests_properties(e2e.monitor_checkpoint e2e.monitor_checkpoint_groups
      e2e.monitor_restart_alive e2e.monitor_restart_all PROPERTIES FIXTURES_REQUIRED "")
    # Client-mode trainers through a relaying monitor (docs/monitor.md §8).
    collab_e2e(relay relay.sh 4 150 "ours;monitor")
    set_tests_properties(e2e.relay PROPERTIES FIXTURES_REQUIRED "")
  endif()
endif()

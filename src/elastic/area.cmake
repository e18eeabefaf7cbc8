# Building blocks of the elastic swarm (docs/elastic.md, docs/state-sync.md):
# the step learner of a collective stream, the registry of state buffers,
# the store of start-up results (both kept in cl_sorted arrays) and the
# coordinator's admission queue and the rank policy it shares with
# cl_member (cl_rank), the split of a large group into small ones per
# collective (cl_moshpit), and the checkpoint files a monitor writes
# (cl_checkpoint).
# Pure logic: the engine owns every socket and calls these classes.
include_guard(GLOBAL)

set(_elastic ${CMAKE_CURRENT_LIST_DIR})
collab_area(collab_elastic
    ${_elastic}/cl_stream.c
    ${_elastic}/cl_statereg.c
    ${_elastic}/cl_startup.c
    ${_elastic}/cl_sorted.c
    ${_elastic}/cl_admission.c
    ${_elastic}/cl_rank.c
    ${_elastic}/cl_moshpit.c
    ${_elastic}/cl_checkpoint.c)

foreach(t cl_stream_test cl_statereg_test cl_startup_test cl_sorted_test cl_admission_test
    cl_moshpit_test cl_rank_test cl_checkpoint_test)
  collab_selftest(${t} ${PROJECT_SOURCE_DIR}/tests/unit/elastic/${t}.c collab_elastic collab_util)
endforeach()

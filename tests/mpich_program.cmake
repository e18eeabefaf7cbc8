include_guard(GLOBAL)
# Programs under test are ordinary MPI programs built with the real MPICH
# compiler wrapper, never with our mpi.h, so that they are unchanged MPICH
# binaries (NEEDED libmpich.so.12) that the faces must run as they are.
#
#   collab_mpich_program(<target> OUTPUT <path> SOURCES <files...>
#                        [DEPENDS <files...>] [LIBS <flags...>])
#
# builds <path> with mpicc.mpich as part of `all`, under the custom target
# <target>.  Test fragments of other areas may use it too.

find_program(COLLAB_MPICC_MPICH NAMES mpicc.mpich)
find_program(COLLAB_MPIEXEC_MPICH NAMES mpiexec.mpich)
if(NOT COLLAB_MPICC_MPICH OR NOT COLLAB_MPIEXEC_MPICH)
  message(WARNING "mpicc.mpich/mpiexec.mpich not found (install mpich and libmpich-dev): "
                  "the MPI test programs, examples and benchmarks are not built")
endif()

function(collab_mpich_program target)
  cmake_parse_arguments(P "" "OUTPUT" "SOURCES;DEPENDS;LIBS" ${ARGN})
  if(NOT P_OUTPUT OR NOT P_SOURCES)
    message(FATAL_ERROR "collab_mpich_program(${target}): OUTPUT and SOURCES are required")
  endif()
  if(NOT COLLAB_MPICC_MPICH)
    return()
  endif()
  set(flags -std=gnu11 -O2 -g -Wall -Wextra)
  if(COLLAB_WERROR)
    list(APPEND flags -Werror)
  endif()
  get_filename_component(dir ${P_OUTPUT} DIRECTORY)
  add_custom_command(
    OUTPUT ${P_OUTPUT}
    COMMAND ${CMAKE_COMMAND} -E make_directory ${dir}
    COMMAND ${COLLAB_MPICC_MPICH} ${flags} -o ${P_OUTPUT} ${P_SOURCES} ${P_LIBS}
    DEPENDS ${P_SOURCES} ${P_DEPENDS}
    COMMENT "Building ${target} with mpicc.mpich"
    VERBATIM)
  add_custom_target(${target} ALL DEPENDS ${P_OUTPUT})
endfunction()

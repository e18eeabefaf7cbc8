# cmake -DWRITER=<cl_elmsg_test> -DCORPUS=<dir> -DOUT=<dir> -P check_seeds.cmake
#
# The seed corpus of fuzz_elmsg is what the encoder wrote when the seeds
# were made.  This script has the encoder of today write the same sample
# messages again and fails unless every file is byte-for-byte the
# committed seed of the same name: a change of the bytes on the wire, even
# one that both sides of a round trip would accept, is noticed.
file(REMOVE_RECURSE ${OUT})
file(MAKE_DIRECTORY ${OUT})
execute_process(COMMAND ${WRITER} --write-corpus ${OUT} RESULT_VARIABLE rc)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "${WRITER} --write-corpus ${OUT} failed (${rc})")
endif()
file(GLOB written RELATIVE ${OUT} ${OUT}/*)
list(LENGTH written n)
if(n EQUAL 0)
  message(FATAL_ERROR "${WRITER} wrote no sample into ${OUT}")
endif()
set(differ "")
foreach(f ${written})
  execute_process(COMMAND ${CMAKE_COMMAND} -E compare_files ${OUT}/${f} ${CORPUS}/${f}
                  RESULT_VARIABLE d)
  if(NOT d EQUAL 0)
    list(APPEND differ ${f})
  endif()
endforeach()
if(differ)
  message(FATAL_ERROR "encodings differ from the seeds in ${CORPUS}: ${differ}")
endif()
message(STATUS "${n} encodings equal their seeds")

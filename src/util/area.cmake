# Core utilities: logging, configuration, identity, addresses, topology,
# local peers' ports.
include_guard(GLOBAL)

set(COLLAB_UTIL_DIR ${CMAKE_CURRENT_LIST_DIR})
set(COLLAB_UTIL_SOURCES
    ${COLLAB_UTIL_DIR}/cl_log.c
    ${COLLAB_UTIL_DIR}/cl_status.c
    ${COLLAB_UTIL_DIR}/cl_text.c
    ${COLLAB_UTIL_DIR}/cl_base58.c
    ${COLLAB_UTIL_DIR}/cl_addr.c
    ${COLLAB_UTIL_DIR}/cl_identity.c
    ${COLLAB_UTIL_DIR}/cl_xsign.c
    ${COLLAB_UTIL_DIR}/cl_secret.c
    ${COLLAB_UTIL_DIR}/cl_config_value.c
    ${COLLAB_UTIL_DIR}/cl_config.c
    ${COLLAB_UTIL_DIR}/cl_config_load.c
    ${COLLAB_UTIL_DIR}/cl_topo.c
    ${COLLAB_UTIL_DIR}/cl_port.c
    # Device buffers: the plugin loader and the pointer cache (docs/cuda.md).
    ${COLLAB_UTIL_DIR}/cl_devcache.c
    ${COLLAB_UTIL_DIR}/cl_device.c)

collab_area(collab_util ${COLLAB_UTIL_SOURCES})
target_compile_definitions(collab_util PRIVATE COLLAB_PROJECT_VERSION="${PROJECT_VERSION}")

foreach(t cl_log_test cl_text_test cl_config_test cl_config_load_test cl_identity_test
          cl_addr_test cl_topo_test cl_status_test cl_devcache_test cl_xsign_test
          cl_port_test)
  collab_selftest(${t} ${PROJECT_SOURCE_DIR}/tests/unit/util/${t}.c collab_util)
endforeach()
target_compile_definitions(cl_status_test PRIVATE
                           COLLAB_TEST_PROJECT_VERSION="${PROJECT_VERSION}")

# The documentation of COLLAB_* variables is checked against the table.
add_executable(cl_config_doc ${PROJECT_SOURCE_DIR}/tests/unit/util/cl_config_doc.c)
target_link_libraries(cl_config_doc PRIVATE collab_util)
add_test(NAME config_docs_table
         COMMAND cl_config_doc --check ${PROJECT_SOURCE_DIR}/docs/config.md)
add_test(NAME config_readme_table
         COMMAND cl_config_doc --check-optional ${PROJECT_SOURCE_DIR}/README.md)
set_tests_properties(config_docs_table config_readme_table PROPERTIES TIMEOUT 30)
set_tests_properties(config_readme_table PROPERTIES SKIP_RETURN_CODE 77)

# Fuzz targets of the address and configuration parsers.
include(${PROJECT_SOURCE_DIR}/tests/fuzz/addr/fuzz.cmake OPTIONAL)
include(${PROJECT_SOURCE_DIR}/tests/fuzz/config/fuzz.cmake OPTIONAL)

# NATS interop clients (included by tests/CMakeLists.txt): the official Go,
# C and JavaScript clients, each a small program that the tests in
# tests/integration/test_nats_*.c run against riftd and nats-server.
# Tools come from scripts/deps.sh --test; one that is missing leaves its
# variable empty and its tests fail with a hint (never skip).
find_program(RIFT_GO go)
find_program(RIFT_NODE node)
find_program(RIFT_NATS_SERVER nats-server PATHS /usr/sbin /usr/bin)
find_package(PkgConfig REQUIRED)
# Debian's libnats CMake config is broken: pkg-config only.
pkg_check_modules(LIBNATS IMPORTED_TARGET libnats)

set(ni_dir ${CMAKE_CURRENT_SOURCE_DIR}/interop)
set(ni_go_client "")
if(RIFT_GO)
    # Offline GOPATH-mode build against Debian's Go sources (the recipe of
    # bench/compare.sh); the Go cache stays in the build tree.
    file(GLOB ni_go_sources CONFIGURE_DEPENDS ${ni_dir}/go/nats-interop/*.go)
    set(ni_go_client ${CMAKE_CURRENT_BINARY_DIR}/nats-interop-go)
    add_custom_command(OUTPUT ${ni_go_client}
        COMMAND ${CMAKE_COMMAND} -E env GO111MODULE=off
            GOPATH=/usr/share/gocode GOPROXY=off GOFLAGS=
            GOCACHE=${CMAKE_CURRENT_BINARY_DIR}/go-cache
            ${RIFT_GO} build -o ${ni_go_client} .
        WORKING_DIRECTORY ${ni_dir}/go/nats-interop
        DEPENDS ${ni_go_sources}
        COMMENT "Building the nats.go interop client")
    add_custom_target(nats_interop_go ALL DEPENDS ${ni_go_client})
endif()

set(ni_c_client "")
if(LIBNATS_FOUND)
    file(GLOB ni_c_sources CONFIGURE_DEPENDS ${ni_dir}/c/*.c)
    add_executable(nats_interop_c ${ni_c_sources})
    target_compile_options(nats_interop_c PRIVATE ${RIFT_WARNINGS})
    target_link_libraries(nats_interop_c PRIVATE PkgConfig::LIBNATS)
    set(ni_c_client $<TARGET_FILE:nats_interop_c>)
endif()

list(APPEND RIFT_TEST_ENV
    "NI_GO_CLIENT=${ni_go_client}"
    "NI_C_CLIENT=${ni_c_client}"
    "NI_NODE=$<$<BOOL:${RIFT_NODE}>:${RIFT_NODE}>"
    "NI_JS_CLIENT=${ni_dir}/js/nats-interop.mjs"
    "NI_STAN_JS_CLIENT=${ni_dir}/js/stan-interop.js"
    "NI_NATS_SERVER=$<$<BOOL:${RIFT_NATS_SERVER}>:${RIFT_NATS_SERVER}>")

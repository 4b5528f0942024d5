# Provides the interface targets `specd::llama` (libllama, ggml (CPU, RPC, and the GPU
# backend SPECD_GPU names), llama-common, mtmd:
# linked by specd_engine alone), and `specd::json` (nlohmann-json, header-only) and
# `specd::httplib` (cpp-httplib with OpenSSL): the copies vendored in the same llama.cpp tree,
# for the modules that read JSON or make HTTP requests.
#
# Two ways in:
#   -DSPECD_LLAMA_DIR=/path/to/llama.cpp   build a user's own checkout as a subproject.
#   (default)                              the pinned tree, built once by scripts/llama.sh
#                                          into a cache keyed by the pin; its static
#                                          libraries are imported here.
# Either way SPECD_LLAMA_MODELS names the tree's models/ folder (vocab-only GGUFs, templates)
# for the test fixtures. SPECD_LLAMA_RPC_SERVER names llama.cpp's own RPC worker built from
# the pinned tree (the tests run it beside `specd worker`); empty with a user's checkout.

set(SPECD_LLAMA_DIR "" CACHE PATH "Use this llama.cpp source tree instead of the pinned one")
set(SPECD_LLAMA_PREFIX "" CACHE PATH "Prefix staged by scripts/llama.sh (found automatically)")

find_package(Threads REQUIRED)
# https pulls: cpp-httplib is built with OpenSSL, and every file that includes httplib.h must
# see the same CPPHTTPLIB_OPENSSL_SUPPORT (the classes differ with it).
find_package(OpenSSL 3 REQUIRED)
add_library(specd_llama INTERFACE)
add_library(specd::llama ALIAS specd_llama)
add_library(specd_json INTERFACE)
add_library(specd::json ALIAS specd_json)
add_library(specd_httplib INTERFACE)
add_library(specd::httplib ALIAS specd_httplib)

# ggml's GPU backend (README "GPU builds"): cpu (none), vulkan, cuda or metal; each links its
# own build of the pinned llama.cpp. The presets `vulkan`, `cuda` and `metal` set it and build
# into folders of their own, so the CPU build stays as it is.
set(_gpu_default cpu)
if(DEFINED ENV{SPECD_GPU} AND NOT "$ENV{SPECD_GPU}" STREQUAL "")
  set(_gpu_default $ENV{SPECD_GPU})
endif()
set(SPECD_GPU ${_gpu_default} CACHE STRING "ggml GPU backend: cpu, vulkan, cuda or metal")
set_property(CACHE SPECD_GPU PROPERTY STRINGS cpu vulkan cuda metal)
if(NOT SPECD_GPU MATCHES "^(cpu|vulkan|cuda|metal)$")
  message(FATAL_ERROR "SPECD_GPU must be cpu, vulkan, cuda or metal, not '${SPECD_GPU}'")
endif()

if(SPECD_LLAMA_DIR)
  set(LLAMA_BUILD_COMMON ON CACHE BOOL "" FORCE)
  set(LLAMA_BUILD_MTMD ON CACHE BOOL "" FORCE)
  set(LLAMA_OPENSSL ON CACHE BOOL "" FORCE)
  if(SPECD_GPU STREQUAL "vulkan")
    set(GGML_VULKAN ON CACHE BOOL "" FORCE)
  elseif(SPECD_GPU STREQUAL "cuda")
    set(GGML_CUDA ON CACHE BOOL "" FORCE)
  elseif(SPECD_GPU STREQUAL "metal")
    set(GGML_METAL ON CACHE BOOL "" FORCE)
  endif()
  foreach(opt LLAMA_BUILD_TESTS LLAMA_BUILD_TOOLS LLAMA_BUILD_EXAMPLES LLAMA_BUILD_SERVER
              LLAMA_BUILD_APP BUILD_SHARED_LIBS)
    set(${opt} OFF CACHE BOOL "" FORCE)
  endforeach()
  add_subdirectory(${SPECD_LLAMA_DIR} ${CMAKE_BINARY_DIR}/llama.cpp EXCLUDE_FROM_ALL)
  # cpp-httplib exports CPPHTTPLIB_OPENSSL_SUPPORT and OpenSSL itself when it found OpenSSL.
  get_target_property(_httplib_defs cpp-httplib INTERFACE_COMPILE_DEFINITIONS)
  if(NOT _httplib_defs MATCHES "CPPHTTPLIB_OPENSSL_SUPPORT")
    message(FATAL_ERROR "${SPECD_LLAMA_DIR}: cpp-httplib was configured without OpenSSL (install libssl-dev)")
  endif()
  target_link_libraries(specd_llama INTERFACE llama-common mtmd cpp-httplib llama ggml)
  target_include_directories(specd_llama INTERFACE
    ${SPECD_LLAMA_DIR}/tools/mtmd ${SPECD_LLAMA_DIR}/vendor ${SPECD_LLAMA_DIR}/vendor/cpp-httplib)
  target_include_directories(specd_json SYSTEM INTERFACE ${SPECD_LLAMA_DIR}/vendor)
  target_link_libraries(specd_httplib INTERFACE cpp-httplib)
  target_include_directories(specd_httplib SYSTEM INTERFACE ${SPECD_LLAMA_DIR}/vendor/cpp-httplib)
  set(SPECD_LLAMA_MODELS ${SPECD_LLAMA_DIR}/models)
  set(SPECD_LLAMA_RPC_SERVER "")
  return()
endif()

# ggml's CPU threading: OpenMP (upstream's default) or its own thread pool. The thread
# sanitizer does not understand libgomp, so tsan builds always use ggml's own pool.
set(SPECD_LLAMA_OPENMP "OFF" CACHE STRING "Build the pinned llama.cpp with OpenMP (ON/OFF)")
set(_openmp ${SPECD_LLAMA_OPENMP})
if(SPECD_SANITIZE MATCHES "thread")
  set(_openmp OFF)
endif()

# ggml's CPU code for this machine (GGML_NATIVE, the default) or for any x86-64 with AVX2.
set(SPECD_LLAMA_NATIVE "ON" CACHE STRING "Build the pinned llama.cpp for this machine's CPU (ON/OFF)")
# The CUDA architecture list is part of the key (scripts/llama.sh).
set(_cuda_arch "86")
if(DEFINED ENV{CMAKE_CUDA_ARCHITECTURES} AND NOT "$ENV{CMAKE_CUDA_ARCHITECTURES}" STREQUAL "")
  set(_cuda_arch $ENV{CMAKE_CUDA_ARCHITECTURES})
endif()
if(CMAKE_CUDA_ARCHITECTURES)
  set(_cuda_arch ${CMAKE_CUDA_ARCHITECTURES})
endif()
if(_openmp)
  set(_llama_env SPECD_LLAMA_OPENMP=ON)
else()
  set(_llama_env SPECD_LLAMA_OPENMP=OFF)
endif()
list(APPEND _llama_env SPECD_GPU=${SPECD_GPU})
if(SPECD_LLAMA_NATIVE)
  list(APPEND _llama_env SPECD_LLAMA_NATIVE=ON)
else()
  list(APPEND _llama_env SPECD_LLAMA_NATIVE=OFF)
endif()
if(SPECD_GPU STREQUAL "cuda")
  list(APPEND _llama_env CMAKE_CUDA_ARCHITECTURES=${_cuda_arch})
endif()

# Runs `scripts/llama.sh COMMAND` in this build's environment; what it prints goes to OUT.
function(specd_llama_sh command out)
  execute_process(
    COMMAND ${CMAKE_COMMAND} -E env ${_llama_env} bash ${CMAKE_SOURCE_DIR}/scripts/llama.sh ${command}
    OUTPUT_VARIABLE _out OUTPUT_STRIP_TRAILING_WHITESPACE
    RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "scripts/llama.sh ${command} failed (${_rc}); see its messages above")
  endif()
  set(${out} ${_out} PARENT_SCOPE)
endfunction()

# scripts/llama.sh's BUILD_CONFIG, as it names it: a prefix staged with other flags (an older
# cache, e.g. without TLS) is not used, whoever named it; the pinned one is prepared instead.
specd_llama_sh(config _want_config)
set(_have_config "")
if(SPECD_LLAMA_PREFIX AND EXISTS ${SPECD_LLAMA_PREFIX}/CONFIG)
  file(STRINGS ${SPECD_LLAMA_PREFIX}/CONFIG _have_config LIMIT_COUNT 1)
endif()
if(SPECD_LLAMA_PREFIX AND (NOT _have_config STREQUAL _want_config OR NOT EXISTS ${SPECD_LLAMA_PREFIX}/SHARED))
  message(STATUS "specd: ${SPECD_LLAMA_PREFIX} was staged without the '${_want_config}' build config; "
                 "using the pinned llama.cpp instead")
  # Both: a normal variable set to "" would hide the cache entry written below.
  unset(SPECD_LLAMA_PREFIX CACHE)
  unset(SPECD_LLAMA_PREFIX)
endif()
if(NOT SPECD_LLAMA_PREFIX)
  message(STATUS "specd: preparing the pinned llama.cpp (cached after the first time)")
  specd_llama_sh(build _prefix)
  set(SPECD_LLAMA_PREFIX ${_prefix} CACHE PATH "" FORCE)
endif()

set(_p ${SPECD_LLAMA_PREFIX})
if(NOT EXISTS ${_p}/.specd-ok OR NOT EXISTS ${_p}/SHARED)
  message(FATAL_ERROR "${_p} is not a complete llama.cpp prefix; run scripts/llama.sh build")
endif()
# Headers, vendored code and models: one folder per pin, shared by every variant.
file(STRINGS ${_p}/SHARED _s LIMIT_COUNT 1)

# Static archives in link order: dependants before dependencies. cpp-httplib is a target of
# its own (specd::httplib, after the group: llama-common's downloads use it too), so that a
# module linking only it gets OpenSSL after it on the link line.
set(_gpu_libs "")
if(SPECD_GPU STREQUAL "vulkan")
  set(_gpu_libs ggml-vulkan)
elseif(SPECD_GPU STREQUAL "cuda")
  set(_gpu_libs ggml-cuda)
elseif(SPECD_GPU STREQUAL "metal")
  set(_gpu_libs ggml-metal ggml-blas)
endif()
set(_libs llama-common llama-common-base mtmd llama ggml ggml-cpu ${_gpu_libs} ggml-rpc ggml-base vendor-hash)
foreach(lib ${_libs} cpp-httplib)
  add_library(specd_llama_${lib} STATIC IMPORTED)
  set_target_properties(specd_llama_${lib} PROPERTIES IMPORTED_LOCATION ${_p}/lib/lib${lib}.a)
endforeach()
list(TRANSFORM _libs PREPEND specd_llama_)
# The archives reference each other in both directions (ggml <-> ggml-cpu); a link group
# resolves that without listing them twice.
target_link_libraries(specd_llama INTERFACE
  "$<LINK_GROUP:RESCAN,${_libs}>" specd_httplib Threads::Threads ${CMAKE_DL_LIBS})
if(_openmp)
  find_package(OpenMP REQUIRED)
  target_link_libraries(specd_llama INTERFACE OpenMP::OpenMP_CXX)
endif()
# What each GPU backend's static archive needs at link time (ggml links the same upstream).
if(SPECD_GPU STREQUAL "vulkan")
  find_package(Vulkan REQUIRED)
  target_link_libraries(specd_llama INTERFACE Vulkan::Vulkan)
elseif(SPECD_GPU STREQUAL "cuda")
  find_package(CUDAToolkit REQUIRED)
  target_link_libraries(specd_llama INTERFACE CUDA::cudart CUDA::cublas CUDA::cublasLt CUDA::cuda_driver)
endif()
# What ggml found on the machine that built the prefix and linked (scripts/llama.sh: LINK).
if(EXISTS ${_p}/LINK)
  file(STRINGS ${_p}/LINK _extra_link)
  target_link_libraries(specd_llama INTERFACE ${_extra_link})
endif()
if(SPECD_GPU STREQUAL "metal")
  find_library(_foundation Foundation REQUIRED)
  find_library(_metal Metal REQUIRED)
  find_library(_metalkit MetalKit REQUIRED)
  find_library(_accelerate Accelerate REQUIRED)
  target_link_libraries(specd_llama INTERFACE ${_foundation} ${_metal} ${_metalkit} ${_accelerate})
endif()
target_compile_definitions(specd_llama INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT)
target_include_directories(specd_llama SYSTEM INTERFACE
  ${_s}/include ${_s}/include/common ${_s}/include/mtmd ${_s}/vendor ${_s}/vendor/cpp-httplib)
target_include_directories(specd_json SYSTEM INTERFACE ${_s}/vendor)
target_link_libraries(specd_httplib INTERFACE specd_llama_cpp-httplib OpenSSL::SSL OpenSSL::Crypto Threads::Threads)
target_compile_definitions(specd_httplib INTERFACE CPPHTTPLIB_OPENSSL_SUPPORT)
target_include_directories(specd_httplib SYSTEM INTERFACE ${_s}/vendor/cpp-httplib)
set(SPECD_LLAMA_MODELS ${_s}/models)
set(SPECD_LLAMA_RPC_SERVER ${_p}/bin/rpc-server)

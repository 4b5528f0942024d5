# Run by the build before src/<MODULE>/ compiles (src/CMakeLists.txt, specd_module): fails
# when one of its sources includes a header of a folder the module does not declare in USES,
# or a llama.cpp header (llama, ggml, gguf, mtmd, its common library, its vendored stb) when
# the module is not declared LLAMA. Only quoted includes name our folders; the system and
# vendored ones are angle-bracketed.
#   cmake -DMODULE=api -DALLOWED="core|http" -DLLAMA=FALSE -DSRC=src -DSTAMP=file -P check_includes.cmake
cmake_minimum_required(VERSION 3.25) # IN_LIST; run as a script, it sets no policy otherwise
string(REPLACE "|" ";" allowed "${ALLOWED}")
file(GLOB files ${SRC}/${MODULE}/*.h ${SRC}/${MODULE}/*.cpp)
set(errors "")
foreach(f ${files})
  file(STRINGS ${f} lines REGEX "^[ \t]*#[ \t]*include")
  file(RELATIVE_PATH rel ${SRC}/.. ${f})
  foreach(line ${lines})
    if(line MATCHES "#[ \t]*include[ \t]*\"([a-z_]+)/")
      set(dep ${CMAKE_MATCH_1})
      if(NOT dep STREQUAL MODULE AND NOT dep IN_LIST allowed)
        string(APPEND errors "\n  ${rel}: ${line}  (${dep}/ is not among what ${MODULE}/ uses)")
      endif()
    elseif(NOT LLAMA AND line MATCHES "#[ \t]*include[ \t]*<(llama|ggml|gguf|mtmd|clip|stb/|common\\.h|sampling\\.h|chat\\.h|speculative\\.h|log\\.h|arg\\.h|json-schema-to-grammar\\.h)")
      string(APPEND errors "\n  ${rel}: ${line}  (only engine/ uses llama.cpp)")
    endif()
  endforeach()
endforeach()
if(errors)
  if(allowed)
    string(REPLACE ";" ", " list "${allowed}")
  else()
    set(list "no other folder")
  endif()
  message(FATAL_ERROR "src/${MODULE}/ may include headers of ${list} (src/CMakeLists.txt):${errors}")
endif()
file(TOUCH ${STAMP})

# Drives cmake/check_includes.cmake on tests/build_check/src, whose headers each break one
# rule, and on the real src/api (which follows them): the check must refuse the first with a
# message naming the include, and pass the second.
#   cmake -DCHECK=cmake/check_includes.cmake -DFIXTURE=tests/build_check/src -DREAL=src -DWORK=dir -P run.cmake
function(expect_refused module allowed needle)
  execute_process(COMMAND ${CMAKE_COMMAND} -DMODULE=${module} "-DALLOWED=${allowed}" -DLLAMA=FALSE
                          -DSRC=${FIXTURE} -DSTAMP=${WORK}/${module}.ok -P ${CHECK}
                  RESULT_VARIABLE rc ERROR_VARIABLE err OUTPUT_QUIET)
  if(rc EQUAL 0)
    message(FATAL_ERROR "the check let src/${module}/ through: ${err}")
  endif()
  string(FIND "${err}" "${needle}" at)
  if(at EQUAL -1)
    message(FATAL_ERROR "the check refused src/${module}/ without naming ${needle}: ${err}")
  endif()
endfunction()

expect_refused(api "core|http" "api/wrong.h: #include \"engine/session.h\"")
expect_refused(grammar "core" "grammar/wrong.h: #include <llama.h>  (only engine/ uses llama.cpp)")

execute_process(COMMAND ${CMAKE_COMMAND} -DMODULE=api
                        "-DALLOWED=core|http|memory|metrics|models|prepare|scheduler|templates|ui" -DLLAMA=FALSE
                        -DSRC=${REAL} -DSTAMP=${WORK}/api-real.ok -P ${CHECK}
                RESULT_VARIABLE rc ERROR_VARIABLE err)
if(NOT rc EQUAL 0)
  message(FATAL_ERROR "the check refused the real src/api/: ${err}")
endif()

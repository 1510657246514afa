# Writes OUT, `#define GPUATTN_GIT_COMMIT "<commit>"`, from the repository at SRC: HEAD's short
# hash, with "+dirty" when tracked files differ from it; "unknown" without git (GIT) or a
# repository. Run at every build (tools/CMakeLists.txt), so the commit a benchmark prints is the
# one the binary was built from, not the one CMake was configured at; OUT is rewritten only when
# its text changes, so an unchanged commit rebuilds nothing.
set(commit "")
if(GIT)
  execute_process(COMMAND "${GIT}" rev-parse --short=12 HEAD WORKING_DIRECTORY "${SRC}"
                  OUTPUT_VARIABLE commit OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET
                  RESULT_VARIABLE rc)
  if(rc EQUAL 0 AND commit)
    execute_process(COMMAND "${GIT}" status --porcelain --untracked-files=no
                    WORKING_DIRECTORY "${SRC}" OUTPUT_VARIABLE changes ERROR_QUIET)
    if(changes)
      string(APPEND commit "+dirty")
    endif()
  else()
    set(commit "")
  endif()
endif()
if(NOT commit)
  set(commit unknown)
endif()
set(text "#define GPUATTN_GIT_COMMIT \"${commit}\"\n")
set(old "")
if(EXISTS "${OUT}")
  file(READ "${OUT}" old)
endif()
if(NOT old STREQUAL text)
  file(WRITE "${OUT}" "${text}")
endif()

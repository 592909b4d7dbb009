# Read by ctest (TEST_INCLUDE_FILES, through the include file tests/CMakeLists.txt writes): the tests of
# one GoogleTest binary, one per suite. A process per case cost ~40 ms of CPU a case more than one per
# suite, ~45 s over the quick tier (suites that load a dataset or a model once for all their cases loaded
# it once a case; docs/testing.md): so the quick cases of a suite run as one test named after the suite,
# `--gtest_filter=Suite.*` (minus its slow cases), and each slow case (KPLAB_SLOW_GTESTS) as a test of its
# own named Suite.Case. One case alone: `build/tests/kplab_core_tests --gtest_filter=Suite.Case`.
#
# kplab_gtest_suites(BINARY LAYER CASES_FILE SLOW_CASE...): CASES_FILE is tests/gtest_list.cmake's list of
# the binary's cases, written when it links; until then the binary has one test, BINARY_NOT_BUILT, that
# fails saying so (and has no tier, so layout_test_tiers names it). Tests are labelled LAYER and their
# tier. A suite name another binary already used gets LAYER: in front. COST (ctest starts the costliest
# first when it has no timings of its own yet) is the number of cases, so large suites do not start last.
# ctest reads this without a cmake_minimum_required, so with old policies: list(FIND), not if(IN_LIST).
function(kplab_gtest_suites binary layer cases_file)
  get_filename_component(name "${binary}" NAME)
  if(NOT EXISTS "${cases_file}")
    add_test("${name}_NOT_BUILT" "${name}_NOT_BUILT")
    return()
  endif()
  include("${cases_file}")
  set(slow_cases ${ARGN})
  set(suites "")
  foreach(case IN LISTS kplab_cases)
    string(FIND "${case}" "." dot)
    string(SUBSTRING "${case}" 0 ${dot} suite)
    list(FIND slow_cases "${case}" at)
    if(NOT at EQUAL -1)
      add_test("${case}" "${binary}" "--gtest_filter=${case}")
      set_tests_properties("${case}" PROPERTIES LABELS "${layer};slow")
      list(APPEND "slow_of_${suite}" "${case}")
    else()
      if(NOT DEFINED "quick_of_${suite}")
        set("quick_of_${suite}" 0)
      endif()
      math(EXPR "quick_of_${suite}" "${quick_of_${suite}} + 1")
    endif()
    list(FIND suites "${suite}" at)
    if(at EQUAL -1)
      list(APPEND suites "${suite}")
    endif()
  endforeach()
  get_property(taken GLOBAL PROPERTY kplab_gtest_suite_names)
  foreach(suite IN LISTS suites)
    if(NOT quick_of_${suite})
      continue()
    endif()
    set(filter "${suite}.*")
    if(slow_of_${suite})
      string(REPLACE ";" ":" slow "${slow_of_${suite}}")
      string(APPEND filter ":-${slow}")
    endif()
    set(test "${suite}")
    list(FIND taken "${test}" at)
    if(NOT at EQUAL -1)
      set(test "${layer}:${suite}")
    endif()
    list(APPEND taken "${test}")
    add_test("${test}" "${binary}" "--gtest_filter=${filter}")
    set_tests_properties("${test}" PROPERTIES LABELS "${layer};quick" COST ${quick_of_${suite}})
  endforeach()
  set_property(GLOBAL PROPERTY kplab_gtest_suite_names "${taken}")
endfunction()

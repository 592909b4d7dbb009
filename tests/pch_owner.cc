// The source of kplab_tests_pch (tests/CMakeLists.txt): the executable that builds the test binaries'
// shared precompiled header. It compiles the header and holds no test (GoogleTest's main runs none).

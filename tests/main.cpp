// The Catch2 entry point for lumen_tests.
#define CATCH_CONFIG_MAIN
#include <catch2/catch.hpp>

#pragma once
// How much longer the tests may take than natively: 30 in a cross build whose tests run under an emulator
// (qemu-aarch64 runs this code 10–30× slower; tests/CMakeLists.txt ATTNSCOPE_TEST_TIME_SCALE), 1 otherwise.
// The bounds some tests put on seconds catch a complexity blowup (quadratic merging, a hang), not speed
// targets, which live in bench/; they are multiplied by it.

namespace attnscope::test {

#ifdef ATTNSCOPE_TEST_TIME_SCALE
constexpr double kTimeScale = ATTNSCOPE_TEST_TIME_SCALE;
#else
constexpr double kTimeScale = 1;
#endif

} // namespace attnscope::test

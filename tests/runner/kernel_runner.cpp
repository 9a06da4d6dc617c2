// attnscope_kernel_runner ISA COMMAND [ARGS…]: runs COMMAND with ATTNSCOPE_ISA=ISA when this CPU can run
// that compute kernel, else prints "SKIPPED: …" (ctest's SKIP_REGULAR_EXPRESSION) and exits 0. It lets
// ctest run the kernel-sensitive suites once per kernel (tests/CMakeLists.txt) without a suite ever
// passing on another kernel than the one it names (the library falls back to the best runnable one).

#include "model/core/kernels/kernel_choice.h"

#include <QCoreApplication>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

int main(int argc, char** argv) {
    using namespace attnscope;
    if (argc < 3) {
        std::fprintf(stderr, "usage: %s avx512|avx2|portable COMMAND [ARGS...]\n", argv[0]);
        return 2;
    }
    const QString name = QString::fromLocal8Bit(argv[1]);
    const CpuFeatures features = detectCpuFeatures();
    const KernelChoice choice = chooseKernels(name, features);
    if (!choice.error.isEmpty()) {
        if (!kernelIsaFromName(name)) {
            std::fprintf(stderr, "%s\n", qPrintable(choice.error));
            return 2;
        }
        std::printf("SKIPPED: %s\n", qPrintable(choice.error));
        return 0;
    }
    setenv("ATTNSCOPE_ISA", argv[1], 1);
    execv(argv[2], argv + 2);
    std::perror(argv[2]);
    return 127;
}

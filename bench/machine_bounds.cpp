#include "bench/machine_bounds.h"

#include <QElapsedTimer>

#include <algorithm>
#include <vector>

#include <sys/mman.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope::bench {

double fmaPeakGflops(const ComputeKernels& kernel, int runs) {
    // ≈ 7 ms per run (2e6 rounds of 12–16 chains); the best of at least 30 runs, so that one descheduled
    // thread or a neighbour's burst in a short run does not lower the bound
    constexpr long kIterations = 2'000'000;
    runs = std::max(runs, 30);
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const double flopsPerThread = double(kIterations) * kernel.fmaChainCount * kernel.lanes * 2;
    std::vector<double> gflops;
    volatile float sink = 0;
    for (int r = 0; r < std::max(1, runs) + 1; ++r) { // the first run warms up
        QElapsedTimer t;
        t.start();
        float s = 0;
#pragma omp parallel reduction(+ : s)
        s += kernel.fmaChains(kIterations, 1.0f + float(r));
        const double ns = double(t.nsecsElapsed());
        sink = sink + s;
        if (r > 0) gflops.push_back(double(threads) * flopsPerThread / ns);
    }
    return *std::max_element(gflops.begin(), gflops.end()); // a bound: the best the machine reached
}

double readBandwidthGBs(const ComputeKernels& kernel, int runs) {
    constexpr size_t kBytes = size_t(512) << 20, kFloats = kBytes / sizeof(float);
    // mapped, not from the heap: unmapped afterwards, so it does not stay in the process's RSS (the bench
    // keeps freed heap memory for reuse) and inflate the peak RSS of the rows measured after it
    void* mapping = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return 0.0;
    float* buffer = static_cast<float*>(mapping);
    std::fill(buffer, buffer + kFloats, 1.0f); // faulted in and written once
    std::vector<double> rates;
    volatile float sink = 0;
    runs = std::max(runs, 10); // ≈ 20 ms per pass: the best of 10, as for the FMA peak
    for (int r = 0; r < runs; ++r) {
        QElapsedTimer t;
        t.start();
        float s = 0;
#pragma omp parallel reduction(+ : s)
        {
            int t = 0, n = 1;
#ifdef _OPENMP
            t = omp_get_thread_num();
            n = omp_get_num_threads();
#endif
            // contiguous parts of whole 4 KiB pages (a multiple of 4·lanes floats)
            const size_t pages = kBytes / 4096, p0 = pages * size_t(t) / size_t(n), p1 = pages * size_t(t + 1) / size_t(n);
            s += kernel.sumFloats(buffer + p0 * 1024, (p1 - p0) * 1024);
        }
        rates.push_back(double(kBytes) / double(t.nsecsElapsed()));
        sink = sink + s;
    }
    munmap(mapping, kBytes);
    return *std::max_element(rates.begin(), rates.end()); // a bound: the best the machine reached
}

} // namespace attnscope::bench

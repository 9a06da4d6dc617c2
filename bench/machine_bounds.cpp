#include "bench/machine_bounds.h"

#include <QElapsedTimer>

#include <algorithm>
#include <vector>

#include <sys/mman.h>

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope::bench {

namespace {

typedef float v16 __attribute__((vector_size(64)));

/// `iterations` rounds of 12 independent FMA chains (more than latency × ports on current x86 cores).
float fmaChains(long iterations, float seed) {
    constexpr int kChains = 12;
    v16 acc[kChains];
    for (int i = 0; i < kChains; ++i) acc[i] = v16{} + seed * float(i);
    volatile float va = 0.999999f, vb = 1e-7f; // unknown to the compiler: nothing folds
    const v16 a = v16{} + float(va), b = v16{} + float(vb);
    for (long it = 0; it < iterations; ++it) {
#pragma GCC unroll 12
        for (int i = 0; i < kChains; ++i) acc[i] = acc[i] * a + b;
    }
    v16 s{};
    for (int i = 0; i < kChains; ++i) s += acc[i];
    float out = 0;
    for (int l = 0; l < 16; ++l) out += s[l];
    return out;
}

} // namespace

double fmaPeakGflops(int runs) {
    constexpr long kIterations = 2'000'000; // 12 · 16 · 2 · 2e6 = 0.77 GFLOP per thread
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    std::vector<double> gflops;
    volatile float sink = 0;
    for (int r = 0; r < std::max(1, runs) + 1; ++r) { // the first run warms up
        QElapsedTimer t;
        t.start();
        float s = 0;
#pragma omp parallel reduction(+ : s)
        s += fmaChains(kIterations, 1.0f + float(r));
        const double ns = double(t.nsecsElapsed());
        sink = sink + s;
        if (r > 0) gflops.push_back(double(threads) * kIterations * 12 * 16 * 2 / ns);
    }
    return *std::max_element(gflops.begin(), gflops.end()); // a bound: the best the machine reached
}

double readBandwidthGBs(int runs) {
    constexpr size_t kBytes = size_t(512) << 20, kVectors = kBytes / sizeof(v16);
    // mapped, not from the heap: unmapped afterwards, so it does not stay in the process's RSS (the bench
    // keeps freed heap memory for reuse) and inflate the peak RSS of the rows measured after it
    void* mapping = mmap(nullptr, kBytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapping == MAP_FAILED) return 0.0;
    v16* buffer = static_cast<v16*>(mapping);
    std::fill(buffer, buffer + kVectors, v16{} + 1.0f); // faulted in and written once
    std::vector<double> rates;
    volatile float sink = 0;
    for (int r = 0; r < std::max(1, runs); ++r) {
        QElapsedTimer t;
        t.start();
        float s = 0;
#pragma omp parallel reduction(+ : s)
        {
            v16 a{}, b{}, c{}, d{}; // four independent sums: the loads, not the adds, set the pace
#pragma omp for schedule(static)
            for (size_t i = 0; i < kVectors; i += 4) {
                a += buffer[i];
                b += buffer[i + 1];
                c += buffer[i + 2];
                d += buffer[i + 3];
            }
            const v16 sum = a + b + c + d;
            for (int l = 0; l < 16; ++l) s += sum[l];
        }
        rates.push_back(double(kBytes) / double(t.nsecsElapsed()));
        sink = sink + s;
    }
    munmap(mapping, kBytes);
    return *std::max_element(rates.begin(), rates.end()); // a bound: the best the machine reached
}

} // namespace attnscope::bench

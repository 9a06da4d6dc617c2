#include "model/core/kernels/kernel_choice.h"

#include "model/core/kernels/kernel_tables.h"

#include <QCoreApplication>
#include <QStringList>

#if defined(__x86_64__) || defined(_M_X64)
#include <cpuid.h>
#define ATTNSCOPE_X86 1
#endif

#ifdef _OPENMP
#include <omp.h>
#endif

namespace attnscope {

namespace {

#ifdef ATTNSCOPE_X86
/// XCR0, read with xgetbv (only call when cpuid reports OSXSAVE: otherwise the instruction faults).
/// Inline assembly, so that this file needs no -mxsave and runs on every x86-64 CPU.
unsigned long long readXcr0() {
    unsigned lo = 0, hi = 0;
    __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
    return (static_cast<unsigned long long>(hi) << 32) | lo;
}
#endif

bool isBuilt(KernelIsa isa) { return kernelsFor(isa) != nullptr; }

/// What `isa` needs that `f` lacks, for the error message ("AVX-512 state not enabled by the OS", …).
QStringList missingFor(KernelIsa isa, const CpuFeatures& f) {
    QStringList missing;
    if (!isBuilt(isa)) {
        missing << QStringLiteral("this build has no %1 kernels (not an x86-64 build)").arg(kernelIsaName(isa));
        return missing;
    }
    auto need = [&](bool have, const char* what) {
        if (!have) missing << QString::fromLatin1(what);
    };
    switch (isa) {
    case KernelIsa::Portable:
        break;
    case KernelIsa::Avx512:
        need(f.avx512f, "AVX512F");
        need(f.avx512bw, "AVX512BW");
        need(f.avx512dq, "AVX512DQ");
        need(f.avx512vl, "AVX512VL");
        need(f.osSavesZmm, "AVX-512 register state enabled by the OS (XCR0 bits 5-7)");
        [[fallthrough]];
    case KernelIsa::Avx2:
        need(f.avx, "AVX");
        need(f.avx2, "AVX2");
        need(f.fma, "FMA");
        need(f.f16c, "F16C");
        need(f.osSavesYmm, "AVX register state enabled by the OS (XCR0 bits 1-2)");
        break;
    }
    return missing;
}

QString isaList(const std::vector<KernelIsa>& isas) {
    QStringList names;
    for (KernelIsa i : isas) names << kernelIsaName(i);
    return names.join(QStringLiteral(", "));
}

/// A table's own int8 pass.
Int8Pass int8PassOf(const ComputeKernels& k) {
    return {k.int8AOffset, k.int8BOffset, k.int8AMax, k.int8BMax, k.int8Description, k.int8FirstHit};
}

#ifdef ATTNSCOPE_X86
/// `k` with `int8` as its int8 candidate pass (and the quantisation that pass needs).
ComputeKernels withInt8(ComputeKernels k, const Int8Pass& int8) {
    k.int8AOffset = int8.aOffset;
    k.int8BOffset = int8.bOffset;
    k.int8AMax = int8.aMax;
    k.int8BMax = int8.bMax;
    k.int8Description = int8.description;
    k.int8FirstHit = int8.firstHit;
    return k;
}

/// The AVX-512 table with the int8 pass it can run: vpdpbusd with VNNI, else the AVX2 one.
ComputeKernels avx512WithInt8(const CpuFeatures& f) {
    return withInt8(kernels::kAvx512Kernels, f.avx512vnni ? kernels::kAvx512VnniInt8 : int8PassOf(kernels::kAvx2Kernels));
}

/// The AVX2 table with the int8 pass it can run: AVX-VNNI's vpdpbusd where present, else its own.
ComputeKernels avx2WithInt8(const CpuFeatures& f) {
    return f.avxvnni && f.osSavesYmm ? withInt8(kernels::kAvx2Kernels, kernels::kAvxVnniInt8) : kernels::kAvx2Kernels;
}
#endif

} // namespace

CpuFeatures detectCpuFeatures() {
    CpuFeatures f;
#ifdef ATTNSCOPE_X86
    unsigned a = 0, b = 0, c = 0, d = 0;
    if (!__get_cpuid(1, &a, &b, &c, &d)) return f;
    const bool osxsave = (c >> 27) & 1;
    f.fma = (c >> 12) & 1;
    f.avx = (c >> 28) & 1;
    f.f16c = (c >> 29) & 1;
    if (osxsave) {
        const unsigned long long xcr0 = readXcr0();
        f.osSavesYmm = (xcr0 & 0x6) == 0x6;
        f.osSavesZmm = f.osSavesYmm && (xcr0 & 0xe0) == 0xe0;
    }
    unsigned maxLeaf7 = 0; // the highest sub-leaf of leaf 7
    if (__get_cpuid_count(7, 0, &a, &b, &c, &d)) {
        maxLeaf7 = a;
        f.avx2 = (b >> 5) & 1;
        f.avx512f = (b >> 16) & 1;
        f.avx512dq = (b >> 17) & 1;
        f.avx512bw = (b >> 30) & 1;
        f.avx512vl = (b >> 31) & 1;
        f.avx512vnni = (c >> 11) & 1;
    }
    if (maxLeaf7 >= 1 && __get_cpuid_count(7, 1, &a, &b, &c, &d)) f.avxvnni = f.avx2 && ((a >> 4) & 1);
#elif defined(__aarch64__)
    f.neon = true;
#endif
    return f;
}

bool canRun(KernelIsa isa, const CpuFeatures& f) { return missingFor(isa, f).isEmpty(); }

KernelIsa bestKernelIsa(const CpuFeatures& f) {
    for (KernelIsa isa : {KernelIsa::Avx512, KernelIsa::Avx2})
        if (canRun(isa, f)) return isa;
    return KernelIsa::Portable;
}

std::optional<KernelIsa> kernelIsaFromName(const QString& name) {
    const QString n = name.trimmed().toLower();
    for (KernelIsa isa : {KernelIsa::Portable, KernelIsa::Avx2, KernelIsa::Avx512})
        if (n == kernelIsaName(isa)) return isa;
    return std::nullopt;
}

QString kernelIsaName(KernelIsa isa) {
    switch (isa) {
    case KernelIsa::Avx512:
        return QStringLiteral("avx512");
    case KernelIsa::Avx2:
        return QStringLiteral("avx2");
    case KernelIsa::Portable:
        break;
    }
    return QStringLiteral("portable");
}

KernelChoice chooseKernels(const QString& forced, const CpuFeatures& f) {
    KernelChoice choice;
    choice.isa = bestKernelIsa(f);
    if (forced.trimmed().isEmpty()) return choice;
    std::vector<KernelIsa> runnable;
    for (KernelIsa isa : {KernelIsa::Portable, KernelIsa::Avx2, KernelIsa::Avx512})
        if (canRun(isa, f)) runnable.push_back(isa);
    const std::optional<KernelIsa> named = kernelIsaFromName(forced);
    if (!named) {
        choice.error = QCoreApplication::translate("kernels", "ATTNSCOPE_ISA=%1 names no compute kernel: use avx512, avx2 or "
                                                              "portable (this CPU can run: %2).")
                           .arg(forced, isaList(runnable));
        return choice;
    }
    const QStringList missing = missingFor(*named, f);
    if (!missing.isEmpty()) {
        choice.error = QCoreApplication::translate("kernels", "ATTNSCOPE_ISA=%1: this CPU cannot run the %2 kernels (missing: "
                                                              "%3). It can run: %4.")
                           .arg(forced, kernelIsaName(*named), missing.join(QStringLiteral(", ")), isaList(runnable));
        return choice;
    }
    choice.isa = *named;
    return choice;
}

const KernelChoice& processKernelChoice() {
    static const KernelChoice choice = chooseKernels(qEnvironmentVariable("ATTNSCOPE_ISA"), detectCpuFeatures());
    return choice;
}

std::vector<KernelIsa> runnableKernelIsas() {
    const CpuFeatures f = detectCpuFeatures();
    std::vector<KernelIsa> out;
    for (KernelIsa isa : {KernelIsa::Portable, KernelIsa::Avx2, KernelIsa::Avx512})
        if (canRun(isa, f)) out.push_back(isa);
    return out;
}

std::vector<Int8Pass> runnableInt8Passes() {
    std::vector<Int8Pass> out;
    for (KernelIsa isa : runnableKernelIsas()) out.push_back(int8PassOf(*kernelsFor(isa)));
#ifdef ATTNSCOPE_X86
    const CpuFeatures f = detectCpuFeatures();
    auto add = [&](const Int8Pass& p) {
        for (const Int8Pass& q : out)
            if (q.firstHit == p.firstHit) return;
        out.push_back(p);
    };
    if (f.avxvnni && f.osSavesYmm) add(kernels::kAvxVnniInt8);
    if (f.avx512vnni && f.avx512vl && f.avx512f && f.osSavesZmm) add(kernels::kAvx512YmmVnniInt8);
    if (f.avx512vnni && f.avx512bw && f.avx512f && f.osSavesZmm) add(kernels::kAvx512VnniInt8);
#endif
    return out;
}

const ComputeKernels* kernelsFor(KernelIsa isa) {
    switch (isa) {
    case KernelIsa::Portable:
        return &kernels::kPortableKernels;
#ifdef ATTNSCOPE_X86
    case KernelIsa::Avx2: {
        static const ComputeKernels k = avx2WithInt8(detectCpuFeatures());
        return &k;
    }
    case KernelIsa::Avx512: {
        static const ComputeKernels k = avx512WithInt8(detectCpuFeatures());
        return &k;
    }
#else
    default:
        break;
#endif
    }
    return nullptr;
}

const ComputeKernels& computeKernels() {
    static const ComputeKernels* k = kernelsFor(processKernelChoice().isa);
    return *k;
}

QString kernelSummary() {
    const KernelChoice& choice = processKernelChoice();
    const ComputeKernels& k = computeKernels();
    int threads = 1;
#ifdef _OPENMP
    threads = omp_get_max_threads();
#endif
    const QString how = choice.error.isEmpty() && !qEnvironmentVariableIsEmpty("ATTNSCOPE_ISA")
                            ? QStringLiteral("forced by ATTNSCOPE_ISA")
                            : QStringLiteral("chosen automatically from the CPU");
    return QStringLiteral("compute kernel %1 (%2; int8 top-k: %3), %4; %5 thread%6")
        .arg(QString::fromLatin1(k.name), QString::fromUtf8(k.description), QString::fromUtf8(k.int8Description), how)
        .arg(threads)
        .arg(threads == 1 ? QString() : QStringLiteral("s"));
}

} // namespace attnscope

"""Which BLAS library this Python process runs its float32 products on (torch_reference.py, blas_products.py)."""
import os


def mapped_tuned_blas():
    """The tuned BLAS library mapped into this process (its path, e.g.
    /usr/lib/x86_64-linux-gnu/openblas-pthread/libblas.so.3), or None when it is the reference BLAS. Call it
    after one product, so that the library is loaded. Debian's torch and numpy are built against the generic
    libblas.so.3, which update-alternatives points at OpenBLAS, BLIS or MKL when one is installed, else at
    netlib's reference code (libblas3 alone: about 10x slower). Another library may map OpenBLAS beside it
    (liblapack.so.3's alternative), so the answer comes from the libblas.so.3 that is mapped; a build that
    bundles its BLAS (pip wheels: MKL, OpenBLAS) maps none, and then a tuned library mapped under its own name
    is the answer."""
    with open("/proc/self/maps") as f:
        libs = sorted({line.split()[-1] for line in f if ".so" in line})
    tuned = ("openblas", "blis", "mkl")
    generic = [lib for lib in libs if os.path.basename(lib).startswith("libblas.so")]
    if generic:
        path = os.path.realpath(generic[0])
        return path if any(k in path for k in tuned) else None
    return next((lib for lib in libs if any(k in os.path.basename(lib) for k in tuned)), None)

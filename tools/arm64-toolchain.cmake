# CMake toolchain for an arm64 (aarch64) cross build on Debian 12 x86-64, with Debian's multiarch packages
# (tools/test_arm64.sh installs them and passes ATTNSCOPE_ARM64_SYSROOT: a folder where the arm64 packages
# that cannot be installed beside their amd64 twins are unpacked). Tests run under qemu-aarch64.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_TRY_COMPILE_PLATFORM_VARIABLES ATTNSCOPE_ARM64_SYSROOT)
set(CMAKE_FIND_ROOT_PATH / ${ATTNSCOPE_ARM64_SYSROOT})
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(QT_HOST_PATH /usr) # moc and the other Qt tools run on the build machine
# the arm64 dynamic loader and multiarch libraries under /, the unpacked ones from the sysroot
set(CMAKE_CROSSCOMPILING_EMULATOR /usr/bin/qemu-aarch64 -L /
    -E LD_LIBRARY_PATH=${ATTNSCOPE_ARM64_SYSROOT}/usr/lib/aarch64-linux-gnu)

#pragma once
// What `attnscope --version` prints and Help → About shows: the version, Qt, Eigen, and the compute
// kernel in use with its threads (model/core/kernels/kernel_choice.h).

#include <QString>

namespace attnscope {

/// Plain text, one item per line: "attnscope 0.1.0", the kernel summary, "Qt 6.4.2, Eigen 3.4.0".
QString aboutText();

} // namespace attnscope

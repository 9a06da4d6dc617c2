#include "app/about_text.h"

#include "model/core/kernels/kernel_choice.h"

#include <Eigen/Core>
#include <QCoreApplication>

namespace attnscope {

QString aboutText() {
    const QString version = QCoreApplication::applicationVersion().isEmpty() ? QStringLiteral("0.1.0")
                                                                             : QCoreApplication::applicationVersion();
    return QStringLiteral("attnscope %1\n%2\nQt %3, Eigen %4.%5.%6\n")
        .arg(version, kernelSummary(), QString::fromLatin1(qVersion()))
        .arg(EIGEN_WORLD_VERSION)
        .arg(EIGEN_MAJOR_VERSION)
        .arg(EIGEN_MINOR_VERSION);
}

} // namespace attnscope

#pragma once
// A number for the analyses' JSON: NaN and ±Inf, which JSON cannot hold, become null.

#include <QJsonValue>
#include <cmath>

namespace attnscope {

/// `v`, or null when it is not finite.
inline QJsonValue jsonNumber(double v) { return std::isfinite(v) ? QJsonValue(v) : QJsonValue(QJsonValue::Null); }

} // namespace attnscope

#pragma once
// Drag and drop onto the window: which dropped file or folder to open.

#include <QString>

class QMimeData;

namespace attnscope {

/// The first local file or folder among the dropped URLs that exists (a model file, a model folder
/// or a session file; what it is, the opener decides), or "" when the drop holds none.
QString droppedModelPath(const QMimeData* mime);

} // namespace attnscope

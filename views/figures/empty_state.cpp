#include "views/figures/empty_state.h"

#include <QEvent>

namespace attnscope {

EmptyState::EmptyState(QWidget* host, const QString& text) : QLabel(text, host), host_(host) {
    setAlignment(Qt::AlignCenter);
    setWordWrap(true);
    setMargin(16);
    setForegroundRole(QPalette::PlaceholderText);
    setBackgroundRole(host->backgroundRole());
    setAutoFillBackground(true);
    setAttribute(Qt::WA_TransparentForMouseEvents); // the context menu and clicks still reach the host
    host->installEventFilter(this);
    setGeometry(host->rect());
    hide();
}

void EmptyState::setEmpty(bool empty) {
    empty_ = empty;
    setVisible(empty);
    if (empty) {
        setGeometry(host_->rect());
        raise();
    }
}

bool EmptyState::eventFilter(QObject* watched, QEvent* event) {
    if (watched == host_ && event->type() == QEvent::Resize) setGeometry(host_->rect());
    return QLabel::eventFilter(watched, event);
}

} // namespace attnscope

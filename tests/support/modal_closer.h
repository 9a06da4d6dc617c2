#pragma once
// For GUI tests: answers the modal message boxes a window opens (exec() would block the test) —
// remembers each box's text and informative text and clicks the button whose text is `answer`
// (or accepts the box). Header-only: the support library does not link Qt Widgets.

#include <QAbstractButton>
#include <QApplication>
#include <QMessageBox>
#include <QTimer>

namespace attnscope::test {

class ModalCloser : public QObject {
public:
    /// `answer`: the text of the button to click ("" = accept the box).
    explicit ModalCloser(QString answer = {}) : answer_(std::move(answer)) {
        connect(&timer_, &QTimer::timeout, this, [this] {
            auto* box = qobject_cast<QMessageBox*>(QApplication::activeModalWidget());
            if (!box) return;
            texts << box->text() + QLatin1Char('\n') + box->informativeText();
            for (QAbstractButton* b : box->buttons())
                if (!answer_.isEmpty() && b->text() == answer_) return b->click();
            box->accept();
        });
        timer_.start(30);
    }
    void setAnswer(const QString& answer) { answer_ = answer; }
    QStringList texts; ///< every box seen, "text\ninformative text"

private:
    QString answer_;
    QTimer timer_;
};

} // namespace attnscope::test

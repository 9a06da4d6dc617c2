#pragma once
// The sentence a view shows instead of its axes or rows while it has nothing to show ("Run a prompt
// to see …", "Open a second model to compare …"): a label laid over the whole host widget (for a table,
// its viewport), on the host's own background, following its size.

#include <QLabel>
#include <QPointer>

namespace attnscope {

class EmptyState : public QLabel {
    Q_OBJECT
public:
    /// Covers `host` (a child of it); hidden until setEmpty(true).
    EmptyState(QWidget* host, const QString& text = {});
    /// Shows (true) or hides the sentence.
    void setEmpty(bool empty);
    bool isEmpty() const { return empty_; }

protected:
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    QPointer<QWidget> host_;
    bool empty_ = false;
};

} // namespace attnscope

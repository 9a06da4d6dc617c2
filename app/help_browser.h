#pragma once
// Help → About This View and the "?" button of each tab: a short guide per view (what it computes,
// the formula, the paper), kept as Markdown in resources/help/<view id>.md (compiled into the binary
// as :/help/…) and rendered with QTextBrowser. Links between guides work; index.md lists them all.

#include <QDialog>

class QTextBrowser;

namespace attnscope {

class HelpBrowser : public QDialog {
    Q_OBJECT
public:
    explicit HelpBrowser(QWidget* parent = nullptr);
    /// Shows the guide of `viewId` (app/view_ids.h), or the index when there is none.
    void showTopic(const QString& viewId);
    /// The topic shown ("index" for the index).
    QString topic() const { return topic_; }
    QTextBrowser* browser() const { return browser_; }

    /// The resource of a view's guide, ":/help/<id>.md", or "" when the view has none.
    static QString guideFile(const QString& viewId);
    /// The text of a view's guide ("" when it has none).
    static QString guideText(const QString& viewId);

private:
    QTextBrowser* browser_;
    QString topic_;
};

} // namespace attnscope

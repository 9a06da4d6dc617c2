#include "app/help_browser.h"

#include <QDialogButtonBox>
#include <QFile>
#include <QFileInfo>
#include <QPushButton>
#include <QTextBrowser>
#include <QUrl>
#include <QVBoxLayout>

namespace attnscope {

HelpBrowser::HelpBrowser(QWidget* parent) : QDialog(parent) {
    setWindowTitle(tr("AttnScope Help"));
    resize(820, 760);
    browser_ = new QTextBrowser;
    browser_->setOpenExternalLinks(true); // papers open in the web browser; .md links stay here
    browser_->setSearchPaths({QStringLiteral(":/help")});
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close);
    QPushButton* back = buttons->addButton(tr("Back"), QDialogButtonBox::ActionRole);
    QPushButton* index = buttons->addButton(tr("All Views"), QDialogButtonBox::ActionRole);
    auto* v = new QVBoxLayout(this);
    v->addWidget(browser_, 1);
    v->addWidget(buttons);
    connect(buttons, &QDialogButtonBox::rejected, this, &QDialog::close);
    connect(back, &QPushButton::clicked, browser_, &QTextBrowser::backward);
    connect(browser_, &QTextBrowser::backwardAvailable, back, &QPushButton::setEnabled);
    connect(index, &QPushButton::clicked, this, [this] { showTopic(QStringLiteral("index")); });
    connect(browser_, &QTextBrowser::sourceChanged, this, [this](const QUrl& url) {
        topic_ = url.fileName().section(QLatin1Char('.'), 0, 0);
    });
    back->setEnabled(false);
}

QString HelpBrowser::guideFile(const QString& viewId) {
    const QString file = QStringLiteral(":/help/%1.md").arg(viewId);
    return QFile::exists(file) ? file : QString();
}

QString HelpBrowser::guideText(const QString& viewId) {
    QFile f(guideFile(viewId));
    return f.open(QIODevice::ReadOnly) ? QString::fromUtf8(f.readAll()) : QString();
}

void HelpBrowser::showTopic(const QString& viewId) {
    const QString file = guideFile(viewId).isEmpty() ? guideFile(QStringLiteral("index")) : guideFile(viewId);
    browser_->setSource(QUrl(QStringLiteral("qrc") + file), QTextDocument::MarkdownResource);
    topic_ = QFileInfo(file).baseName();
    show();
    raise();
}

} // namespace attnscope

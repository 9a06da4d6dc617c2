#pragma once
// Table of the most likely next tokens: rank, token, logit, probability (with a bar), with the shared
// table figure menu (copy values / image, export), hover values and an empty-state sentence.

#include <QString>
#include <QTableWidget>
#include <QVector>

namespace attnscope {

/// One row of the table.
struct TopToken {
    int id = -1;        ///< token id in the vocabulary
    QString display;    ///< display string ("␣the", "↵")
    double logit = 0;   ///< unnormalised log-probability
    double probability = 0; ///< softmax(logits)[id], 0–1
};

class TopTokensView : public QTableWidget {
    Q_OBJECT
public:
    enum Column { RankColumn, TokenColumn, LogitColumn, ProbabilityColumn, ColumnCount };
    explicit TopTokensView(QWidget* parent = nullptr);
    /// Shows `tokens` in the given order (rank 1 first). The token id is in the token cell's tooltip
    /// and in its Qt::UserRole data.
    void setTokens(const QVector<TopToken>& tokens);
    /// The sentence shown while the table is empty (default: "Run a prompt to see the next-token predictions.").
    void setEmptyText(const QString& text);
};

} // namespace attnscope

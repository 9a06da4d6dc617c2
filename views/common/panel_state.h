#pragma once
// Reading a panel's saved settings (AnalysisPanel::restoreState) one value at a time: each getter
// returns the value when it is present and valid, nullopt otherwise; a present but invalid value adds
// a line "<panel>: <key> …" to the problems list (an absent key is fine: older sessions lack it).

#include "model/core/tensor.h"

#include <QJsonArray>
#include <QJsonObject>
#include <QString>
#include <QStringList>
#include <functional>
#include <optional>
#include <vector>

class QAbstractButton;
class QComboBox;
class QLineEdit;
class QObject;
class QPlainTextEdit;
class QSpinBox;

namespace attnscope {

class PanelStateReader {
public:
    /// `panel` names the panel in problems (its tab title); `problems` may be null.
    PanelStateReader(const QJsonObject& state, QString panel, QStringList* problems);

    /// An integer in [min, max].
    std::optional<int> integer(const QString& key, int min, int max) const;
    std::optional<bool> boolean(const QString& key) const;
    std::optional<QString> string(const QString& key) const;
    /// The index in `choices` of a string value that is one of them.
    std::optional<int> choice(const QString& key, const QStringList& choices) const;
    std::optional<QJsonArray> array(const QString& key) const;
    std::optional<QJsonObject> object(const QString& key) const;
    /// A matrix written by matrixToJson (model/analysis/attention/steps_json.h): rows of equal length of
    /// finite numbers, 1..maxRows × 1..maxCols.
    std::optional<Matrix> matrix(const QString& key, int maxRows, int maxCols) const;
    /// Sets `spin` to the integer `key` when it lies in the spin box's range (else a problem).
    void spinBox(const QString& key, QSpinBox* spin) const;
    /// Selects item i of `combo` when `key` holds names[i] (else a problem); names are in item order.
    void comboBox(const QString& key, const QStringList& names, QComboBox* combo) const;
    /// Adds "<panel>: <text>" to the problems.
    void problem(const QString& text) const;

private:
    /// The value of `key` if present and of `type`; a wrong type is reported as "expected <what>".
    std::optional<QJsonValue> value(const QString& key, QJsonValue::Type type, const char* what) const;

    QJsonObject state_;
    QString panel_;
    QStringList* problems_;
};

/// The inputs a view keeps in a session, each under its key: a combo box by the name of its choice
/// (names in item order), a spin box by its value, a check box as true/false, a text field by its text.
/// saveState writes them with save(); restoreState applies them with restore(), which reports what it
/// cannot use through the reader.
class SettingsBinding {
public:
    void add(const QString& key, QComboBox* combo, const QStringList& names);
    void add(const QString& key, QSpinBox* spin);
    void add(const QString& key, QAbstractButton* check);
    void add(const QString& key, QLineEdit* edit);
    void add(const QString& key, QPlainTextEdit* edit);
    /// Writes every bound input into `state` (other keys are kept).
    void save(QJsonObject& state) const;
    /// Applies every valid value, in the order the inputs were added, with their signals blocked: a restore
    /// starts no job per value; the view then updates what depends on them and runs once.
    void restore(const PanelStateReader& reader) const;

private:
    struct Entry {
        QObject* widget;
        std::function<void(QJsonObject&)> save;
        std::function<void(const PanelStateReader&)> restore;
    };
    std::vector<Entry> entries_;
};

} // namespace attnscope

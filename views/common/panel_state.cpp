#include "views/common/panel_state.h"

#include <QAbstractButton>
#include <QComboBox>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QSignalBlocker>
#include <QSpinBox>
#include <cmath>

namespace attnscope {

namespace {
QString shown(const QJsonValue& v) {
    if (v.isString()) return QStringLiteral("\"%1\"").arg(v.toString());
    if (v.isDouble()) return QString::number(v.toDouble());
    if (v.isBool()) return v.toBool() ? QStringLiteral("true") : QStringLiteral("false");
    if (v.isArray()) return QStringLiteral("an array");
    if (v.isObject()) return QStringLiteral("an object");
    return QStringLiteral("null");
}
} // namespace

PanelStateReader::PanelStateReader(const QJsonObject& state, QString panel, QStringList* problems)
    : state_(state), panel_(std::move(panel)), problems_(problems) {}

void PanelStateReader::problem(const QString& text) const {
    if (problems_) *problems_ << QStringLiteral("%1: %2").arg(panel_, text);
}

std::optional<QJsonValue> PanelStateReader::value(const QString& key, QJsonValue::Type type, const char* what) const {
    const QJsonValue v = state_.value(key);
    if (v.isUndefined()) return std::nullopt;
    if (v.type() != type) {
        problem(QStringLiteral("%1 must be %2, not %3").arg(key, QLatin1String(what), shown(v)));
        return std::nullopt;
    }
    return v;
}

std::optional<int> PanelStateReader::integer(const QString& key, int min, int max) const {
    const auto v = value(key, QJsonValue::Double, "a number");
    if (!v) return std::nullopt;
    const double d = v->toDouble();
    if (d != std::floor(d) || d < min || d > max) {
        problem(QStringLiteral("%1 = %2 is not an integer in %3..%4").arg(key, shown(*v)).arg(min).arg(max));
        return std::nullopt;
    }
    return int(d);
}

void PanelStateReader::spinBox(const QString& key, QSpinBox* spin) const {
    if (auto v = integer(key, spin->minimum(), spin->maximum())) spin->setValue(*v);
}

void PanelStateReader::comboBox(const QString& key, const QStringList& names, QComboBox* combo) const {
    if (auto i = choice(key, names)) combo->setCurrentIndex(*i);
}

std::optional<bool> PanelStateReader::boolean(const QString& key) const {
    const auto v = value(key, QJsonValue::Bool, "true or false");
    return v ? std::optional<bool>(v->toBool()) : std::nullopt;
}

std::optional<QString> PanelStateReader::string(const QString& key) const {
    const auto v = value(key, QJsonValue::String, "a string");
    return v ? std::optional<QString>(v->toString()) : std::nullopt;
}

std::optional<int> PanelStateReader::choice(const QString& key, const QStringList& choices) const {
    const auto s = string(key);
    if (!s) return std::nullopt;
    const int i = int(choices.indexOf(*s));
    if (i < 0) problem(QStringLiteral("%1 = \"%2\" is not one of %3").arg(key, *s, choices.join(QStringLiteral(", "))));
    return i < 0 ? std::nullopt : std::optional<int>(i);
}

std::optional<QJsonArray> PanelStateReader::array(const QString& key) const {
    const auto v = value(key, QJsonValue::Array, "an array");
    return v ? std::optional<QJsonArray>(v->toArray()) : std::nullopt;
}

std::optional<QJsonObject> PanelStateReader::object(const QString& key) const {
    const auto v = value(key, QJsonValue::Object, "an object");
    return v ? std::optional<QJsonObject>(v->toObject()) : std::nullopt;
}

std::optional<Matrix> PanelStateReader::matrix(const QString& key, int maxRows, int maxCols) const {
    const auto rows = array(key);
    if (!rows) return std::nullopt;
    const qsizetype cols = rows->isEmpty() ? 0 : rows->first().toArray().size();
    if (rows->size() < 1 || rows->size() > maxRows || cols < 1 || cols > maxCols) {
        problem(QStringLiteral("%1 must be a matrix of 1..%2 rows and 1..%3 columns").arg(key).arg(maxRows).arg(maxCols));
        return std::nullopt;
    }
    Matrix m(rows->size(), cols);
    for (qsizetype i = 0; i < rows->size(); ++i) {
        const QJsonArray row = rows->at(i).toArray();
        if (row.size() != cols) {
            problem(QStringLiteral("%1: row %2 has %3 values, row 0 has %4").arg(key).arg(i).arg(row.size()).arg(cols));
            return std::nullopt;
        }
        for (qsizetype j = 0; j < cols; ++j) {
            if (!row[j].isDouble() || !std::isfinite(row[j].toDouble())) {
                problem(QStringLiteral("%1: entry (%2, %3) is not a number").arg(key).arg(i).arg(j));
                return std::nullopt;
            }
            m(i, j) = float(row[j].toDouble());
        }
    }
    return m;
}

void SettingsBinding::add(const QString& key, QComboBox* combo, const QStringList& names) {
    entries_.push_back({combo, [=](QJsonObject& o) { o.insert(key, names.value(combo->currentIndex())); },
                        [=](const PanelStateReader& r) { r.comboBox(key, names, combo); }});
}

void SettingsBinding::add(const QString& key, QSpinBox* spin) {
    entries_.push_back({spin, [=](QJsonObject& o) { o.insert(key, spin->value()); },
                        [=](const PanelStateReader& r) { r.spinBox(key, spin); }});
}

void SettingsBinding::add(const QString& key, QAbstractButton* check) {
    entries_.push_back({check, [=](QJsonObject& o) { o.insert(key, check->isChecked()); },
                        [=](const PanelStateReader& r) {
                            if (auto b = r.boolean(key)) check->setChecked(*b);
                        }});
}

void SettingsBinding::add(const QString& key, QLineEdit* edit) {
    entries_.push_back({edit, [=](QJsonObject& o) { o.insert(key, edit->text()); },
                        [=](const PanelStateReader& r) {
                            if (auto t = r.string(key)) edit->setText(*t);
                        }});
}

void SettingsBinding::add(const QString& key, QPlainTextEdit* edit) {
    entries_.push_back({edit, [=](QJsonObject& o) { o.insert(key, edit->toPlainText()); },
                        [=](const PanelStateReader& r) {
                            if (auto t = r.string(key)) edit->setPlainText(*t);
                        }});
}

void SettingsBinding::save(QJsonObject& state) const {
    for (const Entry& e : entries_) e.save(state);
}

void SettingsBinding::restore(const PanelStateReader& reader) const {
    for (const Entry& e : entries_) {
        const QSignalBlocker block(e.widget);
        e.restore(reader);
    }
}

} // namespace attnscope

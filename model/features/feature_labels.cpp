#include "model/features/feature_labels.h"

#include "model/core/errors.h"
#include "model/features/config_fields.h"
#include "model/formats/gzip_file.h"
#include "model/formats/json_file.h"

#include <QDir>
#include <QDirIterator>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <algorithm>
#include <vector>

namespace attnscope {

namespace {

constexpr qint64 kMaxLabelFileBytes = qint64(1) << 30;

QString lineLabel(int line) { return QStringLiteral("line %1: ").arg(line); }

/// Adds one label; counts a feature already labelled as a duplicate.
void addLabel(FeatureLabels& out, int layer, int feature, const QString& text) {
    if (!out.labels.emplace(std::make_pair(layer, feature), text).second) ++out.duplicates;
}

/// A feature index given as a whole number ≥ 0, or as a string of one (Neuronpedia stores it as text).
int featureIndex(const QString& text, const QString& fileLabel, int line, const QString& field) {
    bool ok = false;
    const qint64 v = text.trimmed().toLongLong(&ok);
    if (!ok || v < 0 || v > std::numeric_limits<int>::max())
        throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("field \"%1\" must be a whole number ≥ 0, not \"%2\"").arg(field, text.left(40)));
    return int(v);
}

int featureIndex(const QJsonValue& v, const QString& fileLabel, int line, const QString& field) {
    if (v.isString()) return featureIndex(v.toString(), fileLabel, line, field);
    if (v.isDouble()) {
        const double d = v.toDouble();
        if (d >= 0 && d <= std::numeric_limits<int>::max() && d == std::floor(d)) return int(d);
    }
    throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("field \"%1\" must be a whole number ≥ 0, not %2").arg(field, describeJsonValue(v)));
}

/// "6-res-jb" → 6 (the layer Neuronpedia puts first in a source id); a bare "6" too.
int sourceLayer(const QString& source, const QString& fileLabel, int line) {
    const int dash = source.indexOf(QLatin1Char('-'));
    bool ok = false;
    const int layer = (dash < 0 ? source : source.left(dash)).toInt(&ok);
    if (!ok || layer < 0)
        throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("source \"%1\" (field \"layer\") does not start with a layer number").arg(source.left(60)));
    return layer;
}

/// Natural order: runs of digits compare as numbers ("batch-2" before "batch-10"), the rest character by character.
/// (QCollator's numeric mode needs ICU, which Qt builds need not have.)
bool naturalLess(const QString& a, const QString& b) {
    qsizetype i = 0, j = 0;
    while (i < a.size() && j < b.size()) {
        if (a[i].isDigit() && b[j].isDigit()) {
            qsizetype ei = i, ej = j;
            while (ei < a.size() && a[ei].isDigit()) ++ei;
            while (ej < b.size() && b[ej].isDigit()) ++ej;
            QStringView da = QStringView(a).mid(i, ei - i), db = QStringView(b).mid(j, ej - j);
            while (da.size() > 1 && da.front() == QLatin1Char('0')) da = da.mid(1);
            while (db.size() > 1 && db.front() == QLatin1Char('0')) db = db.mid(1);
            if (da.size() != db.size()) return da.size() < db.size();
            if (const int c = da.compare(db); c != 0) return c < 0;
            i = ei;
            j = ej;
        } else {
            if (a[i] != b[j]) return a[i] < b[j];
            ++i;
            ++j;
        }
    }
    return a.size() - i < b.size() - j;
}

void appendDistinct(QStringList& list, const QString& s) {
    if (!s.isEmpty() && !list.contains(s)) list << s;
}

/// Neuronpedia's explanation rows, one JSON object per line.
void readJsonl(const QByteArray& text, const QString& fileLabel, FeatureLabels& out) {
    int line = 0;
    qsizetype start = 0;
    while (start < text.size()) {
        qsizetype end = text.indexOf('\n', start);
        if (end < 0) end = text.size();
        const QByteArray row = text.mid(start, end - start).trimmed();
        start = end + 1;
        ++line;
        if (row.isEmpty()) continue;
        QJsonParseError err;
        const QJsonDocument doc = QJsonDocument::fromJson(row, &err);
        if (err.error != QJsonParseError::NoError)
            throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("not valid JSON: %1 at offset %2").arg(err.errorString()).arg(err.offset));
        if (!doc.isObject()) throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("not a JSON object"));
        const ConfigFields fields(doc.object(), fileLabel + QStringLiteral(": ") + lineLabel(line).chopped(2));
        const auto source = fields.string(QStringLiteral("layer"));
        if (!source) throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("field \"layer\" (the source id, e.g. \"6-res-jb\") is missing"));
        if (!fields.has(QStringLiteral("index"))) throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("field \"index\" is missing"));
        const int feature = featureIndex(doc.object().value(QStringLiteral("index")), fileLabel, line, QStringLiteral("index"));
        const QString description = fields.string(QStringLiteral("description")).value_or(QString()).trimmed();
        appendDistinct(out.modelIds, fields.string(QStringLiteral("modelId")).value_or(QString()));
        appendDistinct(out.sources, *source);
        const int layer = sourceLayer(*source, fileLabel, line);
        if (!description.isEmpty()) addLabel(out, layer, feature, description);
    }
}

/// RFC 4180 records: fields separated by commas, records by CRLF or LF, "…" quoting with "" for a quote.
std::vector<std::pair<int, QStringList>> csvRecords(const QString& text, const QString& fileLabel) {
    std::vector<std::pair<int, QStringList>> records;
    QStringList fields;
    QString field;
    bool quoted = false, any = false;
    int line = 1, recordLine = 1;
    const auto endRecord = [&] {
        if (any || !field.isEmpty() || !fields.isEmpty()) {
            fields << field;
            records.emplace_back(recordLine, fields);
        }
        fields.clear();
        field.clear();
        any = false;
    };
    for (qsizetype i = 0; i < text.size(); ++i) {
        const QChar c = text[i];
        if (quoted) {
            if (c == QLatin1Char('"')) {
                if (i + 1 < text.size() && text[i + 1] == QLatin1Char('"')) { field += c; ++i; }
                else quoted = false;
            } else {
                if (c == QLatin1Char('\n')) ++line;
                field += c;
            }
        } else if (c == QLatin1Char('"') && field.isEmpty()) {
            quoted = any = true;
        } else if (c == QLatin1Char(',')) {
            fields << field;
            field.clear();
            any = true;
        } else if (c == QLatin1Char('\n') || c == QLatin1Char('\r')) {
            if (c == QLatin1Char('\r') && i + 1 < text.size() && text[i + 1] == QLatin1Char('\n')) ++i;
            endRecord();
            recordLine = ++line;
        } else {
            field += c;
        }
    }
    if (quoted) throw ModelError(fileLabel, lineLabel(recordLine) + QStringLiteral("a quoted field is not closed"));
    endRecord();
    return records;
}

void readCsv(const QByteArray& bytes, const QString& fileLabel, FeatureLabels& out) {
    QString text = QString::fromUtf8(bytes);
    if (text.startsWith(QChar(0xFEFF))) text.remove(0, 1); // a UTF-8 byte-order mark, as spreadsheets write
    const auto records = csvRecords(text, fileLabel);
    if (records.empty()) throw ModelError(fileLabel, QStringLiteral("the CSV is empty (expected a header \"feature,label\" or \"layer,feature,label\")"));
    const QStringList header = records.front().second;
    const auto column = [&](std::initializer_list<const char*> names) {
        for (const char* n : names)
            for (int i = 0; i < header.size(); ++i)
                if (header[i].trimmed().compare(QLatin1String(n), Qt::CaseInsensitive) == 0) return i;
        return -1;
    };
    const int featureCol = column({"feature", "index"}), labelCol = column({"label", "description"}), layerCol = column({"layer"});
    if (featureCol < 0 || labelCol < 0)
        throw ModelError(fileLabel, QStringLiteral("line 1: the header must name the columns \"feature\" and \"label\" (and optionally \"layer\"), not \"%1\"")
                                        .arg(header.join(QLatin1Char(',')).left(80)));
    for (size_t r = 1; r < records.size(); ++r) {
        const auto& [line, fields] = records[r];
        const int need = std::max({featureCol, labelCol, layerCol}) + 1;
        if (fields.size() < need)
            throw ModelError(fileLabel, lineLabel(line) + QStringLiteral("%1 fields, the header has %2").arg(fields.size()).arg(header.size()));
        const int feature = featureIndex(fields[featureCol], fileLabel, line, header[featureCol].trimmed());
        const int layer = layerCol < 0 ? -1 : featureIndex(fields[layerCol], fileLabel, line, header[layerCol].trimmed());
        const QString label = fields[labelCol].trimmed();
        if (!label.isEmpty()) addLabel(out, layer, feature, label);
    }
}

bool isLabelFile(const QString& name) {
    return name.endsWith(QLatin1String(".jsonl"), Qt::CaseInsensitive) || name.endsWith(QLatin1String(".jsonl.gz"), Qt::CaseInsensitive) ||
           name.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive);
}

void readLabelFile(const QString& path, FeatureLabels& out) {
    const QString fileLabel = QDir::toNativeSeparators(path);
    if (!isLabelFile(path))
        throw ModelError(fileLabel, QStringLiteral("not a label file AttnScope reads (Neuronpedia's explanations .jsonl or .jsonl.gz, or a .csv)"));
    const bool gz = path.endsWith(QLatin1String(".gz"), Qt::CaseInsensitive);
    const QByteArray bytes = gz ? readGzipFile(path, fileLabel, kMaxLabelFileBytes) : readSmallFile(path, fileLabel, kMaxLabelFileBytes);
    out.files << path;
    if (path.endsWith(QLatin1String(".csv"), Qt::CaseInsensitive)) readCsv(bytes, fileLabel, out);
    else readJsonl(bytes, fileLabel, out);
}

} // namespace

QString FeatureLabels::label(int layer, int feature) const {
    if (auto it = labels.find({layer, feature}); it != labels.end()) return it->second;
    if (auto it = labels.find({-1, feature}); it != labels.end()) return it->second;
    return {};
}

void FeatureLabels::merge(const FeatureLabels& other) {
    for (const auto& [key, text] : other.labels) addLabel(*this, key.first, key.second, text);
    duplicates += other.duplicates;
    files += other.files;
    for (const QString& m : other.modelIds) appendDistinct(modelIds, m);
    for (const QString& s : other.sources) appendDistinct(sources, s);
}

QString FeatureLabels::summary() const {
    QString s = QStringLiteral("%1 labels from %2 file%3").arg(labels.size()).arg(files.size()).arg(files.size() == 1 ? "" : "s");
    QStringList parts;
    if (!modelIds.isEmpty()) parts << QStringLiteral("model %1").arg(modelIds.join(QStringLiteral(", ")));
    if (!sources.isEmpty())
        parts << QStringLiteral("source%1 %2").arg(sources.size() == 1 ? "" : "s", sources.size() <= 4 ? sources.join(QStringLiteral(", "))
                                                                                               : sources.mid(0, 3).join(QStringLiteral(", ")) + QStringLiteral(", …"));
    if (duplicates > 0) parts << QStringLiteral("%1 later duplicates ignored").arg(duplicates);
    return parts.isEmpty() ? s : s + QStringLiteral(" (") + parts.join(QStringLiteral("; ")) + QLatin1Char(')');
}

FeatureLabels readFeatureLabels(const QString& path) {
    FeatureLabels out;
    const QFileInfo info(path);
    if (!info.isDir()) {
        readLabelFile(path, out);
        return out;
    }
    QStringList files;
    const QString root = info.absoluteFilePath();
    QDirIterator it(root, QDir::Files | QDir::Readable, QDirIterator::Subdirectories);
    while (it.hasNext()) {
        const QString f = it.next();
        if (QDir(root).relativeFilePath(f).count(QLatin1Char('/')) <= 4 && isLabelFile(f)) files << f;
    }
    if (files.isEmpty())
        throw ModelError(QDir::toNativeSeparators(path), QStringLiteral("no label files in this folder (Neuronpedia's explanations/batch-N.jsonl.gz, .jsonl, or a .csv)"));
    std::sort(files.begin(), files.end(), naturalLess);
    for (const QString& f : files) readLabelFile(f, out);
    return out;
}

} // namespace attnscope

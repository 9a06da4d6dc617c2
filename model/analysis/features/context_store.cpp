#include "model/analysis/features/context_store.h"

#include "model/core/errors.h"

#include <QFileInfo>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QtEndian>
#include <atomic>
#include <cmath>
#include <limits>

namespace attnscope {

namespace {

std::atomic<int> connectionCounter{0};

template <typename T>
QByteArray blobOf(const std::vector<T>& v) {
    QByteArray b(qsizetype(v.size() * sizeof(T)), Qt::Uninitialized);
    for (size_t i = 0; i < v.size(); ++i) qToLittleEndian<T>(v[i], b.data() + i * sizeof(T));
    return b;
}

template <typename T>
std::vector<T> valuesOf(const QByteArray& b) {
    std::vector<T> v(size_t(b.size()) / sizeof(T));
    for (size_t i = 0; i < v.size(); ++i) v[i] = qFromLittleEndian<T>(b.constData() + i * sizeof(T));
    return v;
}

/// Runs `q` (prepared or not: `sql` empty) or throws InputError "PATH: cannot read the contexts database (WHAT): …".
void requireExec(QSqlQuery& q, const QString& path, const char* what, const QString& sql = {}) {
    if (sql.isEmpty() ? q.exec() : q.exec(sql)) return;
    throw InputError(QStringLiteral("%1: cannot read the contexts database (%2): %3").arg(path, QLatin1String(what), q.lastError().text()));
}

/// Column `i` of `q` as a whole number in [lo, hi], or InputError "PATH: TABLE.COLUMN …".
qint64 integerColumn(const QSqlQuery& q, int i, qint64 lo, qint64 hi, const QString& path, const char* column) {
    const QVariant v = q.value(i); // QSQLITE gives SQLite's INTEGER values as qlonglong; REAL, TEXT and BLOB are refused
    const bool integer = v.typeId() == QMetaType::LongLong || v.typeId() == QMetaType::Int;
    const qint64 x = integer ? v.toLongLong() : 0;
    if (!integer || x < lo || x > hi)
        throw InputError(QStringLiteral("%1: %2 is %3, not a whole number in [%4, %5]")
                             .arg(path, QLatin1String(column), v.toString().left(40)).arg(lo).arg(hi));
    return x;
}

/// One row of contexts (feature, activation, window, position from column `first`), checked: a finite activation,
/// a window ≥ 0, a position ≥ 0.
std::pair<int, ContextRecord> contextRow(const QSqlQuery& q, int first, const QString& path) {
    const int feature = int(integerColumn(q, first, 0, std::numeric_limits<int>::max(), path, "contexts.feature"));
    bool ok = false;
    const double a = q.value(first + 1).toDouble(&ok);
    if (!ok || !std::isfinite(float(a)))
        throw InputError(QStringLiteral("%1: contexts.activation of feature %2 is %3, not a finite number")
                             .arg(path).arg(feature).arg(q.value(first + 1).toString().left(40)));
    const qint64 window = integerColumn(q, first + 2, 0, std::numeric_limits<qint64>::max(), path, "contexts.window");
    const int position = int(integerColumn(q, first + 3, 0, std::numeric_limits<int>::max(), path, "contexts.position"));
    return {feature, ContextRecord{float(a), window, position}};
}

} // namespace

int histogramBin(float a) {
    if (a < 1e-4f) return 0;
    const int b = int(std::floor((std::log10(double(a)) + 4.0) * 8.0)) + 1;
    return std::clamp(b, 1, kHistogramBins - 1);
}

QString histogramConvention() {
    return QStringLiteral("activations > 0: bin 0 is (0, 1e-4); bin b in 1..64 is [10^(-4+(b-1)/8), 10^(-4+b/8)); bin 65 is >= 1e4");
}

ContextStore::ContextStore(const QString& path, bool create)
    : path_(path), connection_(QStringLiteral("attnscope-contexts-%1").arg(connectionCounter++)) {
    if (!create && !QFileInfo::exists(path)) throw InputError(QStringLiteral("%1: no such contexts database").arg(path));
    if (!QSqlDatabase::isDriverAvailable(QStringLiteral("QSQLITE")))
        throw InputError(QStringLiteral("%1: Qt's SQLite driver (QSQLITE) is not installed (Debian: libqt6sql6-sqlite)").arg(path));
    {
        QSqlDatabase db = QSqlDatabase::addDatabase(QStringLiteral("QSQLITE"), connection_);
        db.setDatabaseName(path);
        if (!create) db.setConnectOptions(QStringLiteral("QSQLITE_OPEN_READONLY"));
        if (!db.open()) {
            const QString e = db.lastError().text();
            db = QSqlDatabase();
            QSqlDatabase::removeDatabase(connection_);
            throw InputError(QStringLiteral("%1: cannot open the contexts database: %2").arg(path, e));
        }
    }
    if (!create) {
        QSqlQuery q(QSqlDatabase::database(connection_));
        if (!q.exec(QStringLiteral("SELECT value FROM meta WHERE key = 'format_version'")) || !q.next()) {
            q = QSqlQuery(); // released before the connection is removed
            close();
            throw InputError(QStringLiteral("%1: not an AttnScope contexts database").arg(path));
        }
        return;
    }
    QSqlQuery q(QSqlDatabase::database(connection_));
    for (const char* sql : {"PRAGMA synchronous = NORMAL",
                            "CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT)",
                            "CREATE TABLE IF NOT EXISTS contexts (feature INTEGER NOT NULL, activation REAL NOT NULL, "
                            "window INTEGER NOT NULL, position INTEGER NOT NULL)",
                            "CREATE INDEX IF NOT EXISTS contexts_feature ON contexts (feature, activation DESC)",
                            "CREATE INDEX IF NOT EXISTS contexts_window ON contexts (window)",
                            "CREATE TABLE IF NOT EXISTS windows (window INTEGER PRIMARY KEY, tokens BLOB NOT NULL)",
                            "CREATE TABLE IF NOT EXISTS histograms (feature INTEGER PRIMARY KEY, firing INTEGER NOT NULL, counts BLOB NOT NULL)",
                            "INSERT OR IGNORE INTO meta (key, value) VALUES ('format_version', '1')"})
        if (!q.exec(QString::fromLatin1(sql))) {
            const QString e = q.lastError().text();
            q = QSqlQuery(); // released before the connection is removed
            close();
            throw InputError(QStringLiteral("%1: cannot create the contexts database: %2").arg(path, e));
        }
}

ContextStore::~ContextStore() { close(); }

void ContextStore::close() {
    if (connection_.isEmpty()) return;
    {
        QSqlDatabase db = QSqlDatabase::database(connection_, false);
        db.close();
    }
    QSqlDatabase::removeDatabase(connection_);
    connection_.clear();
}

std::map<QString, QString> ContextStore::meta() const {
    std::map<QString, QString> m;
    QSqlQuery q(QSqlDatabase::database(connection_));
    requireExec(q, path_, "meta", QStringLiteral("SELECT key, value FROM meta"));
    while (q.next()) m[q.value(0).toString()] = q.value(1).toString();
    return m;
}

std::vector<ContextRecord> ContextStore::records(int feature) const {
    std::vector<ContextRecord> r;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT feature, activation, window, position FROM contexts WHERE feature = ?"));
    q.addBindValue(feature);
    requireExec(q, path_, "contexts");
    while (q.next()) r.push_back(contextRow(q, 0, path_).second);
    std::sort(r.begin(), r.end(), ranksBefore);
    return r;
}

std::map<int, std::vector<ContextRecord>> ContextStore::allRecords() const {
    std::map<int, std::vector<ContextRecord>> m;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.setForwardOnly(true);
    requireExec(q, path_, "contexts", QStringLiteral("SELECT feature, activation, window, position FROM contexts"));
    while (q.next()) {
        const auto [feature, record] = contextRow(q, 0, path_);
        m[feature].push_back(record);
    }
    for (auto& [f, r] : m) std::sort(r.begin(), r.end(), ranksBefore);
    return m;
}

std::pair<qint64, std::vector<qint64>> ContextStore::histogram(int feature) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT firing, counts FROM histograms WHERE feature = ?"));
    q.addBindValue(feature);
    requireExec(q, path_, "histograms");
    if (!q.next()) return {0, std::vector<qint64>(kHistogramBins, 0)};
    const qint64 firing = integerColumn(q, 0, 0, std::numeric_limits<qint64>::max(), path_, "histograms.firing");
    const QByteArray blob = q.value(1).toByteArray();
    if (blob.size() != kHistogramBins * qsizetype(sizeof(qint64)))
        throw InputError(QStringLiteral("%1: histograms.counts of feature %2 has %3 bytes, not %4 (%5 int64 bins)")
                             .arg(path_).arg(feature).arg(blob.size()).arg(kHistogramBins * sizeof(qint64)).arg(kHistogramBins));
    std::vector<qint64> counts = valuesOf<qint64>(blob);
    for (qint64 c : counts)
        if (c < 0) throw InputError(QStringLiteral("%1: histograms.counts of feature %2 holds a negative count (%3)").arg(path_).arg(feature).arg(c));
    return {firing, std::move(counts)};
}

std::vector<int> ContextStore::windowIds(qint64 window) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT tokens FROM windows WHERE window = ?"));
    q.addBindValue(window);
    requireExec(q, path_, "windows");
    if (!q.next()) return {};
    const QByteArray blob = q.value(0).toByteArray();
    if (blob.size() % qsizetype(sizeof(qint32)) != 0)
        throw InputError(QStringLiteral("%1: windows.tokens of window %2 has %3 bytes, not whole int32 token ids")
                             .arg(path_).arg(window).arg(blob.size()));
    return valuesOf<qint32>(blob);
}

std::vector<FeatureContext> ContextStore::topContexts(int feature, int n) const {
    std::vector<FeatureContext> out;
    for (const ContextRecord& r : records(feature)) {
        if (n > 0 && int(out.size()) >= n) break;
        std::vector<int> ids = windowIds(r.window);
        if (size_t(r.position) >= ids.size())
            throw InputError(QStringLiteral("%1: a context of feature %2 is at position %3 of window %4, which %5")
                                 .arg(path_).arg(feature).arg(r.position).arg(r.window)
                                 .arg(ids.empty() ? QStringLiteral("is not stored") : QStringLiteral("has %1 tokens").arg(ids.size())));
        out.push_back({r.activation, r.window, r.position, std::move(ids)});
    }
    return out;
}

void ContextStore::write(const ContextBatch& batch) {
    QSqlDatabase db = QSqlDatabase::database(connection_);
    auto fail = [&](const QSqlQuery& q) {
        const QString e = q.lastError().text();
        db.rollback();
        throw InputError(QStringLiteral("%1: cannot write the contexts database: %2").arg(path_, e));
    };
    if (!db.transaction()) throw InputError(QStringLiteral("%1: cannot write: %2").arg(path_, db.lastError().text()));
    {
        QSqlQuery q(db);
        q.prepare(QStringLiteral("INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)"));
        for (const auto& [k, v] : batch.meta) {
            q.bindValue(0, k);
            q.bindValue(1, v);
            if (!q.exec()) fail(q);
        }
        QSqlQuery del(db), ins(db);
        del.prepare(QStringLiteral("DELETE FROM contexts WHERE feature = ?"));
        ins.prepare(QStringLiteral("INSERT INTO contexts (feature, activation, window, position) VALUES (?, ?, ?, ?)"));
        for (const auto& [f, recs] : batch.contexts) {
            del.bindValue(0, f);
            if (!del.exec()) fail(del);
            for (const ContextRecord& r : recs) {
                ins.bindValue(0, f);
                ins.bindValue(1, double(r.activation));
                ins.bindValue(2, r.window);
                ins.bindValue(3, r.position);
                if (!ins.exec()) fail(ins);
            }
        }
        QSqlQuery hist(db);
        hist.prepare(QStringLiteral("INSERT OR REPLACE INTO histograms (feature, firing, counts) VALUES (?, ?, ?)"));
        for (const auto& [f, h] : batch.histograms) {
            hist.bindValue(0, f);
            hist.bindValue(1, h.first);
            hist.bindValue(2, blobOf<qint64>(h.second));
            if (!hist.exec()) fail(hist);
        }
        QSqlQuery win(db);
        win.prepare(QStringLiteral("INSERT OR IGNORE INTO windows (window, tokens) VALUES (?, ?)"));
        for (const auto& [w, ids] : batch.windows) {
            win.bindValue(0, w);
            win.bindValue(1, blobOf<qint32>(std::vector<qint32>(ids.begin(), ids.end())));
            if (!win.exec()) fail(win);
        }
        if (!batch.contexts.empty()) {
            QSqlQuery gc(db);
            if (!gc.exec(QStringLiteral("DELETE FROM windows WHERE window NOT IN (SELECT window FROM contexts)"))) fail(gc);
        }
    }
    if (!db.commit()) throw InputError(QStringLiteral("%1: cannot commit: %2").arg(path_, db.lastError().text()));
}

} // namespace attnscope

#include "model/analysis/features/context_store.h"

#include "model/core/errors.h"

#include <QFileInfo>
#include <QSqlDatabase>
#include <QSqlError>
#include <QSqlQuery>
#include <QtEndian>
#include <atomic>
#include <cmath>

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
    q.exec(QStringLiteral("SELECT key, value FROM meta"));
    while (q.next()) m[q.value(0).toString()] = q.value(1).toString();
    return m;
}

std::vector<ContextRecord> ContextStore::records(int feature) const {
    std::vector<ContextRecord> r;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT activation, window, position FROM contexts WHERE feature = ?"));
    q.addBindValue(feature);
    q.exec();
    while (q.next()) r.push_back({float(q.value(0).toDouble()), q.value(1).toLongLong(), q.value(2).toInt()});
    std::sort(r.begin(), r.end(), ranksBefore);
    return r;
}

std::map<int, std::vector<ContextRecord>> ContextStore::allRecords() const {
    std::map<int, std::vector<ContextRecord>> m;
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.setForwardOnly(true);
    q.exec(QStringLiteral("SELECT feature, activation, window, position FROM contexts"));
    while (q.next()) m[q.value(0).toInt()].push_back({float(q.value(1).toDouble()), q.value(2).toLongLong(), q.value(3).toInt()});
    for (auto& [f, r] : m) std::sort(r.begin(), r.end(), ranksBefore);
    return m;
}

std::pair<qint64, std::vector<qint64>> ContextStore::histogram(int feature) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT firing, counts FROM histograms WHERE feature = ?"));
    q.addBindValue(feature);
    if (q.exec() && q.next()) return {q.value(0).toLongLong(), valuesOf<qint64>(q.value(1).toByteArray())};
    return {0, std::vector<qint64>(kHistogramBins, 0)};
}

std::vector<int> ContextStore::windowIds(qint64 window) const {
    QSqlQuery q(QSqlDatabase::database(connection_));
    q.prepare(QStringLiteral("SELECT tokens FROM windows WHERE window = ?"));
    q.addBindValue(window);
    if (q.exec() && q.next()) return valuesOf<qint32>(q.value(0).toByteArray());
    return {};
}

std::vector<FeatureContext> ContextStore::topContexts(int feature, int n) const {
    std::vector<FeatureContext> out;
    for (const ContextRecord& r : records(feature)) {
        if (n > 0 && int(out.size()) >= n) break;
        out.push_back({r.activation, r.window, r.position, windowIds(r.window)});
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

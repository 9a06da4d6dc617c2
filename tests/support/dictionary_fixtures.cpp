#include "support/dictionary_fixtures.h"

#include "model/features/sparse_coder.h"
#include "support/safetensors_writer.h"

#include <QDir>
#include <QJsonDocument>
#include <QtEndian>
#include <algorithm>
#include <cmath>
#include <cstring>
#include <numeric>
#include <random>

#ifdef ATTNSCOPE_HAVE_MINIZIP
#include <minizip/zip.h>
#endif

namespace attnscope::test {

namespace {

MatrixD normal(int r, int c, double sd, std::mt19937& g) {
    std::normal_distribution<double> n(0.0, sd);
    MatrixD m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = n(g);
    return m;
}

RowD normalRow(int c, double sd, std::mt19937& g) { return normal(1, c, sd, g); }

/// float32 bits → bfloat16 (round to nearest even) / float16 (round to nearest even), by hand.
quint16 toBf16(float f) {
    quint32 b;
    std::memcpy(&b, &f, 4);
    const quint32 lsb = (b >> 16) & 1u;
    return quint16((b + 0x7FFFu + lsb) >> 16);
}

quint16 toF16(float f) {
    quint32 b;
    std::memcpy(&b, &f, 4);
    const quint32 sign = (b >> 16) & 0x8000u;
    int exp = int((b >> 23) & 0xFF) - 127 + 15;
    quint32 mant = b & 0x7FFFFFu;
    if (exp <= 0) { // subnormal or zero (the fixtures stay in the normal range)
        if (exp < -10) return quint16(sign);
        mant |= 0x800000u;
        const int shift = 14 - exp;
        quint32 h = mant >> shift;
        const quint32 rem = mant & ((1u << shift) - 1), half = 1u << (shift - 1);
        if (rem > half || (rem == half && (h & 1u))) ++h;
        return quint16(sign | h);
    }
    quint32 h = (quint32(exp) << 10) | (mant >> 13);
    const quint32 rem = mant & 0x1FFFu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return quint16(sign | h);
}

QByteArray bytesOf(const std::vector<double>& v, const QString& dtype) {
    QByteArray out;
    for (double d : v) {
        const float f = float(d);
        if (dtype == QLatin1String("F32")) {
            out.append(reinterpret_cast<const char*>(&f), 4);
        } else {
            const quint16 h = dtype == QLatin1String("BF16") ? toBf16(f) : toF16(f);
            out.append(reinterpret_cast<const char*>(&h), 2);
        }
    }
    return out;
}

double roundValue(double v, const QString& dtype) {
    FixtureTensor t{QStringLiteral("x"), dtype, {1}, bytesOf({v}, dtype)};
    return double(elementAsFloat(t, 0));
}

template <class M> M roundAll(M m, const QString& dtype) {
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = roundValue(m.data()[i], dtype);
    return m;
}

} // namespace

DictionaryParams randomParams(int d_in, int d_sae, int d_out, unsigned seed, bool negativeThresholds) {
    std::mt19937 g(seed);
    DictionaryParams p;
    p.W_enc = normal(d_in, d_sae, 1.0 / std::sqrt(double(d_in)), g);
    p.b_enc = normalRow(d_sae, 0.1, g);
    p.W_dec = normal(d_sae, d_out, 1.0 / std::sqrt(double(d_sae)), g);
    p.b_dec = normalRow(d_out, 0.1, g);
    std::uniform_real_distribution<double> u(negativeThresholds ? -0.3 : 0.05, 0.5);
    p.threshold = RowD(d_sae);
    for (int i = 0; i < d_sae; ++i) p.threshold(i) = u(g);
    p.b_gate = normalRow(d_sae, 0.1, g);
    p.b_mag = normalRow(d_sae, 0.1, g);
    p.r_mag = normalRow(d_sae, 0.2, g);
    p.W_skip = normal(d_in, d_out, 0.3 / std::sqrt(double(d_in)), g);
    return p;
}

MatrixD randomInput(int rows, int cols, unsigned seed) {
    std::mt19937 g(seed);
    std::normal_distribution<double> n(0.0, 1.0);
    MatrixD x(rows, cols);
    for (Eigen::Index i = 0; i < x.size(); ++i) x.data()[i] = double(float(n(g) * 1.5 + 0.3));
    return x;
}

QString referenceMismatch(const SparseCoder& sae, const DictionaryParams& p, const ReferenceSpec& spec, const MatrixD& x, int* firing,
                          double tol) {
    const Matrix xf = x.cast<float>();
    const Matrix f = encodeFeatures(sae, xf);
    const Matrix xhat = decodeFeatures(sae, f, xf);
    const auto [rf, rx] = referenceEncodeDecode(p, spec, x);
    int n = 0;
    for (Eigen::Index r = 0; r < rf.rows(); ++r)
        for (Eigen::Index c = 0; c < rf.cols(); ++c) {
            if (rf(r, c) != 0) ++n;
            if ((rf(r, c) != 0) != (f(r, c) != 0.0f) || std::abs(rf(r, c) - f(r, c)) > tol * (1 + std::abs(rf(r, c))))
                return QStringLiteral("f[%1, %2] = %3, reference %4").arg(r).arg(c).arg(double(f(r, c))).arg(rf(r, c));
        }
    if (firing) *firing = n;
    const double err = (xhat.cast<double>() - rx).cwiseAbs().maxCoeff();
    if (err > tol * (1 + rx.cwiseAbs().maxCoeff())) return QStringLiteral("x̂ differs from the reference by %1").arg(err);
    return {};
}

DictionaryParams roundedTo(const DictionaryParams& p, const QString& dtype) {
    DictionaryParams r = p;
    r.W_enc = roundAll(p.W_enc, dtype);
    r.b_enc = roundAll(p.b_enc, dtype);
    r.W_dec = roundAll(p.W_dec, dtype);
    r.b_dec = roundAll(p.b_dec, dtype);
    r.threshold = roundAll(p.threshold, dtype);
    r.b_gate = roundAll(p.b_gate, dtype);
    r.b_mag = roundAll(p.b_mag, dtype);
    r.r_mag = roundAll(p.r_mag, dtype);
    r.W_skip = roundAll(p.W_skip, dtype);
    return r;
}

std::pair<MatrixD, MatrixD> referenceEncodeDecode(const DictionaryParams& p, const ReferenceSpec& s, const MatrixD& x) {
    const Eigen::Index S = x.rows(), D = x.cols();
    Eigen::Index F = p.W_enc.cols();
    MatrixD xin = x;
    std::vector<double> mu(size_t(S), 0.0), sd(size_t(S), 1.0), coeff(size_t(S), 1.0);
    for (Eigen::Index r = 0; r < S; ++r) {
        if (s.norm == ReferenceSpec::ConstantNormRescale) {
            coeff[size_t(r)] = std::sqrt(double(D)) / x.row(r).norm();
            xin.row(r) *= coeff[size_t(r)];
        } else if (s.norm == ReferenceSpec::LayerNorm) { // torch: x.std() is unbiased; eps added to the std
            mu[size_t(r)] = x.row(r).mean();
            const RowD c = x.row(r).array() - mu[size_t(r)];
            sd[size_t(r)] = std::sqrt(c.squaredNorm() / double(D - 1));
            xin.row(r) = c / (sd[size_t(r)] + 1e-5);
        }
    }
    xin *= s.inputScale;
    if (s.applyBDecToInput) xin.rowwise() -= p.b_dec;
    MatrixD f = MatrixD::Zero(S, F);
    if (s.activation == ReferenceSpec::MatchingPursuit) {
        F = p.W_dec.rows();
        f = MatrixD::Zero(S, F);
        const int iterations = s.maxIterations < 0 ? int(D) : s.maxIterations;
        for (Eigen::Index r = 0; r < S; ++r) {
            RowD residual = xin.row(r);
            for (int it = 0; it < iterations; ++it) {
                const RowD scores = (s.residualUpdate ? residual : RowD(xin.row(r))) * p.W_dec.transpose();
                Eigen::Index best = 0;
                for (Eigen::Index j = 1; j < F; ++j)
                    if (std::max(scores(j), 0.0) > std::max(scores(best), 0.0)) best = j;
                const double a = std::max(scores(best), 0.0);
                const bool grew = a > 0 && f(r, best) == 0;
                f(r, best) += a;
                residual -= a * p.W_dec.row(best);
                if ((s.stopOnDuplicateSupport && !grew) || (s.residualThreshold > 0 && residual.norm() < s.residualThreshold)) break;
            }
        }
    }
    RowD norms(F);
    for (Eigen::Index j = 0; j < F; ++j) norms(j) = p.W_dec.row(j).norm();
    for (Eigen::Index r = 0; r < S && s.activation != ReferenceSpec::MatchingPursuit; ++r) {
        const RowD xw = xin.row(r) * p.W_enc;
        if (s.activation == ReferenceSpec::Gated) {
            for (Eigen::Index j = 0; j < F; ++j) {
                const double mag = std::max(0.0, xw(j) * std::exp(p.r_mag(j)) + p.b_mag(j));
                f(r, j) = xw(j) + p.b_gate(j) > 0 ? mag : 0.0;
            }
            continue;
        }
        RowD pre = xw + p.b_enc;
        if (s.activation == ReferenceSpec::ReLU) {
            f.row(r) = pre.cwiseMax(0.0);
        } else if (s.activation == ReferenceSpec::JumpReLU) {
            for (Eigen::Index j = 0; j < F; ++j) {
                const double th = p.threshold.size() ? p.threshold(j) : s.thresholdScalar;
                const double v = s.relu ? std::max(pre(j), 0.0) : pre(j);
                f(r, j) = pre(j) > th ? v : 0.0;
            }
        } else { // TopK
            if (s.rescaleByDecoderNorm) pre = pre.cwiseProduct(norms);
            std::vector<Eigen::Index> idx(static_cast<size_t>(F));
            std::iota(idx.begin(), idx.end(), 0);
            std::stable_sort(idx.begin(), idx.end(), [&](Eigen::Index a, Eigen::Index b) { return pre(a) > pre(b); });
            for (int i = 0; i < s.k; ++i) {
                const Eigen::Index j = idx[size_t(i)];
                f(r, j) = s.relu ? std::max(pre(j), 0.0) : pre(j);
            }
        }
    }
    MatrixD acts = f;
    if (s.activation == ReferenceSpec::TopK && s.rescaleByDecoderNorm)
        for (Eigen::Index j = 0; j < F; ++j) acts.col(j) /= norms(j);
    MatrixD out = acts * p.W_dec;
    if (s.activation != ReferenceSpec::MatchingPursuit || s.applyBDecToInput) out.rowwise() += p.b_dec; // tied MP: only with it
    out /= s.inputScale;
    if (!s.transcoder)
        for (Eigen::Index r = 0; r < S; ++r) {
            if (s.norm == ReferenceSpec::ConstantNormRescale) out.row(r) /= coeff[size_t(r)];
            else if (s.norm == ReferenceSpec::LayerNorm) out.row(r) = (out.row(r) * sd[size_t(r)]).array() + mu[size_t(r)];
        }
    if (s.skip) out += x * p.W_skip;
    return {f, out};
}

std::vector<double> valuesOf(const MatrixD& m) { return std::vector<double>(m.data(), m.data() + m.size()); }
std::vector<double> valuesOf(const RowD& r) { return std::vector<double>(r.data(), r.data() + r.size()); }
std::vector<double> transposedValuesOf(const MatrixD& m) {
    const MatrixD t = m.transpose();
    return valuesOf(t);
}

QByteArray safetensorsOf(const std::vector<std::pair<QString, std::pair<std::vector<qint64>, std::vector<double>>>>& tensors,
                         const QString& dtype) {
    std::vector<FixtureTensor> ts;
    for (const auto& [name, t] : tensors) ts.push_back({name, dtype, t.first, bytesOf(t.second, dtype)});
    return buildSafetensors(ts);
}

void writeSaeLensFolder(const QString& dir, const DictionaryParams& p, const QString& architecture, const QJsonObject& cfg,
                        const QString& dtype) {
    QDir().mkpath(dir);
    const qint64 din = p.W_enc.rows(), dsae = p.W_enc.cols(), dout = p.W_dec.cols();
    std::vector<std::pair<QString, std::pair<std::vector<qint64>, std::vector<double>>>> t{
        {QStringLiteral("W_enc"), {{din, dsae}, valuesOf(p.W_enc)}},
        {QStringLiteral("W_dec"), {{dsae, dout}, valuesOf(p.W_dec)}},
        {QStringLiteral("b_dec"), {{dout}, valuesOf(p.b_dec)}}};
    if (architecture == QLatin1String("matching_pursuit")) { // tied: W_dec and b_dec only (SAELens's state_dict)
        t.erase(t.begin());
        writeFile(QDir(dir).filePath(QStringLiteral("sae_weights.safetensors")), safetensorsOf(t, dtype));
        writeFile(QDir(dir).filePath(QStringLiteral("cfg.json")), QJsonDocument(cfg).toJson());
        return;
    }
    if (architecture == QLatin1String("gated")) {
        t.push_back({QStringLiteral("b_gate"), {{dsae}, valuesOf(p.b_gate)}});
        t.push_back({QStringLiteral("b_mag"), {{dsae}, valuesOf(p.b_mag)}});
        t.push_back({QStringLiteral("r_mag"), {{dsae}, valuesOf(p.r_mag)}});
    } else {
        t.push_back({QStringLiteral("b_enc"), {{dsae}, valuesOf(p.b_enc)}});
    }
    if (architecture.contains(QLatin1String("jumprelu")) || architecture.endsWith(QLatin1String("batchtopk")))
        t.push_back({QStringLiteral("threshold"), {{dsae}, valuesOf(p.threshold)}});
    if (architecture.endsWith(QLatin1String("skip_transcoder")))
        t.push_back({QStringLiteral("W_skip"), {{dout, din}, transposedValuesOf(p.W_skip)}});
    writeFile(QDir(dir).filePath(QStringLiteral("sae_weights.safetensors")), safetensorsOf(t, dtype));
    writeFile(QDir(dir).filePath(QStringLiteral("cfg.json")), QJsonDocument(cfg).toJson());
}

QByteArray circuitTracerLayer(const DictionaryParams& p, bool threshold, bool skip) {
    const qint64 dm = p.W_enc.rows(), dt = p.W_enc.cols();
    std::vector<std::pair<QString, std::pair<std::vector<qint64>, std::vector<double>>>> t{
        {QStringLiteral("W_enc"), {{dt, dm}, transposedValuesOf(p.W_enc)}},
        {QStringLiteral("W_dec"), {{dt, dm}, valuesOf(p.W_dec)}},
        {QStringLiteral("b_enc"), {{dt}, valuesOf(p.b_enc)}},
        {QStringLiteral("b_dec"), {{dm}, valuesOf(p.b_dec)}}};
    if (threshold) t.push_back({QStringLiteral("activation_function.threshold"), {{dt}, valuesOf(p.threshold)}});
    if (skip) t.push_back({QStringLiteral("W_skip"), {{dm, dm}, transposedValuesOf(p.W_skip)}});
    return safetensorsOf(t);
}


QByteArray npyOf(const std::vector<qint64>& shape, const std::vector<double>& values, bool float64) {
    QString dims;
    for (qint64 d : shape) dims += QString::number(d) + QLatin1Char(',');
    if (shape.size() > 1) dims.chop(1);
    QByteArray dict = QStringLiteral("{'descr': '%1', 'fortran_order': False, 'shape': (%2), }")
                          .arg(float64 ? QStringLiteral("<f8") : QStringLiteral("<f4"), dims).toLatin1();
    while ((10 + dict.size() + 1) % 64 != 0) dict.append(' ');
    dict.append('\n');
    QByteArray out("\x93NUMPY\x01\x00", 8);
    const quint16 len = quint16(dict.size());
    out.append(char(len & 0xFF)).append(char(len >> 8)).append(dict);
    for (double v : values) {
        if (float64) out.append(reinterpret_cast<const char*>(&v), 8);
        else {
            const float f = float(v);
            out.append(reinterpret_cast<const char*>(&f), 4);
        }
    }
    return out;
}

void writeZip(const QString& path, const std::vector<std::pair<QString, QByteArray>>& entries, bool deflate) {
#ifdef ATTNSCOPE_HAVE_MINIZIP
    zipFile z = zipOpen64(QFile::encodeName(path).constData(), 0);
    if (!z) qFatal("cannot create %s", qPrintable(path));
    for (const auto& [name, bytes] : entries) {
        zip_fileinfo info{};
        zipOpenNewFileInZip64(z, name.toUtf8().constData(), &info, nullptr, 0, nullptr, 0, nullptr, deflate ? Z_DEFLATED : 0,
                              deflate ? 6 : 0, 1);
        zipWriteInFileInZip(z, bytes.constData(), unsigned(bytes.size()));
        zipCloseFileInZip(z);
    }
    zipClose(z, nullptr);
#else
    Q_UNUSED(path);
    Q_UNUSED(entries);
    Q_UNUSED(deflate);
    qFatal("built without minizip");
#endif
}

} // namespace attnscope::test

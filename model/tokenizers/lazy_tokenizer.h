#pragma once
// A tokenizer that is loaded on a background thread and waited for on first use, so opening a model
// does not wait for parsing the GPT-2 vocabulary and merges (~50k entries each).

#include "model/tokenizers/tokenizer.h"

#include <exception>
#include <functional>
#include <future>
#include <memory>
#include <mutex>

namespace attnscope {

class LazyTokenizer : public Tokenizer {
public:
    /// Starts `load` on its own thread right away (std::async, not the shared Qt pool, so a pool full
    /// of jobs waiting for the tokenizer cannot deadlock).
    explicit LazyTokenizer(std::function<std::unique_ptr<Tokenizer>()> load);
    ~LazyTokenizer() override;

    /// Blocks until the tokenizer is loaded. Rethrows what `load` threw (e.g. ModelError for a bad
    /// vocab.json) here and from every method below, on every call: unlike an eagerly loaded
    /// tokenizer, a lazily loaded one can fail on first use.
    const Tokenizer& get() const;

    std::vector<int> encode(const QString& text) const override { return get().encode(text); }
    QByteArray decodeBytes(std::span<const int> ids) const override { return get().decodeBytes(ids); }
    QString displayToken(int id) const override { return get().displayToken(id); }
    QByteArray tokenBytes(int id) const override { return get().tokenBytes(id); }
    QString tokenString(int id) const override { return get().tokenString(id); }
    std::optional<int> tokenId(const QString& s) const override { return get().tokenId(s); }
    int vocabSize() const override { return get().vocabSize(); }
    std::optional<int> bosId() const override { return get().bosId(); }
    bool addsBos() const override { return get().addsBos(); }

private:
    mutable std::future<std::unique_ptr<Tokenizer>> pending_;
    mutable std::once_flag once_;
    mutable std::unique_ptr<Tokenizer> loaded_;
    mutable std::exception_ptr error_;
};

} // namespace attnscope

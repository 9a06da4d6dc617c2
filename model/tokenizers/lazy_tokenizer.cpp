#include "model/tokenizers/lazy_tokenizer.h"

namespace attnscope {

LazyTokenizer::LazyTokenizer(std::function<std::unique_ptr<Tokenizer>()> load)
    : pending_(std::async(std::launch::async, std::move(load))) {}

LazyTokenizer::~LazyTokenizer() {
    if (pending_.valid()) pending_.wait(); // never leave the loader thread running past the model
}

const Tokenizer& LazyTokenizer::get() const {
    std::call_once(once_, [this] {
        try {
            loaded_ = pending_.get();
        } catch (...) {
            error_ = std::current_exception();
        }
    });
    if (error_) std::rethrow_exception(error_);
    return *loaded_;
}

} // namespace attnscope

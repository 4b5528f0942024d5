#include "core/sha256.h"

#include "core/error.h"

#include <openssl/evp.h>

namespace specd {

namespace {

[[noreturn]] void evp_failed(const char * what) {
    // Only an allocation failure inside OpenSSL gets here.
    throw Error(ErrorKind::internal, std::string("SHA-256: ") + what + " failed (OpenSSL)");
}

} // namespace

void Sha256::CtxFree::operator()(evp_md_ctx_st * ctx) const { EVP_MD_CTX_free(ctx); }

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_) evp_failed("EVP_MD_CTX_new");
    reset();
}

Sha256::Sha256(const Sha256 & other) : ctx_(EVP_MD_CTX_new()) {
    if (!ctx_) evp_failed("EVP_MD_CTX_new");
    if (EVP_MD_CTX_copy_ex(ctx_.get(), other.ctx_.get()) != 1) evp_failed("EVP_MD_CTX_copy_ex");
}

Sha256 & Sha256::operator=(const Sha256 & other) {
    if (this != &other) {
        Sha256 copy(other);
        ctx_ = std::move(copy.ctx_);
    }
    return *this;
}

Sha256::~Sha256() = default;

void Sha256::reset() {
    if (EVP_DigestInit_ex(ctx_.get(), EVP_sha256(), nullptr) != 1) evp_failed("EVP_DigestInit_ex");
}

void Sha256::update(const void * data, size_t size) {
    if (size > 0 && EVP_DigestUpdate(ctx_.get(), data, size) != 1) evp_failed("EVP_DigestUpdate");
}

std::array<uint8_t, 32> Sha256::finish() {
    std::array<uint8_t, 32> out{};
    unsigned int            len = 0;
    if (EVP_DigestFinal_ex(ctx_.get(), out.data(), &len) != 1 || len != out.size()) evp_failed("EVP_DigestFinal_ex");
    return out;
}

std::string Sha256::finish_digest() {
    const auto hash = finish();
    return "sha256:" + to_hex(hash.data(), hash.size());
}

std::string to_hex(const uint8_t * data, size_t size) {
    static constexpr char digits[] = "0123456789abcdef";
    std::string out(size * 2, '\0');
    for (size_t i = 0; i < size; ++i) {
        out[2 * i]     = digits[data[i] >> 4];
        out[2 * i + 1] = digits[data[i] & 0xf];
    }
    return out;
}

std::string sha256_digest(std::string_view bytes) {
    Sha256 h;
    h.update(bytes);
    return h.finish_digest();
}

} // namespace specd

#pragma once
// A streaming SHA-256 (OpenSSL's EVP, which uses the CPU's SHA extensions or vectorised code:
// several times faster than portable C++ on the multi-gigabyte blobs that create, pull and
// push hash), shared by the model store's digests and the identity of request images.
#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

struct evp_md_ctx_st; // OpenSSL's EVP_MD_CTX, kept out of this header

namespace specd {

class Sha256 {
  public:
    Sha256();
    // A copy continues from the same state (a digest of the bytes so far, without ending
    // the original's stream).
    Sha256(const Sha256 & other);
    Sha256 & operator=(const Sha256 & other);
    Sha256(Sha256 &&) noexcept            = default;
    Sha256 & operator=(Sha256 &&) noexcept = default;
    ~Sha256();

    void update(const void * data, size_t size);
    void update(std::string_view bytes) { update(bytes.data(), bytes.size()); }

    // Ends the stream; the object must be reset() before it is used again.
    std::array<uint8_t, 32> finish();
    // finish() as "sha256:<lowercase hex>".
    std::string finish_digest();

    void reset();

  private:
    struct CtxFree {
        void operator()(evp_md_ctx_st * ctx) const;
    };
    std::unique_ptr<evp_md_ctx_st, CtxFree> ctx_;
};

std::string to_hex(const uint8_t * data, size_t size);

// "sha256:<hex>" of a whole buffer.
std::string sha256_digest(std::string_view bytes);

} // namespace specd

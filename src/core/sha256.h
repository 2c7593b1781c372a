// Incremental SHA-256 (OpenSSL), private to core.
#pragma once

#include <openssl/evp.h>

#include <string>

namespace trainscope::core {

class Sha256 {
 public:
  Sha256() : ctx_(EVP_MD_CTX_new()) { EVP_DigestInit_ex(ctx_, EVP_sha256(), nullptr); }
  ~Sha256() { EVP_MD_CTX_free(ctx_); }
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void update(const void* p, size_t n) { EVP_DigestUpdate(ctx_, p, n); }
  // Lowercase hex of the digest; call once.
  std::string hex() {
    unsigned char d[EVP_MAX_MD_SIZE];
    unsigned n = 0;
    EVP_DigestFinal_ex(ctx_, d, &n);
    static constexpr char kHex[] = "0123456789abcdef";
    std::string out(n * 2, '0');
    for (unsigned i = 0; i < n; ++i) {
      out[2 * i] = kHex[d[i] >> 4];
      out[2 * i + 1] = kHex[d[i] & 15];
    }
    return out;
  }

 private:
  EVP_MD_CTX* ctx_;
};

}  // namespace trainscope::core

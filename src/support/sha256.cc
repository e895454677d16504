// SHA-256 through OpenSSL's EVP interface.
#include "support/sha256.h"

#include <openssl/evp.h>

#include "support/error.h"

namespace comfuse {

std::string sha256_hex(std::string_view data) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  const bool ok = EVP_Digest(data.data(), data.size(), digest, &length, EVP_sha256(), nullptr) == 1;
  COMFUSE_CHECK(ok && length == 32, "EVP_Digest(sha256) failed");
  static constexpr char kHex[] = "0123456789abcdef";
  std::string hex;
  hex.reserve(2 * length);
  for (unsigned int i = 0; i < length; ++i) {
    hex.push_back(kHex[digest[i] >> 4]);
    hex.push_back(kHex[digest[i] & 15]);
  }
  return hex;
}

}  // namespace comfuse

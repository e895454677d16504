// Questions the code generator tests ask of emitted source text.
#pragma once

#include <string>

namespace comfuse::codegen::source_text {

inline bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

/// How many times `part` occurs in `text` (overlapping occurrences included).
inline int count(const std::string& text, const std::string& part) {
  int n = 0;
  for (std::size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++n;
  return n;
}

}  // namespace comfuse::codegen::source_text

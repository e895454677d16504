// Indentation bookkeeping for CodeStream.
#include "codegen/code_stream.h"

#include "support/error.h"

namespace comfuse::codegen {

CodeStream& CodeStream::line(const std::string& text) {
  if (!text.empty()) out_ << std::string(2 * depth_, ' ') << text;
  out_ << '\n';
  return *this;
}

CodeStream& CodeStream::open(const std::string& text) {
  line(text + " {");
  ++depth_;
  return *this;
}

CodeStream& CodeStream::close(const std::string& suffix) {
  COMFUSE_CHECK(depth_ > 0, "CodeStream::close without open");
  --depth_;
  return line("}" + suffix);
}

CodeStream& CodeStream::raw(const std::string& text) {
  out_ << text;
  return *this;
}

}  // namespace comfuse::codegen

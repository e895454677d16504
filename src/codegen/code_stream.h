// An indenting text stream for emitting readable CUDA source.
#pragma once

#include <sstream>
#include <string>

namespace comfuse::codegen {

class CodeStream {
 public:
  /// Appends one line at the current indentation.
  CodeStream& line(const std::string& text = {});
  /// Appends `text` then opens a block: "text {" and indents.
  CodeStream& open(const std::string& text);
  /// Closes a block opened by open(); `suffix` follows the brace (e.g. " else {" is not supported: use close
  /// + open).
  CodeStream& close(const std::string& suffix = {});
  /// Appends pre-formatted text verbatim (no indentation), e.g. the device helper prelude.
  CodeStream& raw(const std::string& text);
  std::string str() const { return out_.str(); }

 private:
  std::ostringstream out_;
  int depth_ = 0;
};

}  // namespace comfuse::codegen

// The message of the CompileError a piece of DSL code throws: what the error tests compare.
#pragma once

#include <string>

#include "support/error.h"

namespace comfuse::te {

/// The what() of the CompileError `build` throws, or "<no error>" when it throws none.
template <typename F>
std::string error_of(F&& build) {
  try {
    build();
  } catch (const CompileError& error) {
    return error.what();
  }
  return "<no error>";
}

}  // namespace comfuse::te

// `comfuse show`: the suite workloads, their programs, op graphs and keys.
#pragma once

#include <ostream>
#include <string>
#include <vector>

namespace comfuse::cli {

/// `show --list` or `show WORKLOAD [--shape M=…,K=…] [--dot FILE]`. Returns the exit code: 0, or 2 for an
/// unknown workload, a bad shape or bad arguments (with a message on `err` listing what is valid).
int run_show(const std::vector<std::string>& args, std::ostream& out, std::ostream& err);

}  // namespace comfuse::cli

// `comfuse tune`: autotunes a workload's fused kernel on the local GPU and reports the winner against
// cuBLAS's GEMM alone.
#pragma once

#include <map>
#include <ostream>
#include <string>
#include <vector>

#include "search/fault_injection.h"

namespace comfuse::cli {

/// `tune WORKLOAD [--shape M=…] [--trials N | --seconds S] [--exhaustive] [--log FILE] [--repeats N]
/// [--seed N] [--inject-faults SPEC] [--timeout S]`. Progress goes to `err`: redrawn in place with '\r' when
/// `err_is_terminal` (the caller knows; an ostream cannot tell), else one line per record. The summary goes
/// to `out`. Returns 0; 2 for bad arguments, an unfusable program or no candidate running correctly; 3 when
/// there is no GPU; 4 when the runtime fails.
int run_tune(const std::vector<std::string>& args, std::ostream& out, std::ostream& err,
             bool err_is_terminal = false);

/// Parses `--inject-faults` text: a comma list of KIND@ORDINAL (KIND oob_write, trap or hang; ORDINAL the
/// candidate's 0-based ordinal). Throws CompileError naming the offending item.
std::map<int, search::Fault> parse_fault_spec(const std::string& spec);

}  // namespace comfuse::cli

// global_exchange's protocol between the CTAs of a group, as data: codegen/exchange_emitter.cc emits its
// expressions, and a test model-checks it over every interleaving of a few CTAs and rounds.
//
// Round r of an exchanging group of `peers` CTAs: each CTA writes its row partials into buffer `buffer(r)`
// at its own rank, adds one to the group's counter (after a fence that releases the partials), waits until
// the counter has reached `arrivals(r)`, and reads every peer's partials from the same buffer. A CTA writes a
// buffer again only after the next round's wait, which no peer passes before it has read this round.
#pragma once

#include <cstdint>
#include <string>

namespace comfuse::codegen {

struct GroupExchangeProtocol {
  int buffers = 2;  // the partials' buffers a group cycles through, a round each

  int buffer(std::int64_t round) const { return static_cast<int>(round % buffers); }
  std::int64_t arrivals(std::int64_t round, int peers) const { return peers * (round + 1); }
  /// The same as C expressions of the round counter `round` (the group's size is CLUSTER_N).
  std::string buffer(const std::string& round) const {
    return buffers == 2 ? round + " & 1" : round + " % " + std::to_string(buffers);
  }
  std::string arrivals(const std::string& round) const { return "(u32)(CLUSTER_N * (" + round + " + 1))"; }
};

/// The protocol the emitted kernels follow.
inline GroupExchangeProtocol group_exchange_protocol() {
  return {};
}

}  // namespace comfuse::codegen

// global_exchange's protocol, model-checked: every interleaving of a group's CTAs over several rounds ends,
// and every read of a peer's partials finds that peer's partials of the reader's round.
#include "codegen/group_exchange.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <string>
#include <vector>

namespace comfuse::codegen {
namespace {

// A CTA's steps in round r: write its partials to buffer(r) at its rank, arrive on the counter, wait for
// arrivals(r), then read each peer's partials in rank order (one step a peer: a peer may move between them).
class ExchangeCheck {
 public:
  ExchangeCheck(GroupExchangeProtocol protocol, int peers, int rounds)
      : protocol_(protocol), peers_(peers), rounds_(rounds) {}

  /// "" if every interleaving finishes with every read right; otherwise the first failure found.
  std::string first_failure() {
    State start;
    start.step.assign(peers_, 0);
    start.buffers.assign(static_cast<std::size_t>(protocol_.buffers) * peers_, -1);
    seen_.clear();
    return explore(start);
  }

 private:
  struct State {
    std::vector<int> step;     // of each CTA: round * steps_per_round() + the step within the round
    std::int64_t counter = 0;  // arrivals so far
    std::vector<int> buffers;  // [buffer][rank]: the round whose partials it holds (-1: none yet)
    auto operator<=>(const State&) const = default;
  };

  int steps_per_round() const { return 3 + peers_; }

  std::string explore(const State& state) {
    if (!seen_.insert(state).second) return "";
    bool done = true, moved = false;
    for (int cta = 0; cta < peers_; ++cta) {
      const int step = state.step[cta];
      if (step == rounds_ * steps_per_round()) continue;
      done = false;
      const int round = step / steps_per_round(), at = step % steps_per_round();
      State next = state;
      ++next.step[cta];
      const int buffer = protocol_.buffer(round);
      if (at == 0) {
        next.buffers[buffer * peers_ + cta] = round;
      } else if (at == 1) {
        ++next.counter;
      } else if (at == 2) {
        if (state.counter < protocol_.arrivals(round, peers_)) continue;  // waits
      } else {
        const int peer = at - 3;
        const int found = state.buffers[buffer * peers_ + peer];
        if (found != round) {
          return "CTA " + std::to_string(cta) + " read peer " + std::to_string(peer) +
                 "'s partials of round " + std::to_string(found) + " in round " + std::to_string(round);
        }
      }
      moved = true;
      const std::string failure = explore(next);
      if (!failure.empty()) return failure;
    }
    if (!done && !moved) return "no CTA can move: a deadlock";
    return "";
  }

  GroupExchangeProtocol protocol_;
  int peers_, rounds_;
  std::set<State> seen_;
};

TEST(GroupExchangeProtocol, EveryInterleavingEndsAndReadsTheRoundsPartials) {
  for (const int peers : {2, 3}) {
    ExchangeCheck check(group_exchange_protocol(), peers, 4);
    EXPECT_EQ(check.first_failure(), "") << peers << " CTAs";
  }
}

TEST(GroupExchangeProtocol, TheCheckFindsOneBufferBroken) {
  // One buffer: a CTA done reading round 0 writes round 1 over partials a slower peer has yet to read.
  GroupExchangeProtocol one = group_exchange_protocol();
  one.buffers = 1;
  const std::string overwritten = ExchangeCheck(one, 2, 3).first_failure();
  EXPECT_NE(overwritten.find("partials of round 1 in round 0"), std::string::npos) << overwritten;
}

TEST(GroupExchangeProtocol, ExpressionsReadAsTheyAreEmitted) {
  const GroupExchangeProtocol protocol = group_exchange_protocol();
  EXPECT_EQ(protocol.buffer(std::string("xround")), "xround & 1");
  EXPECT_EQ(protocol.arrivals(std::string("xround")), "(u32)(CLUSTER_N * (xround + 1))");
  for (const std::int64_t round : {0, 1, 2, 5}) {
    EXPECT_EQ(protocol.buffer(round), round & 1);
    EXPECT_EQ(protocol.arrivals(round, 4), 4 * (round + 1));
  }
  GroupExchangeProtocol three = protocol;
  three.buffers = 3;
  EXPECT_EQ(three.buffer(std::string("xround")), "xround % 3");
}

}  // namespace
}  // namespace comfuse::codegen

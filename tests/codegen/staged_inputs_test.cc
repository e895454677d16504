// The staged inputs' barrier protocol, model-checked: every interleaving of the producer, the consumers and
// the TMA landings over a few tiles, with mbarrier parity waits, must finish, and every consumer must read
// its own tile's inputs from a slot that no load is writing. The protocol is the one StagedInputs emits from.
#include "codegen/staged_inputs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <string>
#include <vector>

#include "test_programs.h"

namespace comfuse::codegen {
namespace {

using schedule::Schedule;
using schedule::WarpRoles;

constexpr int kTiles = 6;

// What a consumer group does next with its tile: its mainloop, the wait on the tile's in_full barrier (then
// it reads the slot), the release of the slot.
enum class Step { kMainloop, kWait, kRelease, kDone };

struct State {
  int produced = 0;  // the producer's steps so far: two a tile, operands and inputs, in its order
  int operands = 0;  // tiles whose operands were issued
  // Mainloops finished, in tile order: ping-pong orders them, and one group takes each tile in turn.
  int mainloops = 0;
  int full_phase[2] = {0, 0}, empty_phase[2] = {0, 0};  // completed phases of each barrier
  int slot_tile[2] = {-1, -1};                          // the tile whose inputs a slot holds
  std::vector<int> landing;                             // tiles whose loads are in flight
  std::vector<int> tile, step, reading;                 // each group's tile, Step, slot read (or -1)

  std::vector<int> key() const {
    std::vector<int> k = {produced,       operands,       mainloops,    full_phase[0], full_phase[1],
                          empty_phase[0], empty_phase[1], slot_tile[0], slot_tile[1]};
    std::vector<int> l = landing;
    std::sort(l.begin(), l.end());
    k.push_back(-2);
    k.insert(k.end(), l.begin(), l.end());
    for (std::size_t g = 0; g < tile.size(); ++g) k.insert(k.end(), {tile[g], step[g], reading[g]});
    return k;
  }
};

// A wait on parity P passes once the phase of parity P before the current one has completed.
bool passes(int completed, int parity) {
  return (completed & 1) != parity;
}

std::string tile_name(int t) {
  return t < 0 ? "nothing" : "tile " + std::to_string(t);
}

// A step one of the parties can take: the state after it, what it was, and what it broke (empty if nothing).
struct Move {
  State next;
  std::string event, broken;
};
using Moves = std::vector<Move>;

class ProtocolCheck {
 public:
  // `groups`: 2 for ping-pong warpgroups taking alternate tiles, 1 for consumers that take every tile.
  ProtocolCheck(const StagedProtocol& p, int groups) : p_(p), groups_(groups) {}

  // The first interleaving found that breaks the protocol, with the events leading to it; empty if none does.
  std::string first_failure() {
    State s;
    for (int g = 0; g < groups_; ++g) {
      s.tile.push_back(g);
      s.step.push_back(static_cast<int>(Step::kMainloop));
      s.reading.push_back(-1);
    }
    seen_.clear();
    return explore(s);
  }

 private:
  // Takes `event` into `next` and explores from there, or reports `broken` with the events before it.
  std::string take(const State& next, const std::string& event, const std::string& broken = "") {
    trace_.push_back(event);
    std::string failure = broken.empty() ? explore(next) : describe(broken);
    trace_.pop_back();
    return failure;
  }

  std::string explore(const State& s) {
    if (!seen_.insert(s.key()).second) return "";
    Moves moves;
    producer_moves(s, moves);
    for (std::size_t i = 0; i < s.landing.size(); ++i) {  // the loads in flight land in any order
      const int t = s.landing[i];
      State n = s;
      n.landing.erase(n.landing.begin() + static_cast<std::ptrdiff_t>(i));
      n.slot_tile[p_.slot.of(t)] = t;
      ++n.full_phase[p_.full_barrier.of(t)];
      moves.push_back({n, tile_name(t) + "'s inputs land", ""});
    }
    bool done = s.produced == 2 * kTiles && s.landing.empty();
    for (int g = 0; g < groups_; ++g) {
      done = done && s.step[g] == static_cast<int>(Step::kDone);
      consumer_moves(s, g, moves);
    }
    if (moves.empty()) return done ? "" : describe("no one can move: a deadlock");
    for (const Move& move : moves) {
      if (std::string failure = take(move.next, move.event, move.broken); !failure.empty()) return failure;
    }
    return "";
  }

  void producer_moves(const State& s, Moves& moves) const {
    if (s.produced == 2 * kTiles) return;
    const int t = s.produced / 2;
    const bool inputs = (s.produced % 2 == 1) == p_.loads_after_operands;
    State n = s;
    ++n.produced;
    if (!inputs) {
      ++n.operands;
      moves.push_back({n, "producer: operands of " + tile_name(t), ""});
      return;
    }
    const int slot = p_.slot.of(t);
    if (!passes(s.empty_phase[slot], p_.empty_phase.of(t) ^ 1)) return;
    std::string broken;
    for (int g = 0; g < groups_; ++g) {
      if (s.reading[g] == slot)
        broken = tile_name(t) + "'s load into slot " + std::to_string(slot) + " while " +
                 tile_name(s.tile[g]) + " is read from it";
    }
    n.landing.push_back(t);
    moves.push_back({n, "producer: inputs of " + tile_name(t), broken});
  }

  void consumer_moves(const State& s, int g, Moves& moves) const {
    const int t = s.tile[g];
    State n = s;
    const std::string who = "group " + std::to_string(g) + ", " + tile_name(t) + ": ";
    switch (static_cast<Step>(s.step[g])) {
      case Step::kMainloop:
        if (s.operands <= t || s.mainloops != t) return;
        ++n.mainloops;
        n.step[g] = static_cast<int>(Step::kWait);
        moves.push_back({n, who + "mainloop", ""});
        return;
      case Step::kWait: {
        if (!passes(s.full_phase[p_.full_barrier.of(t)], p_.full_phase.of(t))) return;
        const int slot = p_.slot.of(t);
        n.reading[g] = slot;
        n.step[g] = static_cast<int>(Step::kRelease);
        bool in_flight = false;
        for (int l : s.landing) in_flight = in_flight || p_.slot.of(l) == slot;
        std::string broken;
        if (s.slot_tile[slot] != t || in_flight)
          broken = tile_name(t) + " read from slot " + std::to_string(slot) + ", which holds " +
                   tile_name(s.slot_tile[slot]) + (in_flight ? " with a load in flight" : "");
        moves.push_back({n, who + "passes its wait", broken});
        return;
      }
      case Step::kRelease:
        ++n.empty_phase[p_.slot.of(t)];
        n.reading[g] = -1;
        n.tile[g] = t + groups_;
        n.step[g] = static_cast<int>(n.tile[g] < kTiles ? Step::kMainloop : Step::kDone);
        moves.push_back({n, who + "releases", ""});
        return;
      case Step::kDone:
        return;
    }
  }

  std::string describe(const std::string& broken) const {
    std::string text = broken + ", after:";
    for (const std::string& event : trace_) text += "\n  " + event;
    return text;
  }

  StagedProtocol p_;
  int groups_;
  std::set<std::vector<int>> seen_;
  std::vector<std::string> trace_;
};

// The staged inputs of post-LN (its residual and bias) under the deferred 64 x 256 form, or 128 x 256
// cooperative, with one slot or two.
StagedProtocol protocol_of(WarpRoles roles, bool one_slot) {
  Schedule s = test_programs::deferred_ping_pong();
  s.bn = 256;
  s.stages = 3;
  s.tma_inputs = s.one_pass_variance = true;
  s.one_input_slot = one_slot;
  if (roles == WarpRoles::kCooperative) {
    s.bm = 128;
    s.warp_roles = roles;
  }
  const schedule::FusionPlan plan = test_programs::plan_of("post_layernorm", 256, 64, 1024);
  const StagedInputs staged(plan, s);
  EXPECT_FALSE(staged.empty());
  return staged.protocol();
}

TEST(StagedInputsProtocol, EveryInterleavingFinishesAndReadsItsOwnTile) {
  for (const WarpRoles roles : {WarpRoles::kPingPong, WarpRoles::kCooperative}) {
    for (const bool one_slot : {false, true}) {
      const int groups = roles == WarpRoles::kPingPong ? 2 : 1;
      ProtocolCheck check(protocol_of(roles, one_slot), groups);
      EXPECT_EQ(check.first_failure(), "")
          << (one_slot ? "one slot, " : "two slots, ") << groups << " groups";
    }
  }
}

TEST(StagedInputsProtocol, TheCheckFindsOneBarrierForOneSlotBroken) {
  // One slot with one in_full barrier, a phase a tile: a consumer that arrives before the tile before has
  // landed finds its own parity complete and reads a slot that does not hold its tile yet.
  StagedProtocol one_barrier = protocol_of(WarpRoles::kPingPong, true);
  one_barrier.full_barrier = TileBit::zero();
  one_barrier.full_phase = TileBit::bit(0);
  const std::string failure = ProtocolCheck(one_barrier, 2).first_failure();
  EXPECT_NE(failure.find("read from slot 0, which holds"), std::string::npos) << failure;
  // Two slots whose in_empty phases were counted a tile at a time: the producer of tile 1 waits for a phase
  // of slot 1 that no tile completes.
  StagedProtocol every_tile = protocol_of(WarpRoles::kPingPong, false);
  every_tile.empty_phase = TileBit::bit(0);
  const std::string stuck = ProtocolCheck(every_tile, 2).first_failure();
  EXPECT_NE(stuck.find("no one can move: a deadlock"), std::string::npos) << stuck;
}

TEST(StagedInputsProtocol, TileBitsReadAsTheyAreEmitted) {
  EXPECT_EQ(TileBit::zero().of(std::string("t")), "0");
  EXPECT_EQ(TileBit::bit(0).of(std::string("t")), "t & 1");
  EXPECT_EQ(TileBit::bit(1).of(std::string("g")), "(g >> 1) & 1");
  for (const std::int64_t t : {0, 1, 2, 3, 6, 7}) {
    EXPECT_EQ(TileBit::zero().of(t), 0);
    EXPECT_EQ(TileBit::bit(0).of(t), t & 1);
    EXPECT_EQ(TileBit::bit(1).of(t), (t >> 1) & 1);
  }
}

}  // namespace
}  // namespace comfuse::codegen

// The operand ring of the ping-pong mainloop, model-checked: every interleaving of the producer, the TMA
// landings, the two consumer warpgroups' waits and wgmma groups and their retirements over a few tiles, with
// mbarrier parity waits, must finish; each wgmma group must read its own K block from a stage that no load
// overwrites before the group retires; each warpgroup must start a tile right after the other's previous one.
// The consumers' steps are the kernel emitter's mainloop (KernelEmitter's tests check the emitted order):
//   if (t > 0) wait order;  for each K block { wait full[s]; issue; commit; wait<1>; release the block before
//   } [early_handoff: arrive order;]  wait<0>;  release the last block;  [otherwise: arrive order;]
#include <gtest/gtest.h>

#include <deque>
#include <set>
#include <string>
#include <vector>

namespace comfuse::codegen {
namespace {

struct Ring {
  int stages = 3;
  int k_blocks = 2;
  int tiles = 4;  // alternate tiles: warpgroup t % 2 takes tile t
  bool early_handoff = false;
  bool release_before_drain = false;  // a broken form: the last block released before its group retires
};

// A consumer's step: the ones of its tile's K blocks carry the block.
enum class Pc { kWaitOrder, kWaitFull, kIssue, kWait1, kRelease, kHandOver, kWait0, kReleaseLast, kNext };
struct Op {
  Pc pc;
  int kb = 0;
};

// A warpgroup's steps for one tile, in the kernel's order.
std::vector<Op> tile_program(const Ring& r) {
  std::vector<Op> program = {{Pc::kWaitOrder}};
  for (int kb = 0; kb < r.k_blocks; ++kb) {
    for (Pc pc : {Pc::kWaitFull, Pc::kIssue, Pc::kWait1, Pc::kRelease}) program.push_back({pc, kb});
  }
  const int last = r.k_blocks - 1;
  if (r.release_before_drain) {
    program.insert(program.end(), {{Pc::kHandOver}, {Pc::kReleaseLast, last}, {Pc::kWait0}});
  } else if (r.early_handoff) {
    program.insert(program.end(), {{Pc::kHandOver}, {Pc::kWait0}, {Pc::kReleaseLast, last}});
  } else {
    program.insert(program.end(), {{Pc::kWait0}, {Pc::kReleaseLast, last}, {Pc::kHandOver}});
  }
  program.push_back({Pc::kNext});
  return program;
}

struct Group {
  int tile = 0;               // >= the ring's tiles: done
  int step = 0;               // in tile_program
  std::deque<int> in_flight;  // committed wgmma groups not yet retired: the iteration each reads
};

struct State {
  int produced = 0;              // iterations (tile x K block) whose loads the producer issued
  std::vector<int> full, empty;  // completed phases of each stage's barriers
  std::vector<int> holds;        // the iteration whose operands each stage holds (-1: none yet)
  std::vector<int> landing;      // iterations whose loads are in flight
  int order = 0;                 // completed phases of the hand-over barrier
  Group group[2];

  std::vector<int> key() const {
    std::vector<int> k = {produced, order, -1};
    for (const auto* part : {&full, &empty, &holds, &landing}) {
      k.insert(k.end(), part->begin(), part->end());
      k.push_back(-1);
    }
    for (const Group& g : group) {
      k.insert(k.end(), {g.tile, g.step});
      k.insert(k.end(), g.in_flight.begin(), g.in_flight.end());
      k.push_back(-1);
    }
    return k;
  }
};

// A wait on parity P passes once the phase of parity P before the current one has completed.
bool passes(int completed, int parity) {
  return (completed & 1) != parity;
}

class RingCheck {
 public:
  explicit RingCheck(const Ring& r) : r_(r), program_(tile_program(r)) {}

  // The first interleaving found that breaks the ring, with the events leading to it; empty if none does.
  std::string first_failure() {
    State s;
    s.full.assign(r_.stages, 0);
    s.empty.assign(r_.stages, 0);
    s.holds.assign(r_.stages, -1);
    s.group[1].tile = 1;
    seen_.clear();
    return explore(s);
  }

  std::size_t states() const { return seen_.size(); }

 private:
  struct Move {
    State next;
    std::string event, broken;
  };

  int stage(int it) const { return it % r_.stages; }

  // The committed group that still reads stage `st`, named; empty if none does.
  std::string reader_of(const State& s, int st) const {
    for (int w = 0; w < 2; ++w) {
      for (int it : s.group[w].in_flight) {
        if (stage(it) == st)
          return "warpgroup " + std::to_string(w) + "'s group of iteration " + std::to_string(it);
      }
    }
    return "";
  }

  std::string explore(const State& s) {
    if (!seen_.insert(s.key()).second) return "";
    std::vector<Move> moves;
    if (s.produced < r_.tiles * r_.k_blocks) {  // the producer's next load, once its stage is released
      const int it = s.produced;
      if (passes(s.empty[stage(it)], ((it / r_.stages) & 1) ^ 1)) {
        State n = s;
        ++n.produced;
        n.landing.push_back(it);
        moves.push_back({n, "producer: loads iteration " + std::to_string(it), ""});
      }
    }
    for (std::size_t i = 0; i < s.landing.size(); ++i) {  // loads land in any order
      const int it = s.landing[i], st = stage(it);
      State n = s;
      n.landing.erase(n.landing.begin() + static_cast<std::ptrdiff_t>(i));
      n.holds[st] = it;
      ++n.full[st];
      const std::string reader = reader_of(s, st);
      moves.push_back({n, "iteration " + std::to_string(it) + " lands in stage " + std::to_string(st),
                       reader.empty() ? ""
                                      : "iteration " + std::to_string(it) + " overwrites stage " +
                                            std::to_string(st) + " under " + reader});
    }
    bool done = s.landing.empty();
    for (int w = 0; w < 2; ++w) {
      if (!s.group[w].in_flight.empty()) {  // the oldest committed group retires
        State n = s;
        n.group[w].in_flight.pop_front();
        moves.push_back({n, "warpgroup " + std::to_string(w) + ": a group retires", ""});
      }
      consumer_move(s, w, moves);
      done = done && s.group[w].tile >= r_.tiles && s.group[w].in_flight.empty();
    }
    if (moves.empty()) return done ? "" : describe("no one can move: a deadlock");
    for (const Move& move : moves) {
      trace_.push_back(move.event);
      std::string failure = move.broken.empty() ? explore(move.next) : describe(move.broken);
      trace_.pop_back();
      if (!failure.empty()) return failure;
    }
    return "";
  }

  void consumer_move(const State& s, int w, std::vector<Move>& moves) const {
    const Group& g = s.group[w];
    if (g.tile >= r_.tiles) return;
    const Op op = program_[g.step];
    const int it = g.tile * r_.k_blocks + op.kb, st = stage(it);
    State n = s;
    Group& m = n.group[w];
    ++m.step;
    std::string event = "warpgroup " + std::to_string(w) + ", tile " + std::to_string(g.tile) + ": ", broken;
    switch (op.pc) {
      case Pc::kWaitOrder:
        if (g.tile > 0 && !passes(s.order, (g.tile - 1) & 1)) return;
        if (s.order != g.tile)
          broken =
              "tile " + std::to_string(g.tile) + " starts after " + std::to_string(s.order) + " hand-overs";
        event += "starts";
        break;
      case Pc::kWaitFull: {
        if (!passes(s.full[st], (it / r_.stages) & 1)) return;
        bool landing = false;
        for (int l : s.landing) landing = landing || stage(l) == st;
        if (s.holds[st] != it || landing)
          broken = "iteration " + std::to_string(it) + " passes its wait on stage " + std::to_string(st) +
                   ", which holds iteration " + std::to_string(s.holds[st]) +
                   (landing ? ", a load landing" : "");
        event += "K block " + std::to_string(op.kb) + " ready";
        break;
      }
      case Pc::kIssue:
        m.in_flight.push_back(it);
        event += "issues K block " + std::to_string(op.kb);
        break;
      case Pc::kWait1:
        if (g.in_flight.size() > 1) return;
        event += "wait<1> passes";
        break;
      case Pc::kRelease:
        if (op.kb > 0) ++n.empty[stage(it - 1)];
        event += "releases the block before K block " + std::to_string(op.kb);
        break;
      case Pc::kHandOver:
        ++n.order;
        event += "hands over";
        break;
      case Pc::kWait0:
        if (!g.in_flight.empty()) return;
        event += "wait<0> passes";
        break;
      case Pc::kReleaseLast:
        ++n.empty[st];
        event += "releases its last block";
        break;
      case Pc::kNext:
        m.tile += 2;
        m.step = 0;
        event += "done";
        break;
    }
    moves.push_back({n, event, broken});
  }

  std::string describe(const std::string& broken) const {
    std::string text = broken + ", after:";
    for (const std::string& event : trace_) text += "\n  " + event;
    return text;
  }

  Ring r_;
  std::vector<Op> program_;
  std::set<std::vector<int>> seen_;
  std::vector<std::string> trace_;
};

TEST(RingProtocol, EveryInterleavingFinishesAndReadsItsOwnBlock) {
  // Both hand-overs, rings of two to four stages, tiles of one K block (each tile's stage the one two tiles
  // back) to five, four tiles (two a warpgroup) and five (three for the first).
  for (const bool early : {false, true}) {
    for (int stages = 2; stages <= 4; ++stages) {
      for (const int k_blocks : {1, 2, 3, 5}) {
        for (const int tiles : {4, 5}) {
          const Ring ring{.stages = stages, .k_blocks = k_blocks, .tiles = tiles, .early_handoff = early};
          RingCheck check(ring);
          EXPECT_EQ(check.first_failure(), "") << "early_handoff " << early << ", " << stages << " stages, "
                                               << k_blocks << " K blocks, " << tiles << " tiles";
          EXPECT_GT(check.states(), 10u);
        }
      }
    }
  }
}

TEST(RingProtocol, TheCheckFindsALastBlockReleasedBeforeItsGroupRetires) {
  // Released before wait<0>, the last stage can be refilled under the group still reading it.
  const Ring broken{
      .stages = 2, .k_blocks = 2, .tiles = 4, .early_handoff = true, .release_before_drain = true};
  const std::string failure = RingCheck(broken).first_failure();
  EXPECT_NE(failure.find("overwrites stage"), std::string::npos) << failure;
}

}  // namespace
}  // namespace comfuse::codegen

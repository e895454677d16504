// The schedule of a fused GEMM kernel: every knob a typed field, its legality against a plan, its JSON form.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "schedule/fusion_plan.h"
#include "te/dtype.h"

namespace comfuse::schedule {

/// How the consumer warpgroups share work.
enum class WarpRoles : std::uint8_t {
  kCooperative,  // the consumer warpgroups split the rows of one tile (64 rows each) and run its epilogue
                 // together
  kPingPong,     // two consumer warpgroups take alternate column tiles of the same 64 rows: one runs its
                 // epilogue while the other runs its mainloop
};

/// Where a reduction over a row's N columns combines.
enum class ReductionPlacement : std::uint8_t {
  kCta,       // one CTA owns whole rows and loops over the column tiles (in-thread, quad shuffle, warpgroups)
  kCluster,   // the CTAs of a cluster split the columns and combine row partials through distributed shared
              // memory
  kDeferred,  // each CTA reduces its own tile's columns and writes the row partials with its carried tiles to
              // an L2 workspace; a second, memory-bound kernel of the same source (the finish kernel)
              // combines each row's partials and runs the stage after the reduction. Plans of two stages,
              // carried tiles in the L2 stash, no cluster.
};

/// Where tiles needed after a reduction barrier live.
enum class ValueHome : std::uint8_t {
  kRegisters,  // in the accumulator registers: a CTA must hold all its columns in one tile
  kL2Stash,    // written to an f32 workspace (L2-resident) and re-read by the thread that wrote them
  kShared,  // written to the CTA's shared memory as f32, in the order of the threads that re-read them: all
            // of a CTA's column tiles must fit beside the operand ring
};

struct Schedule {
  int bm = 128;  // rows of a CTA's tile: 64 per consumer warpgroup (cooperative), 64 in ping-pong
  int bn = 128;  // columns of a tile: a multiple of 16 in [16, 256]
  int bk = 64;   // K per pipeline stage: 64 bf16 = one 128-byte swizzle row
  int stages = 4;
  int cluster_n = 1;  // CTAs per cluster along N: 1, 2, 4 or 8
  WarpRoles warp_roles = WarpRoles::kCooperative;
  ReductionPlacement reduction = ReductionPlacement::kCta;
  ValueHome carried = ValueHome::kRegisters;
  int raster_group_m = 8;  // tiles are visited in groups of this many row blocks (L2 reuse of B), >= 1
  // A grid of at most one CTA per SM whose CTAs stride over all tiles, so that the producer loads the next
  // tile while the consumers run this one's epilogue (and, in ping-pong, the other warpgroup its mainloop).
  // With row reductions, as many clusters as run at once walk the row blocks; ping-pong warpgroups then take
  // alternate row blocks, so that one's reductions and later stages run under the other's mainloops.
  // Written to JSON only when true: schedules logged before it replay as is.
  bool persistent = false;
  // Plans without row reductions whose one output is a 16-bit [M, N] tile: each consumer warpgroup writes its
  // 64 x BN output tile into 128-byte-swizzled shared memory and one thread stores it with TMA, which runs on
  // while the warpgroup goes on to its next tile. With a deferred reduction, the same for its one carried
  // tile in the bf16 stash. Written to JSON only when true, like `persistent`.
  bool tma_store = false;
  // Epilogue inputs read per element or per column (residuals, biases) and stash re-reads load each thread's
  // two neighbouring columns at once (32-bit for 16-bit types, 64-bit for f32); needs N even. Written to JSON
  // only when true, like `persistent`.
  bool vector_loads = false;
  // Plans that re-read carried tiles from a stash (L2 or shared memory): each later stage loads the re-read
  // values of 8 or 16 elements into registers before computing them, so that their latencies overlap. (The
  // stash's own stores in the same loop otherwise keep the compiler from moving a load above the previous
  // element's store.) Written to JSON only when true, like `persistent`.
  bool batched_reads = false;
  // With batched_reads: chunks of up to 64 re-read values a thread (shared among the carried tiles a stage
  // re-reads) instead of 8 or 16, and an L2 stash's two neighbouring columns loaded as one 64-bit word when N
  // is even, so that the later stages keep four times the bytes in flight. Written to JSON only when true.
  bool deep_reads = false;
  // Plans with a variance (a sum of squared deviations from a mean of the stage before): the variance is
  // summed in the mean's own stage, from shifted sums combined with Chan's formula, so that one pass over the
  // row (and one exchange of row partials) is gone. Written to JSON only when true.
  bool one_pass_variance = false;
  // Plans with inputs read per element (residuals): when the producer starts a tile's operands, it asks L2
  // for the tile's rows of those inputs (a bulk prefetch a row), so that the epilogue's loads after the
  // mainloop hit L2 instead of DRAM. Needs their rows 16-byte aligned. Written to JSON only when true.
  bool prefetch_inputs = false;
  // Plans with a softmax (a sum of exp(x - max) whose terms are a tile of the stage after the max): the sum
  // is kept online in the max's own stage (a running maximum, the sum rescaled when it grows) and the terms
  // are recomputed where they are read, so that one pass over the row, one exchange and one carried tile are
  // gone. Written to JSON only when true.
  bool online_softmax = false;
  // Plans combining row partials across a cluster: the exchange wait polls its mbarrier with relaxed
  // cluster-scope reads and acquires once, with a cluster-scope fence, after the phase completes (the
  // acquiring poll invalidates L1 on every spin). Written to JSON only when true.
  bool relaxed_exchange_wait = false;
  // Plans carrying one tile other than the anchor in registers: the carried value is written over the
  // accumulator element it was computed from (the anchor is read in the first stage only), so that the tile
  // costs no registers of its own and BN=256 fits beside the epilogue. Written to JSON only when true.
  bool carry_in_accumulator = false;
  // Reduction plans whose consumer warpgroups each hold one column tile of a row block: the producer loads
  // each tile's 16-bit inputs read per element or per column (residual, bias, gamma) with TMA into a
  // double-buffered shared-memory slot while the operands stream, and the epilogue reads them from there
  // instead of from global memory after the mainloop. Written to JSON only when true.
  bool tma_inputs = false;
  // Plans combining row partials across a cluster: a thread signals its peers with relaxed arrivals after one
  // cluster-scope fence, instead of an arrival with release semantics per peer (each a memory barrier).
  // Written to JSON only when true.
  bool fenced_exchange_arrive = false;
  // Every epilogue stage's element loop twice: for tiles wholly inside the matrix without bounds tests (and a
  // centered sum's shift taken at the thread's first element instead of tested at every one), and the tested
  // loop for the tiles at the matrix's edges. Written to JSON only when true.
  bool interior_tiles = false;
  // Plans re-reading carried tiles from a stash (L2 or shared memory): the stash holds them rounded to bf16
  // instead of f32, half the bytes written and re-read (and a shared stash fits in half the space). The
  // unfused pipeline rounds the GEMM's output to bf16 the same way; whether a workload's tolerance allows it
  // is for the reference check to say (a softmax of large logits does not). Written to JSON only when true.
  bool bf16_stash = false;
  // With online_softmax: the running maximum and sum take each element without a branch: one exp of
  // -|x - max| an element, the sum either rescaled by it (a new maximum) or increased by it, chosen by a
  // select, so that the update is no longer a data-dependent branch with up to two exps. Written to JSON only
  // when true.
  bool branchless_online_update = false;
  // With a deferred reduction over rows of at least kFinishSplit finish steps: the finish kernel takes a row
  // with kFinishSplit warps instead of one, each combining the row's partials itself and then taking every
  // kFinishSplit-th step along the row, so that short matrices still fill the GPU with loads in flight.
  // Written to JSON only when true.
  bool finish_row_split = false;
  // Plans whose element expressions take exp or tanh: both on the special-function unit, exp as ex2.approx
  // of x log2(e) and tanh as tanh.approx (relative error below 2^-10.9), instead of the accurate library
  // calls (about 20 instructions an element each). Row values and the reductions' own updates stay
  // accurate. Whether the workload's tolerance allows it is for the reference check to say. Written to JSON
  // only when true.
  bool approximate_math = false;
  // Kernels that take tiles without combining rows in the kernel (no row reductions, or a deferred one): the
  // CTAs run in clusters of two that take neighbouring row blocks of the same column tiles; each CTA's
  // producer loads half of every B box and multicasts it into both, so that B crosses from L2 once for two
  // row blocks. A stage is refilled only when the consumers of both CTAs have released it. Written to JSON
  // only when true.
  bool multicast_b = false;
  // Plans whose element expressions divide by a constant (a soft cap's x / 30): the division becomes a
  // multiplication by the constant's reciprocal, rounded to f32 (within an ulp of the quotient, where the
  // IEEE division is a dozen instructions and a slow path). Row values stay as they are. Whether the
  // workload's tolerance allows it is for the reference check to say. Written to JSON only when true.
  bool reciprocal_division = false;
  // With online_softmax and a deferred reduction, where the sum's x is the one carried tile and nothing else
  // re-reads it: the stash holds the terms exp(x - the tile's row maximum) in bf16 instead of x (the element
  // loop takes the maximum alone; a pass over the fragment sums and stores the terms); the finish kernel
  // scales them by exp(tile maximum - row maximum), one factor a column tile, instead of an exp an element.
  // Half the bytes of an f32 stash; the terms lie in (0, 1], so bf16's relative error holds where logits
  // would round too coarsely before the exp. The finish kernel also divides by row values (the softmax's
  // sum) as a multiplication by the row's reciprocal, one division a row instead of one an element (within
  // an ulp and a half of the quotient). Whether the workload's tolerance allows it is for the reference check
  // to say. Written to JSON only when true.
  bool stash_terms = false;
  // With a deferred reduction, the finish kernel's reads and writes in whole lines: its lanes take eight
  // consecutive columns at a time, loaded and stored as 16 bytes of 16-bit values (32 of f32) instead of two
  // columns as one word (a quarter of the load and store instructions, four times the bytes a load keeps in
  // flight); and the workspace holds a row's partials side by side, [M][floats][column tiles] instead of
  // [floats][column tiles][M], so that a warp reads a row's partials of one float from consecutive words (the
  // main kernel's writes of a tile's partials scatter instead). The finish kernel then loads nothing in pairs
  // or in batches: vector_loads, batched_reads and deep_reads are the main kernel's alone. Written to JSON
  // only when true.
  bool wide_finish = false;
  // With a deferred reduction, the finish kernel takes the rows last-first, meant to read the stash lines
  // of the main kernel's last rows while L2 still holds them. The rows' values are the same either way.
  // Measured slower (the search leaves it out; legal, for logged schedules and A/Bs). Written to JSON only
  // when true.
  bool reverse_finish = false;
  // With a deferred reduction whose main kernel stores its stash element-wise (no tma_store) or by TMA from
  // the staged slot (stash_in_slot): those stores carry an L2 evict_last policy, so that L2 keeps more of the
  // stash for the finish kernel. The kept lines push out the operands the main kernel re-reads: measured
  // slower (the search leaves it out; legal, for logged schedules and A/Bs). Written to JSON only when true.
  bool stash_evict_last = false;
  // With tma_store and BN of three boxes or more (192, 256): a warpgroup's tile leaves 64 columns at a time
  // through two 64 x 64 staging boxes, each stored as soon as the element loop has filled it (and refilled
  // once its store has read it), instead of through one 64 x BN buffer stored after the loop: a quarter
  // (BN = 256) to a third (192) of the staging memory, so that a 128 x 256 cooperative tile keeps four
  // pipeline stages beside it where it had room for three. Written to JSON only when true.
  bool store_chunks = false;
  // With tma_inputs and a deferred reduction (whose staged inputs only the main kernel's one stage reads):
  // one staging slot instead of two. The producer loads a tile's inputs once its operands are issued and the
  // previous tile's stage has released the slot, instead of before its operands into the other slot: half
  // the staged bytes (the residual's 32 KB of a 64 x 256 tile), room for a fourth operand stage beside them
  // where there was room for three. Also with row reductions combined in the kernel (a cluster form) whose
  // staged inputs the first stage alone reads: the slot is then released after the first stage, before the
  // exchange. Written to JSON only when true.
  bool one_input_slot = false;
  // With tma_inputs and vector_loads: the staged inputs read as the global ones are, a 32-bit word holding
  // the two neighbouring columns of a fragment's pair at the pair's first element, instead of one 16-bit
  // shared-memory load an element: half the element loop's shared-memory loads. Written to JSON only when
  // true.
  bool staged_pairs = false;
  // With a deferred reduction, tma_inputs and tma_store: the element loop writes the stash over the staged
  // 16-bit input tile it has just read (the residual), each pair at that input's pair in the slot, and each
  // 64-column box leaves by TMA from there as soon as it is whole; the slot is released once the stores have
  // read it. No staging tiles of its own, so that a 128 x 256 cooperative tile keeps three stages and a
  // staged slot beside the TMA store. Written to JSON only when true.
  bool stash_in_slot = false;
  // With a deferred reduction, wide_finish and a 16-bit stash: the lines read or written once are marked so,
  // for L2 to drop first: the main kernel's TMA loads of staged element-wise inputs (a residual) carry an
  // evict_first policy, and the finish kernel loads the stash and stores its outputs as streaming accesses
  // (.cs), so that L2 keeps what is read again (the operands, and the stash lines the finish kernel has yet
  // to read). Written to JSON only when true.
  bool streaming_hints = false;
  // Reductions combined across cluster_n CTAs on the persistent grid: the CTAs that walk a row block
  // together are consecutive blocks of a cooperative launch instead of a hardware cluster, and exchange
  // their row partials through the workspace in global memory (written to L2, then one release-add a round
  // on the group's counter, which the peers poll with acquiring loads) instead of distributed shared memory.
  // A cluster of four fits 30 times in the H200's GPCs (120 of 132 SMs); groups of four fill all 132, and
  // the exchange buffers leave shared memory. Measured slower: the group's CTAs wait 6-8 us for each other
  // at each exchange (the search leaves it out; legal, for logged schedules and A/Bs). Written to JSON only
  // when true.
  bool global_exchange = false;
  // With tma_inputs: only inputs read per element (a residual) are staged; those read per column (bias,
  // gamma, beta: a row of N, the same for every row block) are read from global memory, where L1 and L2
  // hold them, so that a slot is a residual tile alone (room for a fourth operand stage beside two slots of a
  // 64 x 256 tile). Measured slower where it was tried, with global_exchange (the search leaves it out;
  // legal). Written to JSON only when true.
  bool unstaged_vectors = false;
  // With tma_inputs, row reductions combined in the kernel and one column tile a CTA (a cluster form, whose
  // CTA keeps its columns while it walks the row blocks): the per-column vectors (bias, gamma, beta) are
  // loaded by TMA once, at the kernel's start, into shared memory of their own, and read from there by every
  // row block; the slot holds the residual alone, which the first stage reads (so one_input_slot applies).
  // Not searched: the post-LN cluster form with it, one slot and four stages ran 4.9% faster, still 17%
  // behind the deferred form (H200; benchmarks/NOTES.md, Change 69). Written to JSON only when true.
  bool resident_vectors = false;
  // With staged_pairs: each 64-column box's staged pairs are all loaded before the box's first element (16
  // shared-memory loads in flight at once, into registers), instead of each pair's loads at its first
  // element. The staged loads and the stash's stores over the slot are volatile, so they keep their order:
  // without it a pair's loads wait behind the previous pair's store, and each pair pays a load's latency.
  // Measured faster (the search takes it with every staged pair). Written to JSON only when true.
  bool box_reads = false;
  // 16-bit roundings inside the epilogue's expressions (a bf16 or f16 tensor's value, rounded before it is
  // used) through the packed conversion, cvt.rn.bf16x2.f32 (ptxas: F2FP, an ALU instruction), instead of the
  // scalar cvt.rn.bf16.f32 (F2F, on the narrower conversion pipe): the same bits. The plain GEMM's epilogue
  // rounds each element once this way before packing the pair (128 F2F a thread a 64 x 256 tile). Measured
  // faster or the same; a refinement (OptionalKnob::refines), on in every schedule the search generates.
  // Written to JSON only when true.
  bool packed_rounding = false;
  // The dynamic shared memory aligned to 1024 bytes by an offset added to the shared array, instead of by
  // rounding its generic address as an integer: the compiler then knows every pointer carved from it is
  // shared, and the element loop's stores to a staging tile are st.shared with 32-bit addresses instead of
  // generic stores with 64-bit address arithmetic (the plain GEMM's 64 a thread a tile, whose hoisted
  // addresses also spilled 44 bytes). A refinement, like packed_rounding. Written to JSON only when true.
  bool shared_pointers = false;
  // With a deferred reduction: the finish kernel computes the row's first-stage reductions itself, from the
  // stash it reads (a first walk along the row, then a warp combine), instead of combining partials the main
  // kernel's tiles wrote. The main kernel's element loop then only computes and stashes its tiles: no row
  // statistics, no tile-end combine, no partials. Over a bf16 stash read in groups or pairs, and rows of at
  // most kFinishKeptRegisters a lane, the first walk keeps the row's stash in registers for the second
  // (finish_row_in_registers); otherwise the second loads it again (on the H100 that grew the finish kernel
  // of N = 4096 by 45%: benchmarks/NOTES.md, Change 64). Needs every first-stage reduction to read carried
  // tiles and inputs alone (not the softmax's terms, whose tile maxima stash_terms takes), and a row a warp
  // (no finish_row_split). Rounds where the stash does (the statistics come from the stashed values).
  // Searched only where the wide walk keeps the row (Change 66). Written to JSON only when true.
  bool finish_reductions = false;
  // With a deferred reduction: the finish kernel runs as many CTAs as the device holds at once, and each warp
  // (or ROW_SPLIT warps) walks rows a grid apart; before a row's first load its lanes ask L2 for the stash
  // lines of the warp's next row (prefetch.global.L2, a 128-byte line a lane a step). The last partial wave
  // of CTAs goes, and a warp's next row streams in while it reduces and writes this one. The rows' values
  // are the same either way. Legal, not searched until measured. Written to JSON only when true.
  bool persistent_finish = false;
  // With ping-pong warp roles: a warpgroup lets the other start its mainloop as soon as it has issued its
  // last K block's wgmma, before waiting for them to retire, instead of after; the other's first wgmma then
  // queue behind this one's last group, and the tensor cores do not drain at each hand-over (the order
  // barrier's round trip and the other's first stage wait, a few hundred cycles a tile). The ring is safe
  // either way: the other warpgroup waits only on stages this one has passed, and this one's last stage is
  // released after its group retires, as before. Values are the same either way. Legal, not searched until
  // measured. Written to JSON only when true.
  bool early_handoff = false;

  bool deferred() const { return reduction == ReductionPlacement::kDeferred; }
  /// tma_store with rows combined in the kernel (which needs tma_inputs), or a deferred reduction's stash
  /// with stash_in_slot: the last stage (a deferred reduction's one stage) writes its output tile over the
  /// staged slot of a 16-bit input that only the first stage reads, and it leaves from there.
  bool stores_in_place() const { return tma_store && tma_inputs && (!deferred() || stash_in_slot); }
  int consumer_warpgroups() const { return warp_roles == WarpRoles::kPingPong ? 2 : bm / 64; }
  /// With row reductions on the persistent grid, ping-pong warpgroups take alternate row blocks (each with
  /// all of the CTA's column tiles, exchanging its own row partials) instead of alternate column tiles of the
  /// same rows.
  bool alternate_row_blocks() const {
    return persistent && warp_roles == WarpRoles::kPingPong && !deferred();
  }
  /// Ping-pong warpgroups keep shared buffers to combine their row partials, except where they own their
  /// rows and exchange through global memory (with DSMEM the buffers are carved though unused, as logged
  /// kernels have them).
  bool warpgroup_combine_buffers() const {
    return warp_roles == WarpRoles::kPingPong && !(global_exchange && alternate_row_blocks());
  }
  int threads() const { return 128 * (1 + consumer_warpgroups()); }
  /// Bytes of dynamic shared memory: the operand ring, the barriers and the reduction scratch, sized for
  /// `row_reductions` reductions ending the same stage (the cluster exchange holds a row partial per
  /// reduction per peer; values below 1 count as 1). check_legal passes the plan's count.
  std::int64_t shared_memory_bytes(int row_reductions = 1) const;
  /// Bytes of the TMA-store epilogue's staging tiles: 64 x BN bf16 per consumer warpgroup, or two 64 x 64
  /// boxes with store_chunks (0 without tma_store).
  std::int64_t output_staging_bytes() const {
    if (!tma_store || stores_in_place()) return 0;
    return std::int64_t{2} * 64 * (store_chunks ? 2 * 64 : bn) * consumer_warpgroups();
  }

  bool operator==(const Schedule&) const = default;
  /// Field by field: an order for sets of schedules (not the canonical order, which is that of the JSON
  /// texts).
  auto operator<=>(const Schedule&) const = default;
};

/// A boolean knob added after the first logs were written: in JSON only when true, absent meaning false.
struct OptionalKnob {
  const char* name;
  bool Schedule::*field;
  /// Whether the knob changes how values round (not only how they move): a candidate with it on may miss a
  /// workload's tolerance where the same schedule without it meets it.
  bool rounds = false;
  /// Of the knobs that round: whether it moves each value it changes by about an ulp at most (a division by
  /// a constant as a multiplication by its reciprocal), so that a tolerance meant for the kernel's own f32
  /// rounding admits it.
  bool within_an_ulp = false;
  /// Whether the knob only changes the instructions that compute the kernel's values, never the values nor
  /// where they live (a refinement: the same bits by fewer or cheaper instructions). The search turns a
  /// refinement on in every schedule it generates, and looks logged schedules up without refinements, so
  /// that a log written before a refinement existed still names schedules of the space.
  bool refines = false;
  /// Whether turning the knob on frees shared memory that a pipeline stage more can take, a stage that is
  /// often illegal without it: the search's neighbourhood offers the knob on together with that stage.
  bool frees_stage = false;
};
/// Every optional knob, in the order to_string names them.
std::span<const OptionalKnob> optional_knobs();
/// `s` with every refinement (OptionalKnob::refines) on: as the search generates it.
Schedule with_refinements(Schedule s);
/// `s` with every refinement (OptionalKnob::refines) off: the identity of a schedule when a log is searched.
Schedule without_refinements(Schedule s);
/// Whether `s` has a knob on that rounds values (OptionalKnob::rounds).
bool rounds(const Schedule& s);
/// Whether `s` has a knob on that rounds values by more than about an ulp (rounds, not within_an_ulp): the
/// candidates a workload's tolerance may refuse.
bool rounds_past_an_ulp(const Schedule& s);

/// Bytes of shared memory the carried tiles take with carried=shared: every carried tile of each of a CTA's
/// column tiles, f32 or bf16 (stash_dtype; 0 with any other value home).
std::int64_t shared_stash_bytes(const FusionPlan& plan, const Schedule& schedule);

/// Whether vector_loads loads `input` two columns at a time: 16-bit or f32, read per element or per column.
bool pair_loadable(const EpilogueInput& input);

/// Whether vector_loads changes the kernel of `plan` under `s`: N even, and a pair-loadable input or stash
/// re-reads.
bool vector_loads_apply(const FusionPlan& plan, const Schedule& s);

/// Whether batched_reads changes the kernel of `plan` under `s`: carried tiles re-read from a stash.
bool batched_reads_apply(const FusionPlan& plan, const Schedule& s);

/// Whether bf16_stash changes the kernel of `plan` under `s`: carried tiles in the L2 stash or shared memory.
bool bf16_stash_applies(const FusionPlan& plan, const Schedule& s);

/// The element type of the stash under `s`: bf16 with bf16_stash or stash_terms, f32 otherwise.
te::DType stash_dtype(const Schedule& s);

/// Whether `plan` (the plan a schedule runs, effective_plan) can stash its terms (stash_terms): one rescaled
/// sum and no centered sum, the sum's x a read of the one carried tile, which no later tile but the sum's
/// terms reads.
bool terms_stashable(const FusionPlan& plan);
/// Whether stash_terms can change the kernel of `plan` under `s` where terms_stashable holds: online_softmax
/// with a deferred reduction, no TMA store of the stash, and the finish kernel's table of column-tile
/// factors within kFinishScaleBytes.
bool stash_terms_fit(const FusionPlan& plan, const Schedule& s);

/// Whether wide_finish can change the kernel of `plan` under `s`: a deferred reduction, N a multiple of 8
/// (every group of eight columns lies wholly inside a row or outside it, 16-byte aligned), and every tile of
/// the plan and every input read by column 16-bit or f32 (the same for a plan and its merged forms).
bool wide_finish_applies(const FusionPlan& plan, const Schedule& s);
/// Whether stash_evict_last can change the kernel of `plan` under `s`: a deferred reduction with carried
/// tiles (a stash) stored element-wise or by TMA from the staged slot, not through the TMA store's own
/// staging.
bool stash_evict_last_applies(const FusionPlan& plan, const Schedule& s);
/// Whether store_chunks can change the kernel under `s`: tma_store with BN of three boxes of 64 or more,
/// staged in boxes of its own (not in place).
bool store_chunks_applies(const Schedule& s);
/// The staged input whose slot the output tile is written over with Schedule::stores_in_place: the first
/// input `plan` (the plan `s` runs) stages from a 16-bit [M, N] tile that no tensor after the first barrier
/// reads; null when there is none.
const EpilogueInput* in_place_store_input(const FusionPlan& plan, const Schedule& s);

/// Whether `plan` (the plan `s` runs, effective_plan) can defer its reduction to a finish kernel: one
/// reduction barrier (two stages), nothing reduced in the second.
bool deferrable(const FusionPlan& plan);

/// The finish kernel of a deferred reduction: its threads (8 warps a CTA), the warps that take a row with
/// finish_row_split (one without), the elements a lane takes of each step along a row (in column pairs; 64
/// measured slower on the H200, benchmarks/NOTES.md, Change 33) and so the columns of a warp's step.
inline constexpr int kFinishThreads = 256;
inline constexpr int kFinishSplit = 4;
inline constexpr int kFinishRowElements = 16;
inline constexpr int kFinishStepColumns = kFinishRowElements / 2 * 64;
/// With stash_terms: the most shared memory a finish CTA's tables of column-tile factors take (a float a
/// column tile for each of its warps).
inline constexpr int kFinishScaleBytes = 32 * 1024;

/// Rows a finish CTA takes: one a warp, or one per kFinishSplit warps with finish_row_split.
int finish_rows_per_cta(const Schedule& s);

/// Whether finish_row_split can change the kernel of `plan` under `s`: a deferred reduction (with row
/// reductions) over rows of at least kFinishSplit steps (N >= kFinishSplit x kFinishStepColumns).
bool finish_row_split_applies(const FusionPlan& plan, const Schedule& s);

/// Whether multicast_b can change the kernel of `plan` under `s`: its CTAs take tiles without combining
/// row partials (no row reductions, or a deferred placement) and form no cluster along N.
bool multicast_b_applies(const FusionPlan& plan, const Schedule& s);
/// CTAs a cluster of the main kernel: cluster_n for reductions combined across a cluster (1 with
/// global_exchange: no hardware cluster), 2 with multicast_b.
int cluster_ctas(const FusionPlan& plan, const Schedule& s);
/// Whether global_exchange can change the kernel of `plan` under `s`: row reductions combined across
/// cluster_n > 1 CTAs in the kernel, on the persistent grid (whose cooperative launch keeps every CTA of a
/// group resident while its peers wait for it).
bool global_exchange_applies(const FusionPlan& plan, const Schedule& s);
/// Whether unstaged_vectors can change the kernel of `plan` (the plan `s` runs) under `s`: tma_inputs with
/// 16-bit inputs read per element and per column, so that the vectors leave the slot and the tile stays.
bool unstaged_vectors_apply(const FusionPlan& plan, const Schedule& s);
/// Whether resident_vectors can change the kernel of `plan` (the plan `s` runs) under `s`: tma_inputs with
/// row reductions combined in the kernel, one column tile a CTA, and a per-column vector staged.
bool resident_vectors_apply(const FusionPlan& plan, const Schedule& s);
/// Whether `input` is staged in the slot that the producer fills a tile at a time (staged, and not one of the
/// resident vectors).
bool in_staged_slot(const FusionPlan& plan, const Schedule& s, const EpilogueInput& input);

/// Whether `e` itself is what reciprocal_division rewrites: an f32 division by a constant.
bool divides_by_constant(const te::Expr& e);
/// Whether `e` is an f32 division by a value of its row alone (a divisor that reads row values of `plan`
/// and constants only, such as a softmax's sum): what stash_terms's finish kernel multiplies by the row's
/// reciprocal instead.
bool divides_by_row_value(const FusionPlan& plan, const te::Expr& e);
/// Whether reciprocal_division changes the kernel of `plan`: an element expression of its epilogue divides
/// an f32 value by a constant.
bool reciprocal_division_applies(const FusionPlan& plan);

/// Whether approximate_math changes the kernel of `plan`: an element expression of its epilogue takes exp or
/// tanh.
bool approximate_math_applies(const FusionPlan& plan);

/// Whether prefetch_inputs can change the kernel of `plan`: an input read per element whose rows are 16-byte
/// aligned (N x its size a multiple of 16 bytes).
bool prefetch_inputs_apply(const FusionPlan& plan);

/// Whether one_pass_variance changes the kernel of `plan`: it holds a centered sum (find_centered_sums).
bool one_pass_variance_applies(const FusionPlan& plan);

/// Whether online_softmax changes the kernel of `plan`: it holds a rescaled sum (find_rescaled_sums).
bool online_softmax_applies(const FusionPlan& plan);

/// Whether carry_in_accumulator changes the kernel of `plan` under `s`: carried=registers, and the plan
/// `s` runs (effective_plan) carries exactly one tile, not the anchor.
bool carry_in_accumulator_applies(const FusionPlan& plan, const Schedule& s);

/// Whether tma_inputs stages `input`: 16 bits, read per element or per column.
bool tma_staged(const EpilogueInput& input);

/// Whether tma_inputs stages `input` of `plan` under `s`: tma_staged, and with a deferred reduction read in
/// stage 0 (the main kernel's; the finish kernel reads the rest from global memory).
bool stages_input(const FusionPlan& plan, const Schedule& s, const EpilogueInput& input);

/// Whether tma_inputs applies to `plan` under `s`: row reductions, each consumer warpgroup holding one column
/// tile of a row block with carried tiles in registers (tiles_per_warpgroup) or a deferred reduction (a tile
/// at a time), a staged input, and N a multiple of 8 (TMA needs 16-byte row strides).
bool tma_inputs_apply(const FusionPlan& plan, const Schedule& s);

/// Column tiles each consumer warpgroup holds of a row block: a CTA's tiles, split between ping-pong
/// warpgroups that share rows.
std::int64_t tiles_per_warpgroup(const FusionPlan& plan, const Schedule& s);

/// Bytes of shared memory for tma_inputs: two slots (one with one_input_slot), each with every staged input's
/// tile in 64-column boxes (BM rows per element-wise input, one row per column vector, 1024-byte aligned),
/// and the slots' four mbarriers (0 without the knob).
std::int64_t staged_input_bytes(const FusionPlan& plan, const Schedule& s);
/// Whether every input `s` stages in the slot is read by the plan's first stage alone (the tiles that later
/// stages read are computed from them there; resident vectors are not in the slot).
bool staged_reads_end_in_first_stage(const FusionPlan& plan, const Schedule& s);
/// Whether one_input_slot applies to `plan` (the plan `s` runs) under `s`: tma_inputs with a deferred
/// reduction, or with row reductions combined in the kernel whose staged inputs the first stage alone reads
/// (unstaged_vectors leaves the later stages' vectors out of the slot) and no output stored in place.
bool one_input_slot_applies(const FusionPlan& plan, const Schedule& s);
/// Whether staged_pairs applies under `s`: tma_inputs with vector_loads (N even, as tma_inputs needs).
bool staged_pairs_applies(const Schedule& s);
/// Whether box_reads applies under `s`: staged_pairs.
bool box_reads_applies(const Schedule& s);
/// Whether finish_reductions can change the kernel of `plan` under `s`: a deferred reduction without
/// online_softmax, stash_terms or finish_row_split, whose first-stage reductions (in the plan `s` runs) read
/// only carried tiles and epilogue inputs.
bool finish_reductions_apply(const FusionPlan& plan, const Schedule& s);
/// With finish_reductions, the most registers a lane of the finish kernel keeps its rows' stash in between
/// its two walks (N = 4096 over a bf16 stash: 16 groups of eight in the wide walk, 64 column pairs in the
/// pairs walk).
inline constexpr int kFinishKeptRegisters = 64;
/// Whether the finish kernel keeps each row's stash in registers between its two walks: finish_reductions
/// over a bf16 stash read a 16-byte group (wide_finish) or a column pair (vector_loads, N even) at a time,
/// every carried tile's row in at most kFinishKeptRegisters a lane.
bool finish_row_in_registers(const FusionPlan& plan, const Schedule& s);
/// Whether stash_in_slot applies under `s` to `plan` (the effective plan): a deferred reduction with
/// tma_store and a staged 16-bit input tile to write the stash over (in_place_store_input).
bool stash_in_slot_applies(const FusionPlan& plan, const Schedule& s);
/// Whether streaming_hints applies under `s`: wide_finish is on (the hints go on the finish kernel's wide
/// loads and stores; whether the plan takes the wide walk is wide_finish's own check, made before), with a
/// 16-bit stash (an f32 one streamed measured 10% slower on the H100: benchmarks/NOTES.md, Change 50).
bool streaming_hints_apply(const Schedule& s);

/// The plan the kernel of `s` runs: `plan` with its centered sums merged into their centers' stages under
/// one_pass_variance (merge_centered_sums) and its rescaled sums under online_softmax (merge_rescaled_sums).
/// check_legal, the emitters and the cost model take it.
FusionPlan effective_plan(const FusionPlan& plan, const Schedule& s);

/// f(the plan `s` runs): `plan` itself when no knob rewrites it, else effective_plan's copy (for queries
/// asked of every schedule of a space, where the copies dominate).
template <typename F>
auto with_effective_plan(const FusionPlan& plan, const Schedule& s, F f) {
  if (!s.one_pass_variance && !s.online_softmax) return f(plan);
  return f(effective_plan(plan, s));
}

/// Elements a thread loads ahead per chunk of a stage that re-reads `rereads` carried tiles under
/// batched_reads: 16 or 8 (whichever divides BN / 2), with deep_reads the largest of 64, 32, 16 and 8 that
/// divides BN / 2 and keeps rereads x chunk <= 64 (at least 8).
int read_chunk(const Schedule& s, std::size_t rereads);

/// Hard limits of the target the legality checks use.
struct TargetLimits {
  std::int64_t max_shared_memory_per_block = 227 * 1024;
  std::int64_t shared_memory_per_multiprocessor = 228 * 1024;  // the CTAs an SM holds at once share it
  std::int64_t shared_memory_reserved_per_block = 1024;        // by the system, of each resident CTA
  int max_cluster_size = 8;
  int registers_per_consumer_thread = 232;  // after setmaxnreg
};

/// Throws CompileError naming the plan's anchor, the knob and the values when `schedule` cannot run `plan`:
/// `schedule for 'Y': BN=200 is not a multiple of 16`.
void check_legal(const FusionPlan& plan, const Schedule& schedule, const TargetLimits& limits = {});

/// The heuristic schedule for a plan (replaced by search in the tuner). Always legal for the plan.
Schedule default_schedule(const FusionPlan& plan, const TargetLimits& limits = {});

/// Accumulator registers a consumer thread needs: the live tile plus carried tiles kept in registers.
int accumulator_registers(const FusionPlan& plan, const Schedule& schedule);

nlohmann::json to_json(const Schedule& schedule);
/// Parses a schedule; unknown or missing fields, wrong types and out-of-range enums are CompileErrors with
/// the JSON path (`schedule.warp_roles: unknown value 'pingpong'`). Range checks beyond types are
/// check_legal's.
Schedule schedule_from_json(const nlohmann::json& json, const std::string& path = "schedule");
std::string to_string(const Schedule& schedule);

/// A knob given a value by the user: its JSON field and the value, typed as the field is.
struct KnobSetting {
  std::string knob;
  nlohmann::json value;
};
/// Parses "knob=value" texts such as "persistent=true", "stages=4" or "carried=registers" (a knob as its JSON
/// field; booleans absent from the JSON are false). A malformed text, an unknown knob or a value of the wrong
/// type is a CompileError that begins with `context` and the text, and names the knobs there are.
std::vector<KnobSetting> parse_knob_settings(const std::vector<std::string>& texts,
                                             const std::string& context);
/// `schedule` with `settings` applied (through its JSON: an enumeration's value is checked by the parse, and
/// legality is check_legal's).
Schedule with_knobs(const Schedule& schedule, const std::vector<KnobSetting>& settings,
                    const std::string& context);

std::string_view warp_roles_name(WarpRoles roles);
std::string_view reduction_placement_name(ReductionPlacement placement);
std::string_view value_home_name(ValueHome home);

}  // namespace comfuse::schedule

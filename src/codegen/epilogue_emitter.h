// Emits the Stage-Stream epilogue: each stage's elementwise work on accumulator fragments, its row reductions
// combined in-thread, across the quad of lanes sharing a row, and across the CTAs of a cluster.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "codegen/code_stream.h"
#include "codegen/expr_emitter.h"
#include "codegen/phase_trace.h"
#include "codegen/staged_inputs.h"
#include "schedule/fusion_plan.h"
#include "schedule/schedule.h"

namespace comfuse::codegen {

class EpilogueEmitter {
 public:
  /// How a stage's element loop walks its elements.
  enum class Walk : std::uint8_t {
    kFragment,  // a thread's wgmma accumulator fragment of a 64 x BN tile: rows local_row0 and local_row0 + 8
                // (h = 0, 1) of the tile at (m0, n0); expects lane, local_row0, m0 and n0 in scope
    kRow,  // the finish kernel of a deferred reduction: a warp walks one row, `row`, ROW_ELEMS elements a
           // lane from column n0 on, in column pairs (lane 2l and 2l + 1 of every 64); h is 0
  };

  /// `params` maps each epilogue input and output tensor to its kernel parameter name.
  EpilogueEmitter(const schedule::FusionPlan& plan, const schedule::Schedule& schedule,
                  std::map<const te::TensorNode*, std::string> params, Walk walk = Walk::kFragment);

  /// Per-thread state that lives across tiles and stages: reduction partials, row values, carried tiles.
  void declare_state(CodeStream& out) const;
  /// Start of stage s: resets its reduction partials and evaluates the row values it needs.
  void begin_stage(CodeStream& out, int stage) const;
  /// The per-element work of stage s on one tile; expects m0, n0, lane, local_row0 and acc in scope.
  void element_loop(CodeStream& out, int stage) const;
  /// Marks the phase trace's kExchangeSent before a cluster exchange's wait (`trace` outlives the emitter).
  void set_trace(const PhaseTrace* trace) { trace_ = trace; }
  /// Where the finish kernel's walk takes its row's stash groups (wide) or pairs from: loaded; loaded and
  /// kept in `row_stash<c>[]` (the first walk of a row kept in registers, schedule::finish_row_in_registers);
  /// or taken from there (that row's second walk, which finish_row declares them for).
  enum class RowStash : std::uint8_t { kLoad, kLoadAndKeep, kKept };
  void set_row_stash(RowStash source) { row_stash_ = source; }
  /// End of stage s: combines its reductions over whole rows and writes row-value outputs.
  void end_stage(CodeStream& out, int stage) const;
  /// Floats of row partials ending any one stage (sizes the cluster exchange buffer): one per reduction,
  /// three per centered sum, two per rescaled sum.
  int max_reductions_per_stage() const;
  /// Device helpers only some plans need (the combines of centered and rescaled sums), before the kernel.
  void helpers(CodeStream& out) const;

  /// Deferred reductions (deferred_emitter.cc). At the end of a tile's stage 0 in the main kernel: combines
  /// the tile's row partials over the quad and writes them to the workspace `parts` ([floats][N_TILES][M]).
  void write_tile_partials(CodeStream& out) const;
  /// The finish kernel's body (a kRow emitter; expects lane, row and row_writer in scope, and parts unless
  /// `statistics`): combines the row's partials over its column tiles, or with finish_reductions reduces the
  /// row's stash itself in a first walk (`statistics`: the emitter of that walk, the same plan under the
  /// schedule its loads take), computes the row values, and runs the last stage over the row.
  void finish_row(CodeStream& out, const EpilogueEmitter* statistics) const;
  /// With finish_reductions, in the finish kernel: each lane's partials of the first stage's reductions over
  /// its columns of the row, read from the stash (their state declared and reset before).
  void row_statistics(CodeStream& out) const;
  /// With stash_terms, before write_tile_partials: the rescaled sum's maximum combined over the quad, then
  /// the tile's terms exp(x - that maximum) summed into the sum's partial and stored to the stash in bf16
  /// (stage 0 took only the maximum and left x in the accumulator, where it is not the anchor itself).
  void write_tile_terms(CodeStream& out) const;

 private:
  struct Slot {  // one reduce node of a reduction compute
    const te::ReduceNode* node;
    te::Tensor owner;
    int stage;
    int index;  // within its stage
    int xslot;  // its first float among the stage's row partials exchanged (a centered sum takes three)
    const schedule::CenteredSum* centered;  // the sum of squared deviations it computes in one pass, or null
    const schedule::RescaledSum* rescaled;  // the sum of exponentials it keeps online, or null
  };

  struct Store {        // one element-wise store of a stage: to an output or to the stash
    std::string array;  // C expression of the row-major [M, N] array
    te::DType dtype;
    std::string value;    // the f32 (or int) value of element i
    std::string pending;  // the register holding the pair's even element
    bool to_stash;        // stores to the stash follow the stage's row partials, outputs precede them
    bool staged;          // into the TMA-store epilogue's shared-memory tile (schedule.tma_store)
  };

  /// An input's element at (grow, gcol), 0 out of bounds; `interior`: the tile lies inside the matrix, no
  /// test.
  std::string load(const te::Tensor& input, schedule::Broadcast broadcast, bool interior) const;
  /// With schedule.vector_loads: the inputs read per element or per column and the carried tiles a stage
  /// re-reads from the stash are loaded two columns at a time at the even element into `lp_*` registers
  /// (pair_loads.cc).
  bool loads_in_pairs() const;
  bool pair_loadable(const te::Tensor& input, schedule::Broadcast broadcast) const;
  void declare_pair_loads(CodeStream& out, int stage) const;
  void emit_pair_loads(CodeStream& out, int stage, bool interior) const;
  /// Whether `input` is read a box at a time (box_reads: a staged input loaded in pairs, in the fragment
  /// walk); those inputs, and their loads at a box's first element.
  bool read_by_box(const schedule::EpilogueInput& input) const;
  std::vector<schedule::EpilogueInput> boxed_inputs() const;
  void emit_box_loads(CodeStream& out, bool interior) const;
  ExprBindings element_bindings() const;  // the schedule's math knobs, for an element's expressions
  std::vector<std::size_t> rereads(int stage) const;  // carried tiles (indices) `stage` reads from a stash
  std::vector<std::size_t> stash_reads(int stage) const;  // of those, the ones loaded in pairs
  /// With schedule.batched_reads: the carried tiles (indices) `stage` re-reads from the stash, loaded a chunk
  /// of elements ahead into `pre<c>[j]` (empty without the knob or in stage 0).
  std::vector<std::size_t> batched_reads(int stage) const;
  bool stores_in_pairs() const;
  std::vector<Store> stores_of_stage(int stage) const;
  /// The element loop of `stage` over one tile; `interior` (schedule.interior_tiles, inside a test that the
  /// tile lies within the matrix): no bounds tests, and a centered sum's shift taken at the first element.
  void element_body(CodeStream& out, int stage, const std::vector<Store>& stores, bool interior) const;
  /// Element i's update of each of `slots`' partials, its tensors read as `base` binds them.
  void update_partials(CodeStream& out, const std::vector<Slot>& slots, const ExprBindings& base,
                       bool interior) const;
  void store(CodeStream& out, const Store& st) const;
  /// store_chunks, in a fragment walk over element i: before box i / 32's first element, the wait until the
  /// store of the box two before has read the buffer; after its last element, the box's TMA store by one
  /// thread.
  void chunk_wait(CodeStream& out) const;
  void chunk_store(CodeStream& out) const;
  /// h, grow, gcol and inb of element i (`interior`: inb a constant true).
  void declare_coordinates(CodeStream& out, bool interior) const;
  /// With stash_terms, in the finish kernel: the stashed term of element i times its column tile's factor.
  std::string stashed_term(bool batched) const;
  const Slot& terms_slot() const;  // with stash_terms: the slot of the rescaled sum whose terms are stashed
  /// The finish kernel's wide walk (schedule.wide_finish, wide_row_walk.cc): a lane takes eight consecutive
  /// columns at a time; at the first of them each input read by column and each carried tile re-read from the
  /// stash is loaded whole into `wide_<name>[8]`, and each output is stored whole at the last.
  bool wide_rows() const;
  bool wide_loadable(schedule::Broadcast broadcast) const;  // an input read this way loads eight at once
  static std::string wide_read(const std::string& name);    // element i of the group loaded for `name`
  void declare_wide(CodeStream& out, int stage, const std::vector<Store>& stores) const;
  void emit_wide_loads(CodeStream& out, int stage, bool interior) const;
  /// A row kept in registers (deferred_emitter.cc): its declaration, a lane's words of every step (16-byte
  /// groups in the wide walk, column pairs in the pairs walk); carried tile c's word of element i; and the
  /// loop over a row's steps, unrolled so that every word's index is a constant (the array then stays in
  /// registers).
  void declare_kept_row(CodeStream& out) const;
  std::string kept_word(std::size_t c) const;
  void open_row_steps(CodeStream& out, const std::string& loop) const;
  void wide_store(CodeStream& out, const Store& st) const;
  /// The expression of `tile`'s element i where a later stage reads it; `batched`: from the chunk's
  /// registers.
  std::string carried_read(const te::Tensor& tile, bool batched) const;
  std::string stash_load(std::size_t c) const;  // carried tile c's element i from the stash, 0 out of bounds
  std::vector<Slot> slots_of_stage(int stage) const;
  /// Centered sums: the per-element update, the thread's own (count, mean, M2), and the quad's combine.
  void centered_update(CodeStream& out, const Slot& slot, const std::string& value, bool interior) const;
  void centered_finish_thread(CodeStream& out, const Slot& slot) const;
  void centered_quad_combine(CodeStream& out, const Slot& slot) const;
  /// How a merged sum's partial travels and combines: the device function merging a second partial into a
  /// first, and its arguments in order (a local name, the float's offset from the slot's xslot in an
  /// exchange, the suffix of the slot's state, the identity).
  struct PartialForm {
    struct Part {
      std::string local;
      int offset;
      std::string suffix;
      std::string identity;
    };
    std::string combine_fn;
    std::vector<Part> parts;
  };
  static const PartialForm* partial_form(const Slot& slot);  // null for a plain reduction
  /// The floats a slot exchanges (offset from its xslot, suffix of its state), by offset.
  static std::vector<std::pair<int, std::string>> exchanged(const Slot& slot);
  /// A merged sum's combine through locals: declares them from `first` (of each part), merges `other` (the
  /// expression of each part's float of the other partial) with the combine function, stores them back.
  void merged_start(CodeStream& out, const Slot& slot,
                    const std::function<std::string(const PartialForm::Part&)>& first) const;
  std::string merged_combine(const Slot& slot, const std::function<std::string(int offset)>& other) const;
  void merged_store(CodeStream& out, const Slot& slot) const;
  /// Rescaled sums: the per-element update and the quad's combine.
  void rescaled_update(CodeStream& out, const Slot& slot, const std::string& value) const;
  void rescaled_quad_combine(CodeStream& out, const Slot& slot) const;
  void emit_row_values(CodeStream& out, const std::vector<te::Tensor>& tensors) const;
  bool is_output(const te::Tensor& t) const;
  /// The quad's combine of `slots`' partials (the lanes sharing a row hold the same values after it).
  void quad_combine(CodeStream& out, const std::vector<Slot>& slots) const;
  // The cluster's or group's partials of each slot combined in rank order (`xch`: the exchange buffer in
  // scope; `from_l2`: global_exchange's buffer in the workspace, loaded past L1).
  void combine_peers(CodeStream& out, const std::vector<Slot>& slots, const std::string& xch,
                     bool from_l2) const;
  // The row partials across the cluster's CTAs through distributed shared memory.
  void dsmem_exchange(CodeStream& out, int stage, const std::vector<Slot>& slots, bool own_rows,
                      bool ping_pong) const;
  // global_exchange: the row partials across the group's CTAs through global memory.
  void global_exchange(CodeStream& out, int stage, const std::vector<Slot>& slots, bool own_rows,
                       bool ping_pong) const;
  /// What the element loop, the row loop and the interior test read in the emitter's walk.
  std::string elements() const;       // a thread's elements of a tile (kFragment) or of a row step (kRow)
  std::string rows_loop() const;      // the loop over a thread's rows, h
  std::string row_of_h() const;       // the global row of h
  std::string column_of_i() const;    // the global column of element i
  std::string interior_test() const;  // the elements walked lie inside the matrix
  // Schedule::stores_in_place: the staged input gone over, its offset in its slot, and the shared address of
  // the pair of fragment element i (odd) over it.
  const schedule::EpilogueInput& in_place_input() const;
  std::int64_t in_place_offset() const;
  std::string in_place_address() const;
  /// The TMA map the staged stores go out by: the stash's with a deferred reduction, the output's otherwise.
  std::string stored_map() const;

  const schedule::FusionPlan& plan_;
  const schedule::Schedule& schedule_;
  std::map<const te::TensorNode*, std::string> params_;
  std::vector<Slot> slots_;
  StagedInputs staged_;  // inputs the epilogue reads from shared memory (tma_inputs)
  Walk walk_;
  const PhaseTrace* trace_ = nullptr;  // the phase trace's kExchangeSent marks, or none
  RowStash row_stash_ = RowStash::kLoad;
};

}  // namespace comfuse::codegen

// The epilogue's loads in column pairs (schedule knob vector_loads): at the even element, each input read by
// element or by column and each carried tile re-read from the stash is loaded as one word of the thread's two
// neighbouring columns; with box_reads, a staged input's pairs of a 32-element box are read together first;
// and with a finish kernel's row kept in registers (schedule::finish_row_in_registers), the stash's pairs
// are kept by the first walk and taken from there by the second.
#include <algorithm>
#include <iterator>
#include <string>
#include <vector>

#include "codegen/epilogue_emitter.h"
#include "codegen/epilogue_names.h"

namespace comfuse::codegen {

using schedule::Broadcast;

bool EpilogueEmitter::loads_in_pairs() const {
  return schedule_.vector_loads && stores_in_pairs();  // both need N even
}

bool EpilogueEmitter::pair_loadable(const te::Tensor& input, Broadcast broadcast) const {
  return loads_in_pairs() && schedule::pair_loadable({input, broadcast}) &&
         (!staged_.staged(input) || schedule_.staged_pairs);
}

void EpilogueEmitter::declare_pair_loads(CodeStream& out, int stage) const {
  if (!loads_in_pairs()) return;
  for (const schedule::EpilogueInput& input : plan_.epilogue_inputs) {
    if (!pair_loadable(input.tensor, input.broadcast)) continue;
    out.line(pair_type(input.tensor.dtype()) + " lp_" + input.tensor.name() +
             ";  // this thread's two columns of '" + input.tensor.name() + "'");
  }
  for (std::size_t c : stash_reads(stage))
    out.line(pair_type(schedule::stash_dtype(schedule_)) + " lp_stash" + std::to_string(c) + ";");
  for (const schedule::EpilogueInput& input : boxed_inputs()) {
    out.line("u32 bp_" + input.tensor.name() + "[16];  // the box's pairs of '" + input.tensor.name() +
             "' (box_reads)");
  }
}

bool EpilogueEmitter::read_by_box(const schedule::EpilogueInput& input) const {
  return schedule_.box_reads && walk_ == Walk::kFragment && staged_.staged(input.tensor) &&
         pair_loadable(input.tensor, input.broadcast);
}

std::vector<schedule::EpilogueInput> EpilogueEmitter::boxed_inputs() const {
  std::vector<schedule::EpilogueInput> inputs;
  std::copy_if(plan_.epilogue_inputs.begin(), plan_.epilogue_inputs.end(), std::back_inserter(inputs),
               [this](const schedule::EpilogueInput& input) { return read_by_box(input); });
  return inputs;
}

// box_reads: at a box's first element, the staged pairs of its 32 elements (16 pairs, their rows h = 0 and
// 1), each read at its own element's coordinates; all are issued before the box's first store over the slot.
void EpilogueEmitter::emit_box_loads(CodeStream& out, bool interior) const {
  const std::vector<schedule::EpilogueInput> inputs = boxed_inputs();
  if (inputs.empty()) return;
  out.open("if ((i & 31) == 0)");
  out.line("const int box_i = i;");
  out.line("#pragma unroll");
  out.open("for (int j = 0; j < 16 && box_i + 2 * j < " + elements() + "; ++j)");
  out.line("const int i = box_i + 2 * j;  // the pair's first element, as emit_pair_loads reads it");
  declare_coordinates(out, interior);
  for (const schedule::EpilogueInput& input : inputs) {
    const std::string read = staged_.read_pair(input.tensor, input.broadcast, interior);
    const std::string box = "bp_" + input.tensor.name();
    // A vector's pair is the same in both rows (odd j: row h = 1 of the columns of j - 1).
    out.line(box + "[j] = " + (input.broadcast == Broadcast::kRow ? "(j & 1) ? " + box + "[j - 1] : " : "") +
             read + ";");
  }
  out.close();
  out.close();
}

// At the even element (the pair's first column): one load per input and per carried tile re-read. Loads whose
// value the stage does not use are left to the compiler to drop.
void EpilogueEmitter::emit_pair_loads(CodeStream& out, int stage, bool interior) const {
  if (!loads_in_pairs()) return;
  emit_box_loads(out, interior);
  out.open("if ((i & 1) == 0)");
  for (const schedule::EpilogueInput& input : plan_.epilogue_inputs) {
    if (!pair_loadable(input.tensor, input.broadcast)) continue;
    if (read_by_box(input)) {
      out.line("lp_" + input.tensor.name() + " = bp_" + input.tensor.name() + "[(i & 31) >> 1];");
      continue;
    }
    if (staged_.staged(input.tensor)) {
      out.line("lp_" + input.tensor.name() + " = " +
               staged_.read_pair(input.tensor, input.broadcast, interior) + ";");
      continue;
    }
    const std::string& param = params_.at(input.tensor.get());
    const bool full = input.broadcast == Broadcast::kFull;
    const std::string index = full ? "(size_t)grow * N + gcol" : "gcol";
    const std::string guard = full || interior ? "inb" : "gcol < N";
    const te::DType dtype = input.tensor.dtype();
    out.line("lp_" + input.tensor.name() + " = " + guard + " ? *(const " + pair_type(dtype) + "*)&" + param +
             "[" + index + "] : " + pair_zero(dtype) + ";");
  }
  for (std::size_t c : stash_reads(stage)) {
    const std::string pair = "lp_stash" + std::to_string(c);
    if (row_stash_ == RowStash::kKept) {
      out.line(pair + " = " + kept_word(c) + ";");
      continue;
    }
    out.line(pair + " = " + stash_pair_load(schedule::stash_dtype(schedule_), std::to_string(c)) + ";");
    if (row_stash_ == RowStash::kLoadAndKeep) out.line(kept_word(c) + " = " + pair + ";");
  }
  out.close();
}

}  // namespace comfuse::codegen

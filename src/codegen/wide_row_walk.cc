// The finish kernel's wide walk (schedule knob wide_finish): a lane takes eight consecutive columns of its
// row at a time, and every input read by column, every carried tile re-read from the stash and every output
// moves as one 16-byte word of 16-bit values (two of f32) instead of a word of two columns. N is a multiple
// of 8, so a group of eight lies wholly inside the row or wholly past its end, and its first column is
// 16-byte aligned. (The same knob lays out the row partials side by side: part_at in deferred_emitter.cc.)
#include <string>
#include <vector>

#include "codegen/epilogue_emitter.h"
#include "codegen/epilogue_names.h"
#include "codegen/expr_emitter.h"
#include "support/error.h"

namespace comfuse::codegen {
namespace {

// A 16-byte load of `type` at `address`: plain, or a streaming one (ld.global.cs, evict-first in L2) for
// lines read for the last time (streaming_hints).
std::string load16(const std::string& type, const std::string& address, bool streaming) {
  const std::string pointer = "(const " + type + "*)(" + address + ")";
  return streaming ? "__ldcs(" + pointer + ")" : "*" + pointer;
}

// Unpacks a 16-byte group of eight 16-bit elements of `dtype` (`raw`, a uint4 expression) into float
// `array`[8]; `keep`, where not empty, is an lvalue the raw group is also kept in.
void unpack_group(CodeStream& out, const std::string& array, te::DType dtype, const std::string& raw,
                  const std::string& keep) {
  COMFUSE_CHECK(te::dtype_bytes(dtype) == 2, "a group unpacked from one uint4 holds 16-bit elements");
  out.line("const uint4 raw = " + raw + ";");
  if (!keep.empty()) out.line(keep + " = raw;");
  out.line("const u32 words[4] = {raw.x, raw.y, raw.z, raw.w};");
  out.line("#pragma unroll");
  out.open("for (int w = 0; w < 4; ++w)");
  out.line(array + "[2 * w] = " + widen(dtype, "(u16)(words[w] & 0xffffu)") + ";");
  out.line(array + "[2 * w + 1] = " + widen(dtype, "(u16)(words[w] >> 16)") + ";");
  out.close();
}

// Loads the eight elements of `dtype` at `address` (a pointer expression to the group's first) into float
// `array`[8], zeros where `guard` fails (no test when it is empty); `streaming`: with load16's hint; `keep`:
// as unpack_group's (16-bit only).
void load_group(CodeStream& out, const std::string& array, te::DType dtype, const std::string& address,
                const std::string& guard, bool streaming = false, const std::string& keep = "") {
  out.open("");
  auto guarded = [&](const std::string& load, const std::string& zero) {
    return guard.empty() ? load : guard + " ? " + load + " : " + zero;
  };
  if (dtype == te::DType::f32) {
    out.line("const float4 lo = " +
             guarded(load16("float4", address, streaming), "make_float4(0.0f, 0.0f, 0.0f, 0.0f)") + ";");
    out.line("const float4 hi = " +
             guarded(load16("float4", address + " + 4", streaming), "make_float4(0.0f, 0.0f, 0.0f, 0.0f)") +
             ";");
    out.line(array + "[0] = lo.x, " + array + "[1] = lo.y, " + array + "[2] = lo.z, " + array +
             "[3] = lo.w;");
    out.line(array + "[4] = hi.x, " + array + "[5] = hi.y, " + array + "[6] = hi.z, " + array +
             "[7] = hi.w;");
    COMFUSE_CHECK(keep.empty(), "only 16-bit groups are kept");
  } else {
    unpack_group(out, array, dtype,
                 guarded(load16("uint4", address, streaming), "make_uint4(0u, 0u, 0u, 0u)"), keep);
  }
  out.close();
}

// The registers holding a group of eight columns of `name` (an input, a stash or a pending store).
std::string wide_array(const std::string& name) {
  return "wide_" + name;
}

}  // namespace

bool EpilogueEmitter::wide_rows() const {
  return walk_ == Walk::kRow && schedule_.wide_finish;
}

bool EpilogueEmitter::wide_loadable(schedule::Broadcast broadcast) const {
  return wide_rows() && broadcast != schedule::Broadcast::kColumn;
}

std::string EpilogueEmitter::wide_read(const std::string& name) {
  return wide_array(name) + "[i & 7]";
}

void EpilogueEmitter::declare_wide(CodeStream& out, int stage, const std::vector<Store>& stores) const {
  for (const schedule::EpilogueInput& input : plan_.epilogue_inputs) {
    if (wide_loadable(input.broadcast))
      out.line("float " + wide_array(input.tensor.name()) + "[8];  // eight columns of '" +
               input.tensor.name() + "'");
  }
  for (std::size_t c : rereads(stage)) out.line("float " + wide_array("stash" + std::to_string(c)) + "[8];");
  for (const Store& st : stores) out.line("float " + wide_array(st.pending) + "[8];");
}

// At the group's first column: each input and each re-read carried tile, eight columns at once. Loads whose
// value the stage does not use are left to the compiler to drop.
void EpilogueEmitter::emit_wide_loads(CodeStream& out, int stage, bool interior) const {
  out.open("if ((i & 7) == 0)");
  const std::string guard = interior ? "" : "inb";  // the row is below M: inb is gcol < N, for all eight
  for (const schedule::EpilogueInput& input : plan_.epilogue_inputs) {
    if (!wide_loadable(input.broadcast)) continue;
    const bool full = input.broadcast == schedule::Broadcast::kFull;
    const std::string index = full ? "(size_t)grow * N + gcol" : "gcol";
    load_group(out, wide_array(input.tensor.name()), input.tensor.dtype(),
               "&" + params_.at(input.tensor.get()) + "[" + index + "]", guard);
  }
  for (std::size_t c : rereads(stage)) {
    const std::string name = std::to_string(c);
    const std::string array = wide_array("stash" + name);
    const te::DType dtype = schedule::stash_dtype(schedule_);
    if (row_stash_ == RowStash::kKept) {
      out.open("");
      unpack_group(out, array, dtype, kept_word(c), "");
      out.close();
      continue;
    }
    load_group(out, array, dtype, "&stash[" + stash_index(name) + "]", guard, schedule_.streaming_hints,
               row_stash_ == RowStash::kLoadAndKeep ? kept_word(c) : "");
  }
  out.close();
}

// Each element into the group's buffer; at the last, the eight leave as one word (two of f32): plain
// stores, or streaming ones (st.global.cs, evict-first in L2) with streaming_hints, so that the outputs do
// not push out the stash lines the kernel has yet to read.
void EpilogueEmitter::wide_store(CodeStream& out, const Store& st) const {
  const std::string buffer = wide_array(st.pending);
  out.line(buffer + "[i & 7] = " + st.value + ";");
  out.open("if ((i & 7) == 7 && inb)");
  const std::string first = "&" + st.array + "[(size_t)grow * N + gcol - 7]";
  auto store16 = [&](const std::string& type, const std::string& address, const std::string& value) {
    const std::string pointer = "(" + type + "*)(" + address + ")";
    out.line(schedule_.streaming_hints ? "__stcs(" + pointer + ", " + value + ");"
                                       : "*" + pointer + " = " + value + ";");
  };
  if (st.dtype == te::DType::f32) {
    store16("float4", first,
            "make_float4(" + buffer + "[0], " + buffer + "[1], " + buffer + "[2], " + buffer + "[3])");
    store16("float4", first + " + 4",
            "make_float4(" + buffer + "[4], " + buffer + "[5], " + buffer + "[6], " + buffer + "[7])");
  } else {
    COMFUSE_CHECK(te::dtype_bytes(st.dtype) == 2, "a wide group is 16-bit or f32");
    auto pair = [&](int first_column) {
      return "(u32)" + store_value(st.dtype, buffer + "[" + std::to_string(first_column) + "]") +
             " | ((u32)" + store_value(st.dtype, buffer + "[" + std::to_string(first_column + 1) + "]") +
             " << 16)";
    };
    store16("uint4", first, "make_uint4(" + pair(0) + ", " + pair(2) + ", " + pair(4) + ", " + pair(6) + ")");
  }
  out.close();
}

}  // namespace comfuse::codegen

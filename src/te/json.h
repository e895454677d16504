// Canonical JSON of tensor-expression programs, its validating parser, and the workload key derived from it.
//
// The format (keys of every object are sorted, so the compact dump is canonical):
//
//   {"inputs":["X","W"],"outputs":["Y"],"tensors":[...every tensor of Program::tensors(), in that order...]}
//   placeholder: {"dtype":"bf16","kind":"placeholder","name":"X","shape":[4,8]}
//   compute:     {"axes":["i0","i1"],"body":EXPR,"dtype":"f32","kind":"compute","name":"Y","shape":[4,3]}
//   EXPR:
//     {"op":"int","dtype":"i32","value":3}
//     {"op":"float","dtype":"f32","value":0.5}          non-finite values as "inf", "-inf", "nan"
//     {"op":"axis","index":0}                            the compute's d-th axis
//     {"op":"raxis","index":0}                           the n-th reduce axis bound so far in this compute's
//                                                        body, counted in pre-order over reduce nodes and
//                                                        their axes lists
//     {"op":"add"|"sub"|"mul"|"div"|"min"|"max","a":EXPR,"b":EXPR}
//     {"op":"lt"|"le"|"gt"|"ge"|"eq"|"ne","a":EXPR,"b":EXPR}
//     {"op":"select","cond":EXPR,"if_true":EXPR,"if_false":EXPR}
//     {"op":"cast","dtype":"f32","value":EXPR}
//     {"op":"neg"|"abs"|"exp"|"log"|"tanh"|"erf"|"sqrt"|"rsqrt"|"sigmoid","value":EXPR}
//     {"op":"pow","base":EXPR,"exponent":2}
//     {"op":"read","tensor":"X","indices":[EXPR,...]}    the tensor must appear earlier in "tensors"
//     {"op":"reduce","reduce":"sum"|"max"|"min","axes":[{"extent":8,"name":"k"}],"body":EXPR}
//
// The tuning log embeds this object as workload.program, and the workload key is the SHA-256 of its text.
#pragma once

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <string_view>

#include "te/program.h"

namespace comfuse::te {

/// Deepest expression nesting the parser accepts; deeper input is a CompileError, never a stack overflow.
inline constexpr int kMaxJsonExprDepth = 512;
/// Most tensors the parser accepts in one program.
inline constexpr std::size_t kMaxJsonTensors = 4096;

/// Parses JSON text strictly: a syntax error, invalid UTF-8 or a key repeated within one object (which the
/// parser would otherwise keep silently, last one winning) is a CompileError "not valid JSON: <reason>".
/// Shared by every reader of comfuse's JSON files (programs, tuning logs).
nlohmann::json parse_json_text(std::string_view text);

/// The program as a JSON object in the format above. Throws CompileError when a reduce axis name is not
/// valid UTF-8 (JSON cannot hold it).
nlohmann::json program_to_json(const Program& program);

/// The canonical text: the compact dump of program_to_json (no whitespace, keys sorted, integers as
/// integers, floats as the shortest text that reads back as the same double). Structurally equal programs
/// give the same text, whatever the order in which they were built.
std::string serialize(const Program& program);

/// Builds the program that `json` describes, through the same validating builders as the C++ DSL, so a
/// parsed program is checked exactly like a built one. Every failure is a CompileError whose message starts
/// with the JSON path where it occurred, rooted at `path`:
/// `program.tensors[2].body: dtype mismatch in add: f32 vs bf16 (insert a cast)`.
/// Rejects unknown and missing fields, wrong JSON types, non-integers and out-of-range integers where
/// integers are meant, tensors read before their definition, duplicate names, out-of-range axis indices,
/// placeholders missing from "inputs", computes no output uses, expressions nested deeper than
/// kMaxJsonExprDepth and more than kMaxJsonTensors tensors. Accepts any topological order of "tensors" and
/// float constants not yet rounded to their dtype (they are rounded), so only canonical text round-trips
/// byte for byte.
Program program_from_json(const nlohmann::json& json, const std::string& path = "program");

/// Parses JSON text, then program_from_json. Text that is not JSON (syntax, invalid UTF-8) or that repeats
/// a key within one object throws CompileError `program: not valid JSON: ...`.
/// For canonical text s, serialize(parse_program(s)) == s.
Program parse_program(std::string_view text);

/// "sha256:" followed by the SHA-256 of serialize(program) in lowercase hex: the identity of a workload in
/// tuning logs, the same in every process and for every construction order.
std::string workload_key(const Program& program);

}  // namespace comfuse::te

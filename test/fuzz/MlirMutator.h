//===- MlirMutator.h - Structure-aware changes to fusec text ----*- C++ -*-===//
//
// fuzz_mlir's custom mutator. libFuzzer's byte mutations turn most of a
// graph's text into parse errors; these change it the way a new graph would
// differ, keeping it consistent so it still parses and verifies, and so
// the passes and the code generator see it:
//  - a dimension size, in every tensor type that has it (odd, size-1,
//    power-of-two neighbours, large);
//  - an element type, in every tensor type that has it;
//  - a shape's rank, a leading 1 added to every tensor type of that shape;
//  - an elementwise op's name, for another of its arity;
//  - a splat constant's value (zeros, signs, extremes, denormals, f16's
//    overflow);
//  - the graph's structure: an elementwise op inserted after a value (its
//    later uses read the new one), or a unary op removed (its uses read its
//    operand), or a reduction, transpose, reshape or softmax of a value
//    returned as a new result (a second reader of the value);
//  - a new result that reads one or two values (arguments or op results,
//    of any op): a binary op or a compare and select of two values of one
//    type, a matmul (of a value by itself, transposed, or by a constant),
//    a concat of two values that differ in one dim, a slice, a gather at
//    constant or integer indices, a broadcast to a new or a size-1 dim, a
//    convolution (plain, grouped, depthwise or transposed, by a splat
//    filter) or a max or mean pool of a value as [N, C, spatial...], and
//    attention of a value (reshaped to rank 4) by itself.
// Each returns false where the text has nothing it applies to.
//
//===----------------------------------------------------------------------===//

#ifndef FUSEC_TEST_FUZZ_MLIRMUTATOR_H
#define FUSEC_TEST_FUZZ_MLIRMUTATOR_H

#include <algorithm>
#include <cctype>
#include <cstdint>
#include <random>
#include <string>
#include <vector>

namespace fusec::fuzz {

/// A `tensor<...>` type in the text: where its body starts and ends (the
/// characters between `tensor<` and the matching `>`).
struct TensorType {
  size_t begin, end;
};

inline std::vector<TensorType> tensorTypes(const std::string &text) {
  std::vector<TensorType> out;
  const std::string open = "tensor<";
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1)) {
    size_t begin = at + open.size(), depth = 1, i = begin;
    for (; i < text.size() && depth > 0; ++i) {
      if (text[i] == '<')
        ++depth;
      else if (text[i] == '>')
        --depth;
      else if (text[i] == '\n')
        break;
    }
    if (depth == 0)
      out.push_back({begin, i - 1});
  }
  return out;
}

/// A tensor type's body split into its dims and its element type
/// ("8x?x128xf32" -> {"8", "?", "128"}, "f32"). False where it is not of
/// that form.
inline bool splitType(const std::string &body, std::vector<std::string> &dims,
                      std::string &element) {
  dims.clear();
  size_t start = 0;
  for (;;) {
    size_t x = body.find('x', start);
    std::string part = body.substr(start, x == std::string::npos ? std::string::npos : x - start);
    bool isDim = !part.empty() && (part == "?" || part.find_first_not_of("0123456789") ==
                                                      std::string::npos);
    if (!isDim || x == std::string::npos) {
      element = body.substr(start);
      return !element.empty();
    }
    dims.push_back(part);
    start = x + 1;
  }
}

/// Rewrites every tensor type's body by `f` (which returns false to leave
/// one as it is); whether any changed.
template <typename F> bool rewriteTypes(std::string &text, F f) {
  std::vector<TensorType> types = tensorTypes(text);
  bool changed = false;
  for (auto it = types.rbegin(); it != types.rend(); ++it) {
    std::vector<std::string> dims;
    std::string element;
    std::string body = text.substr(it->begin, it->end - it->begin);
    if (!splitType(body, dims, element) || !f(dims, element))
      continue;
    std::string fresh;
    for (const std::string &d : dims)
      fresh += d + "x";
    fresh += element;
    if (fresh != body) {
      text.replace(it->begin, it->end - it->begin, fresh);
      changed = true;
    }
  }
  return changed;
}

template <typename T> const T &pick(const std::vector<T> &v, std::mt19937_64 &rng) {
  return v[rng() % v.size()];
}

inline bool mutateDimension(std::string &text, std::mt19937_64 &rng) {
  std::vector<std::string> seen;
  rewriteTypes(text, [&](std::vector<std::string> &dims, std::string &) {
    for (const std::string &d : dims)
      if (d != "?")
        seen.push_back(d);
    return false;
  });
  if (seen.empty())
    return false;
  const std::string from = pick(seen, rng);
  long long v = std::stoll(from.size() > 12 ? std::string("1") : from);
  std::vector<long long> to = {0,   1,   2,   3,    5,    7,    8,     9,      15,  16, 17,
                               31,  32,  33,  63,   64,   65,   127,   128,    129, 255,
                               256, 257, 1023, 1024, 4096, 8192, 65535, 65536, v + 1,
                               v > 0 ? v - 1 : 2, 2 * v + 1, v / 2};
  const std::string with = std::to_string(pick(to, rng));
  if (with == from)
    return false;
  return rewriteTypes(text, [&](std::vector<std::string> &dims, std::string &) {
    bool any = false;
    for (std::string &d : dims)
      if (d == from) {
        d = with;
        any = true;
      }
    return any;
  });
}

inline bool mutateElementType(std::string &text, std::mt19937_64 &rng) {
  std::vector<std::string> seen;
  rewriteTypes(text, [&](std::vector<std::string> &, std::string &e) {
    seen.push_back(e);
    return false;
  });
  if (seen.empty())
    return false;
  const std::string from = pick(seen, rng);
  static const std::vector<std::string> types = {"f32", "f16",      "bf16",   "f64", "i1",
                                                 "i8",  "i32",      "i64",    "f8E4M3FN",
                                                 "f8E5M2"};
  const std::string with = pick(types, rng);
  if (with == from)
    return false;
  return rewriteTypes(text, [&](std::vector<std::string> &, std::string &e) {
    if (e != from)
      return false;
    e = with;
    return true;
  });
}

inline bool mutateRank(std::string &text, std::mt19937_64 &rng) {
  std::vector<std::vector<std::string>> shapes;
  rewriteTypes(text, [&](std::vector<std::string> &dims, std::string &) {
    shapes.push_back(dims);
    return false;
  });
  if (shapes.empty())
    return false;
  const std::vector<std::string> shape = pick(shapes, rng);
  return rewriteTypes(text, [&](std::vector<std::string> &dims, std::string &) {
    if (dims != shape)
      return false;
    dims.insert(dims.begin(), "1");
    return true;
  });
}

inline bool mutateOpName(std::string &text, std::mt19937_64 &rng) {
  static const std::vector<std::vector<std::string>> families = {
      {"exp", "exp2", "log", "tanh", "sin", "cos", "erf", "sigmoid", "rsqrt", "sqrt", "neg",
       "abs", "floor", "ceil", "round", "sign", "gelu", "silu"},
      {"add", "sub", "mul", "div", "max", "min", "pow"}};
  struct Site {
    size_t at, length;
    const std::vector<std::string> *family;
  };
  std::vector<Site> sites;
  for (const auto &family : families)
    for (const std::string &name : family) {
      const std::string token = "fusec." + name + " ";
      for (size_t at = text.find(token); at != std::string::npos; at = text.find(token, at + 1))
        sites.push_back({at + 6, name.size(), &family});
    }
  if (sites.empty())
    return false;
  const Site &s = pick(sites, rng);
  const std::string with = pick(*s.family, rng);
  if (text.compare(s.at, s.length, with) == 0)
    return false;
  text.replace(s.at, s.length, with);
  return true;
}

inline bool mutateSplat(std::string &text, std::mt19937_64 &rng) {
  std::vector<size_t> sites;
  const std::string open = "dense<";
  for (size_t at = text.find(open); at != std::string::npos; at = text.find(open, at + 1))
    if (at + open.size() < text.size() && text[at + open.size()] != '[' &&
        text[at + open.size()] != '"')
      sites.push_back(at + open.size());
  if (sites.empty())
    return false;
  size_t at = pick(sites, rng);
  size_t end = text.find('>', at);
  if (end == std::string::npos)
    return false;
  static const std::vector<std::string> values = {
      "0.0",     "-0.0",    "1.0",      "-1.0",    "0.5",    "3.0e+38", "-3.0e+38",
      "1.0e-40", "65504.0", "65520.0",  "1.0e-07", "2.0",    "-2.5",    "1.0e+10",
      "0",       "1",       "-1",       "true",    "false"};
  text.replace(at, end - at, pick(values, rng));
  return true;
}

/// A definition `%name = ... : <type>` on one line of a function body:
/// where the line is, the value's name and its type (the text after the
/// last " : ", when that is one tensor type).
struct Definition {
  size_t lineBegin, lineEnd;
  std::string name, type;
};

inline std::vector<Definition> definitions(const std::string &text) {
  std::vector<Definition> out;
  size_t begin = 0;
  while (begin < text.size()) {
    size_t end = text.find('\n', begin);
    if (end == std::string::npos)
      end = text.size();
    std::string line = text.substr(begin, end - begin);
    size_t first = line.find_first_not_of(' ');
    size_t eq = line.find(" = ");
    size_t colon = line.rfind(" : ");
    if (first != std::string::npos && line[first] == '%' && eq != std::string::npos &&
        colon != std::string::npos && colon > eq) {
      std::string name = line.substr(first, eq - first);
      std::string type = line.substr(colon + 3);
      while (!type.empty() && (type.back() == ' ' || type.back() == '\r'))
        type.pop_back();
      // An op written with its operands' types: the result's ("(A, B) -> R",
      // "A -> R", "A to R").
      bool shortForm = true;
      for (const char *sep : {" -> ", " to "})
        if (size_t at = type.rfind(sep); at != std::string::npos) {
          type = type.substr(at + std::string(sep).size());
          shortForm = false;
        }
      // A comparison's short form writes its operands' type; its result is i1.
      if (shortForm && line.find("= fusec.compare ") != std::string::npos) {
        size_t x = type.rfind('x');
        size_t lt = type.find('<');
        type = (x != std::string::npos ? type.substr(0, x + 1) : type.substr(0, lt + 1)) + "i1>";
      }
      // One result (no ":2") and one tensor type (not a function type).
      if (name.find(':') == std::string::npos && name.find(',') == std::string::npos &&
          type.rfind("tensor<", 0) == 0 && type.find("->") == std::string::npos &&
          type.find(" to ") == std::string::npos &&
          type.find(", ") == std::string::npos)
        out.push_back({begin, end, name, type});
    }
    begin = end + 1;
  }
  return out;
}

/// Replaces the uses of `from` with `to` in text[at, end of its function):
/// whole names only (%1 is not %10).
inline void replaceUses(std::string &text, size_t at, const std::string &from,
                        const std::string &to) {
  size_t stop = text.find("\n}", at);
  if (stop == std::string::npos)
    stop = text.size();
  for (size_t p = text.find(from, at); p != std::string::npos && p < stop;
       p = text.find(from, p)) {
    size_t after = p + from.size();
    bool whole = after >= text.size() ||
                 !(std::isalnum(static_cast<unsigned char>(text[after])) || text[after] == '_');
    if (!whole) {
      p = after;
      continue;
    }
    text.replace(p, from.size(), to);
    stop = stop + to.size() - from.size();
    p += to.size();
  }
}

inline bool insertElementwise(std::string &text, std::mt19937_64 &rng) {
  std::vector<Definition> defs = definitions(text);
  if (defs.empty())
    return false;
  const Definition &d = pick(defs, rng);
  static const std::vector<std::string> unary = {"exp", "tanh", "neg", "abs", "sigmoid",
                                                 "sqrt", "log", "erf", "floor"};
  static const std::vector<std::string> binary = {"add", "mul", "max", "sub", "div"};
  // A name of its own (a value id that starts with a letter may go on with
  // digits; one that starts with a digit may not).
  const std::string fresh = "%mut" + std::to_string(rng() % 1000000);
  if (text.find(fresh + " ") != std::string::npos)
    return false;
  std::string op;
  if (rng() % 2)
    op = "fusec." + pick(unary, rng) + " " + d.name;
  else
    op = "fusec." + pick(binary, rng) + " " + d.name + ", " + d.name;
  std::string line = "\n  " + fresh + " = " + op + " : " + d.type;
  replaceUses(text, d.lineEnd, d.name, fresh);
  text.insert(d.lineEnd, line);
  return true;
}

inline bool removeUnary(std::string &text, std::mt19937_64 &rng) {
  std::vector<Definition> defs = definitions(text);
  std::vector<std::pair<Definition, std::string>> removable;
  for (const Definition &d : defs) {
    std::string line = text.substr(d.lineBegin, d.lineEnd - d.lineBegin);
    size_t op = line.find("= fusec.");
    if (op == std::string::npos)
      continue;
    size_t space = line.find(' ', op + 8);
    if (space == std::string::npos)
      continue;
    std::string rest = line.substr(space + 1);
    // "%operand : type": one operand, nothing else (no attributes), the
    // result of the operand's type.
    size_t colon = rest.find(" : ");
    if (colon == std::string::npos || rest[0] != '%')
      continue;
    std::string operand = rest.substr(0, colon);
    if (operand.find_first_of(", {[") != std::string::npos)
      continue;
    if (rest.substr(colon + 3).rfind(d.type, 0) != 0 ||
        rest.find(" to ", colon) != std::string::npos) // a cast: its operand's type differs
      continue;
    removable.push_back({d, operand});
  }
  if (removable.empty())
    return false;
  const auto &[d, operand] = pick(removable, rng);
  std::string name = d.name;
  std::string use = operand;
  size_t begin = d.lineBegin, end = d.lineEnd;
  replaceUses(text, end, name, use);
  text.erase(begin, end + 1 - begin);
  return true;
}

/// Appends `value` of `type` to the results of the function whose body
/// holds text position `at`: its `return` and its signature.
inline bool returnAlso(std::string &text, size_t at, const std::string &value,
                       const std::string &type) {
  size_t ret = text.find("\n  return", at);
  size_t header = text.rfind("func.func", at);
  if (ret == std::string::npos || header == std::string::npos)
    return false;
  size_t retEnd = text.find('\n', ret + 1);
  if (retEnd == std::string::npos)
    retEnd = text.size();
  std::string line = text.substr(ret + 1, retEnd - ret - 1);
  size_t colon = line.find(" : ");
  std::string fresh = colon == std::string::npos
                          ? "  return " + value + " : " + type
                          : line.substr(0, colon) + ", " + value + line.substr(colon) + ", " + type;
  size_t open = text.find('{', header);
  if (open == std::string::npos || open > ret)
    return false;
  std::string head = text.substr(header, open - header);
  size_t arrow = head.rfind(") -> ");
  std::string freshHead;
  if (arrow == std::string::npos) {
    size_t close = head.rfind(')');
    if (close == std::string::npos)
      return false;
    freshHead = head.substr(0, close + 1) + " -> " + type + head.substr(close + 1);
  } else {
    std::string results = head.substr(arrow + 5);
    size_t attrs = results.find(" attributes");
    std::string tail = attrs == std::string::npos ? "" : results.substr(attrs);
    results = results.substr(0, attrs);
    while (!results.empty() && results.back() == ' ')
      results.pop_back();
    std::string inner = results.size() > 1 && results.front() == '(' && results.back() == ')'
                            ? results.substr(1, results.size() - 2)
                            : results;
    freshHead = head.substr(0, arrow + 5) + "(" + inner + ", " + type + ") " + tail;
  }
  text.replace(ret + 1, retEnd - ret - 1, fresh);
  text.replace(header, open - header, freshHead);
  return true;
}

inline bool addResult(std::string &text, std::mt19937_64 &rng) {
  std::vector<Definition> defs = definitions(text);
  if (defs.empty())
    return false;
  const Definition d = pick(defs, rng);
  std::vector<std::string> dims;
  std::string element;
  if (!splitType(d.type.substr(7, d.type.size() - 8), dims, element) || dims.empty())
    return false;
  for (const std::string &x : dims)
    if (x == "?")
      return false;
  auto type = [&](const std::vector<std::string> &ds) {
    std::string t = "tensor<";
    for (const std::string &x : ds)
      t += x + "x";
    return t + element + ">";
  };
  const std::string fresh = "%mut" + std::to_string(rng() % 1000000);
  if (text.find(fresh + " ") != std::string::npos)
    return false;
  const size_t rank = dims.size();
  std::string op, result;
  switch (rng() % 4) {
  case 0: { // a reduction over one dim
    size_t dim = rng() % rank;
    std::vector<std::string> kept;
    for (size_t i = 0; i < rank; ++i)
      if (i != dim)
        kept.push_back(dims[i]);
    result = type(kept);
    op = std::string("fusec.reduce ") + (rng() % 2 ? "sum " : "max ") + d.name + " dims [" +
         std::to_string(dim) + "] : " + d.type + " -> " + result;
    break;
  }
  case 1: { // a transpose
    if (rank < 2)
      return false;
    std::vector<size_t> perm(rank);
    for (size_t i = 0; i < rank; ++i)
      perm[i] = i;
    std::shuffle(perm.begin(), perm.end(), rng);
    std::vector<std::string> permuted;
    std::string list;
    for (size_t i = 0; i < rank; ++i) {
      permuted.push_back(dims[perm[i]]);
      list += (i ? ", " : "") + std::to_string(perm[i]);
    }
    result = type(permuted);
    op = "fusec.transpose " + d.name + " perm [" + list + "] : " + d.type + " -> " + result;
    break;
  }
  case 2: { // flattened
    long long n = 1; // saturates: a product past 2^62 is invalid anyway
    for (const std::string &x : dims) {
      long long d = x.size() > 9 ? 1000000000LL : std::stoll(x);
      n = d != 0 && n > (1LL << 62) / d ? (1LL << 62) : n * d;
    }
    result = type({std::to_string(n)});
    op = "fusec.reshape " + d.name + " : " + d.type + " -> " + result;
    break;
  }
  default: // a softmax over one dim
    result = d.type;
    op = "fusec.softmax " + d.name + " dim " + std::to_string(rng() % rank) + " : " + d.type;
    break;
  }
  std::string copy = text;
  copy.insert(d.lineEnd, "\n  " + fresh + " = " + op);
  if (!returnAlso(copy, d.lineEnd, fresh, result))
    return false;
  text = std::move(copy);
  return true;
}

/// The values a function body can read: its arguments (`lineEnd` the end
/// of the line that opens the body) and the definitions.
inline std::vector<Definition> readableValues(const std::string &text) {
  std::vector<Definition> out;
  for (size_t header = text.find("func.func"); header != std::string::npos;
       header = text.find("func.func", header + 1)) {
    size_t open = text.find('(', header), body = text.find('{', header);
    if (open == std::string::npos || body == std::string::npos || open > body)
      continue;
    size_t close = text.find(')', open);
    size_t lineEnd = text.find('\n', body);
    if (close == std::string::npos || close > body || lineEnd == std::string::npos)
      continue;
    std::string params = text.substr(open + 1, close - open - 1);
    for (size_t p = params.find('%'); p != std::string::npos; p = params.find('%', p + 1)) {
      size_t colon = params.find(": ", p);
      size_t next = params.find('%', p + 1);
      if (colon == std::string::npos || (next != std::string::npos && colon > next))
        continue;
      std::string type = params.substr(colon + 2, (next == std::string::npos ? params.size() : next) -
                                                      colon - 2);
      while (!type.empty() && (type.back() == ' ' || type.back() == ','))
        type.pop_back();
      if (type.rfind("tensor<", 0) == 0 && type.back() == '>' &&
          type.find_first_of("{ ,") == std::string::npos)
        out.push_back({header, lineEnd, params.substr(p, colon - p), type});
    }
  }
  std::vector<Definition> defs = definitions(text);
  out.insert(out.end(), defs.begin(), defs.end());
  return out;
}

/// A new result of the function that reads one or two of its values.
inline bool combineValues(std::string &text, std::mt19937_64 &rng) {
  std::vector<Definition> values = readableValues(text);
  if (values.empty())
    return false;
  const Definition a = pick(values, rng);
  size_t funcBegin = text.rfind("func.func", a.lineEnd);
  size_t funcEnd = text.find("\n}", a.lineEnd);
  if (funcBegin == std::string::npos || funcEnd == std::string::npos)
    return false;
  std::vector<Definition> partners;
  for (const Definition &d : values)
    if (d.lineEnd >= funcBegin && d.lineEnd < funcEnd)
      partners.push_back(d);
  auto shapeOf = [](const Definition &d, std::vector<long long> &dims, std::string &element) {
    std::vector<std::string> parts;
    if (!splitType(d.type.substr(7, d.type.size() - 8), parts, element))
      return false;
    dims.clear();
    for (const std::string &x : parts) {
      if (x.empty() || x.size() > 12 || !std::all_of(x.begin(), x.end(), ::isdigit))
        return false;
      dims.push_back(std::stoll(x));
    }
    return true;
  };
  auto typeOf = [](const std::vector<long long> &dims, const std::string &element) {
    std::string t = "tensor<";
    for (long long x : dims)
      t += std::to_string(x) + "x";
    return t + element + ">";
  };
  std::vector<long long> ad;
  std::string ae;
  if (!shapeOf(a, ad, ae))
    return false;
  auto fresh = [&] { return "%mut" + std::to_string(rng() % 1000000); };
  const std::string r = fresh();
  if (text.find(r + " ") != std::string::npos)
    return false;
  size_t at = a.lineEnd; // after the last value the new lines read
  std::vector<std::string> lines;
  std::string result;
  const size_t rank = ad.size();
  switch (rng() % 9) {
  case 0:   // a binary op of two values of one type
  case 1: { // a compare and a select of them
    std::vector<Definition> same;
    for (const Definition &d : partners)
      if (d.type == a.type)
        same.push_back(d);
    const Definition b = same.empty() ? a : pick(same, rng);
    at = std::max(at, b.lineEnd);
    result = a.type;
    if (rng() % 2) {
      static const std::vector<std::string> ops = {"add", "sub", "mul", "div",
                                                   "max", "min", "pow"};
      lines.push_back(r + " = fusec." + pick(ops, rng) + " " + a.name + ", " + b.name + " : " +
                      a.type);
    } else {
      static const std::vector<std::string> predicates = {"eq", "ne", "lt", "le", "gt", "ge"};
      const std::string m = fresh();
      lines.push_back(m + " = fusec.compare " + pick(predicates, rng) + ", " + a.name + ", " +
                      b.name + " : " + a.type);
      lines.push_back(r + " = fusec.select " + m + ", " + a.name + ", " + b.name + " : " +
                      a.type);
    }
    break;
  }
  case 2: { // a matmul
    if (rank < 2)
      return false;
    std::vector<long long> out = ad;
    long long m = ad[rank - 2], k = ad[rank - 1];
    switch (rng() % 3) {
    case 0: // a · aᵀ
      out[rank - 1] = m;
      result = typeOf(out, ae);
      lines.push_back(r + " = fusec.matmul " + a.name + ", " + a.name + " {transpose_rhs} : (" +
                      a.type + ", " + a.type + ") -> " + result);
      break;
    case 1: // aᵀ · a
      out[rank - 2] = k;
      out[rank - 1] = k;
      result = typeOf(out, ae);
      lines.push_back(r + " = fusec.matmul " + a.name + ", " + a.name + " {transpose_lhs} : (" +
                      a.type + ", " + a.type + ") -> " + result);
      break;
    default: { // a · a constant [K, N]
      static const std::vector<long long> widths = {1, 3, 16, 64, 130};
      long long n = pick(widths, rng);
      const std::string c = fresh();
      const std::string ct = typeOf({k, n}, ae);
      out[rank - 1] = n;
      result = typeOf(out, ae);
      lines.push_back(c + " = fusec.constant dense<" + (rng() % 2 ? "0.5" : "-1.0") + "> : " + ct);
      lines.push_back(r + " = fusec.matmul " + a.name + ", " + c + " : (" + a.type + ", " + ct +
                      ") -> " + result);
    }
    }
    break;
  }
  case 3: { // a concat of two values that differ in one dim (or a twice)
    if (rank == 0)
      return false;
    std::vector<std::pair<Definition, size_t>> fits; // partner, the dim
    for (const Definition &d : partners) {
      std::vector<long long> dd;
      std::string de;
      if (!shapeOf(d, dd, de) || de != ae || dd.size() != rank)
        continue;
      size_t differ = 0, where = 0;
      for (size_t i = 0; i < rank; ++i)
        if (dd[i] != ad[i]) {
          ++differ;
          where = i;
        }
      if (differ == 0)
        fits.push_back({d, rng() % rank});
      else if (differ == 1)
        fits.push_back({d, where});
    }
    if (fits.empty())
      return false;
    const auto [b, dim] = pick(fits, rng);
    std::vector<long long> bd;
    std::string be;
    shapeOf(b, bd, be);
    std::vector<long long> out = ad;
    out[dim] += bd[dim];
    result = typeOf(out, ae);
    at = std::max(at, b.lineEnd);
    bool three = rng() % 3 == 0;
    if (three)
      out[dim] += ad[dim];
    result = typeOf(out, ae);
    lines.push_back(r + " = fusec.concat " + a.name + ", " + b.name + (three ? ", " + a.name : "") +
                    " dim " + std::to_string(dim) + " : (" + a.type + ", " + b.type +
                    (three ? ", " + a.type : "") + ") -> " + result);
    break;
  }
  case 4: { // a slice
    if (rank == 0)
      return false;
    std::vector<long long> out(rank);
    std::string offsets, strides;
    for (size_t i = 0; i < rank; ++i) {
      long long n = ad[i];
      long long off = n > 1 ? static_cast<long long>(rng() % static_cast<uint64_t>(n)) : 0;
      long long stride = 1 + static_cast<long long>(rng() % 3);
      long long most = n > off ? (n - off - 1) / stride + 1 : 0;
      out[i] = most > 0 ? 1 + static_cast<long long>(rng() % static_cast<uint64_t>(most)) : 0;
      offsets += (i ? ", " : "") + std::to_string(off);
      strides += (i ? ", " : "") + std::to_string(stride);
    }
    result = typeOf(out, ae);
    lines.push_back(r + " = fusec.slice " + a.name + " offsets [" + offsets + "] strides [" +
                    strides + "] : " + a.type + " -> " + result);
    break;
  }
  case 5: { // a gather
    if (rank == 0)
      return false;
    size_t axis = rng() % rank;
    std::vector<Definition> integers;
    for (const Definition &d : partners)
      if (d.type.find("xi32>") != std::string::npos || d.type.find("xi64>") != std::string::npos)
        integers.push_back(d);
    std::string ids, idsType;
    std::vector<long long> idsDims;
    if (!integers.empty() && rng() % 2) {
      const Definition &d = pick(integers, rng);
      std::string de;
      if (!shapeOf(d, idsDims, de))
        return false;
      ids = d.name;
      idsType = d.type;
      at = std::max(at, d.lineEnd);
    } else {
      static const std::vector<std::vector<long long>> shapes = {{}, {1}, {3}, {2, 5}};
      idsDims = pick(shapes, rng);
      long long n = ad[axis];
      const std::vector<long long> choices = {0, n - 1, -1, n / 2, n}; // n: out of range
      long long v = choices[rng() % (rng() % 16 == 0 ? 5 : 4)];
      ids = fresh();
      idsType = typeOf(idsDims, rng() % 2 ? "i32" : "i64");
      lines.push_back(ids + " = fusec.constant dense<" + std::to_string(v) + "> : " + idsType);
    }
    std::vector<long long> out(ad.begin(), ad.begin() + static_cast<long>(axis));
    out.insert(out.end(), idsDims.begin(), idsDims.end());
    out.insert(out.end(), ad.begin() + static_cast<long>(axis) + 1, ad.end());
    result = typeOf(out, ae);
    lines.push_back(r + " = fusec.gather " + a.name + "[" + ids + "] axis " +
                    std::to_string(axis) + " : (" + a.type + ", " + idsType + ") -> " + result);
    break;
  }
  case 6: { // a broadcast: a new dim, or a size-1 dim widened
    std::vector<long long> out = ad;
    std::vector<size_t> ones;
    for (size_t i = 0; i < rank; ++i)
      if (ad[i] == 1)
        ones.push_back(i);
    static const std::vector<long long> sizes = {1, 2, 3, 8, 33};
    std::string dims;
    if (!ones.empty() && rng() % 2) {
      out[pick(ones, rng)] = pick(sizes, rng);
      for (size_t i = 0; i < rank; ++i)
        dims += (i ? ", " : "") + std::to_string(i);
    } else {
      size_t where = rng() % (rank + 1);
      out.insert(out.begin() + static_cast<long>(where), pick(sizes, rng));
      for (size_t i = 0; i < rank; ++i)
        dims += (i ? ", " : "") + std::to_string(i < where ? i : i + 1);
    }
    result = typeOf(out, ae);
    lines.push_back(r + " = fusec.broadcast " + a.name + " dims [" + dims + "] : " + a.type +
                    " -> " + result);
    break;
  }
  case 7: { // a convolution (by a splat filter) or a pool of a as [N, C, spatial...]
    if (rank < 3 || rank > 5 || !(ae == "f32" || ae == "f16" || ae == "bf16" || ae == "f64"))
      return false;
    const size_t spatial = rank - 2;
    std::vector<long long> out = ad, kernel(spatial), strides(spatial), dilations(spatial),
                           low(spatial), high(spatial);
    auto list = [](const std::vector<long long> &v) {
      std::string t = "array<i64: ";
      for (size_t i = 0; i < v.size(); ++i)
        t += (i ? ", " : "") + std::to_string(v[i]);
      return t + ">";
    };
    const bool pool = rng() % 2, transposed = !pool && rng() % 4 == 0;
    for (size_t i = 0; i < spatial; ++i) {
      kernel[i] = 1 + static_cast<long long>(rng() % 3);
      strides[i] = 1 + static_cast<long long>(rng() % 3);
      dilations[i] = 1 + static_cast<long long>(rng() % 2);
      low[i] = static_cast<long long>(rng() % static_cast<uint64_t>(kernel[i]));
      high[i] = static_cast<long long>(rng() % static_cast<uint64_t>(kernel[i]));
      const long long d = ad[2 + i], reach = dilations[i] * (kernel[i] - 1);
      if (d > 65536)
        return false;
      if (transposed) {
        const long long extra = static_cast<long long>(
            rng() % static_cast<uint64_t>(std::max(strides[i], dilations[i])));
        out[2 + i] = (d - 1) * strides[i] - low[i] - high[i] + reach + 1 + extra;
      } else {
        out[2 + i] = (d + low[i] + high[i] - reach - 1) / strides[i] + 1;
      }
      if (d < 1 || out[2 + i] < 1)
        return false;
    }
    std::string attrs = (pool ? "kernel = " + list(kernel) + ", " : std::string()) +
                        "strides = " + list(strides) + ", dilations = " + list(dilations) +
                        ", pad_low = " + list(low) + ", pad_high = " + list(high);
    if (pool) {
      const bool mean = rng() % 2;
      if (mean && rng() % 2)
        attrs += ", count_include_pad";
      result = typeOf(out, ae);
      lines.push_back(r + " = fusec.pool " + (mean ? "mean " : "max ") + a.name + " {" + attrs +
                      "} : " + a.type + " -> " + result);
      break;
    }
    // groups: 1, every channel (depthwise), or a divisor between.
    const long long c = ad[1];
    std::vector<long long> divisors;
    for (long long g = 1; g <= c && g <= 64; ++g)
      if (c % g == 0)
        divisors.push_back(g);
    if (divisors.empty())
      return false;
    const long long groups = rng() % 3 == 0 ? c : pick(divisors, rng);
    const long long k = groups * (1 + static_cast<long long>(rng() % 3));
    if (groups > 1)
      attrs += ", groups = " + std::to_string(groups) + " : i64";
    if (transposed)
      attrs += ", transposed";
    std::vector<long long> filter = {transposed ? c : k, (transposed ? k : c) / groups};
    filter.insert(filter.end(), kernel.begin(), kernel.end());
    out[1] = k;
    result = typeOf(out, ae);
    const std::string w = fresh(), wt = typeOf(filter, ae);
    lines.push_back(w + " = fusec.constant dense<" + (rng() % 2 ? "0.25" : "-1.0") + "> : " + wt);
    lines.push_back(r + " = fusec.conv " + a.name + ", " + w + " {" + attrs + "} : (" + a.type +
                    ", " + wt + ") -> " + result);
    break;
  }
  default: { // attention of a by itself, as [B, H, S, D]
    if (rank == 0 || rank > 4)
      return false;
    std::vector<long long> q = ad;
    while (q.size() < 4)
      q.insert(q.begin(), 1);
    std::string operand = a.name, type = a.type;
    if (rank < 4) {
      operand = fresh();
      type = typeOf(q, ae);
      lines.push_back(operand + " = fusec.reshape " + a.name + " : " + a.type + " -> " + type);
    }
    result = type;
    lines.push_back(r + " = fusec.attention " + operand + ", " + operand + ", " + operand +
                    " {scale = 0.125 : f64" + (rng() % 2 ? ", causal" : "") + "} : (" + type +
                    ", " + type + ", " + type + ") -> " + type);
    break;
  }
  }
  std::string block;
  for (const std::string &l : lines)
    block += "\n  " + l;
  std::string copy = text;
  copy.insert(at, block);
  if (!returnAlso(copy, at, r, result))
    return false;
  text = std::move(copy);
  return true;
}

/// One of the changes above, drawn by `rng` (several tries before giving
/// up); whether the text changed.
inline bool mutateMlirText(std::string &text, std::mt19937_64 &rng) {
  for (int attempt = 0; attempt < 8; ++attempt) {
    bool changed = false;
    switch (rng() % 9) {
    case 0:
      changed = mutateDimension(text, rng);
      break;
    case 1:
      changed = mutateElementType(text, rng);
      break;
    case 2:
      changed = mutateRank(text, rng);
      break;
    case 3:
      changed = mutateOpName(text, rng);
      break;
    case 4:
      changed = insertElementwise(text, rng);
      break;
    case 5:
      changed = removeUnary(text, rng);
      break;
    case 6:
      changed = addResult(text, rng);
      break;
    case 7:
      changed = combineValues(text, rng);
      break;
    default:
      changed = mutateSplat(text, rng);
      break;
    }
    if (changed)
      return true;
  }
  return false;
}

} // namespace fusec::fuzz

#endif // FUSEC_TEST_FUZZ_MLIRMUTATOR_H

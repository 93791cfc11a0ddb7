//===- OnnxMutatorTest.cpp - fuzz_onnx's structure-aware mutator -*- C++ -*-===//
//
// The mutator (test/fuzz/OnnxMutator.h) is header-only and LLVM-free; these
// check what its changes keep: a mutant always decodes, and a node of its
// own is a well-formed node of a known op type over the graph's values,
// read by a later node or returned in some mutants.
//
//===----------------------------------------------------------------------===//

#include "OnnxMutator.h"

#include "gtest/gtest.h"

#include <algorithm>
#include <set>
#include <string>
#include <vector>

using namespace fusec::fuzz::onnx;

namespace {

Field str(Kind kind, uint32_t number, const std::string &s) { return stringField(kind, number, s); }

Field message(Kind kind, uint32_t number, Kind child, std::vector<Field> children) {
  Field f = makeField(kind, number, 2);
  f.child = child;
  f.children = std::move(children);
  return f;
}

// y = Relu(Add(x, x)): two nodes, an input, an output; opset 13.
std::string smallModel() {
  std::vector<Field> graph = {
      message(Kind::Graph, 1, Kind::Node,
              {str(Kind::Node, 1, "x"), str(Kind::Node, 1, "x"), str(Kind::Node, 2, "s"),
               str(Kind::Node, 4, "Add")}),
      message(Kind::Graph, 1, Kind::Node,
              {str(Kind::Node, 1, "s"), str(Kind::Node, 2, "y"), str(Kind::Node, 4, "Relu")}),
      str(Kind::Graph, 2, "g"),
      message(Kind::Graph, 11, Kind::ValueInfo, {str(Kind::ValueInfo, 1, "x")}),
      message(Kind::Graph, 12, Kind::ValueInfo, {str(Kind::ValueInfo, 1, "y")}),
  };
  std::vector<Field> model = {varintField(Kind::Model, 1, 8),
                              message(Kind::Model, 7, Kind::Graph, graph),
                              message(Kind::Model, 8, Kind::OpsetId,
                                      {varintField(Kind::OpsetId, 2, 13)})};
  return encode(model);
}

std::vector<const Field *> nodesOf(const std::vector<Field> &model) {
  std::vector<const Field *> out;
  for (const Field &f : model)
    if (f.child == Kind::Graph)
      for (const Field &n : f.children)
        if (n.child == Kind::Node)
          out.push_back(&n);
  return out;
}

TEST(OnnxMutator, SmallModelRoundTrips) {
  std::string bytes = smallModel();
  std::vector<Field> model;
  ASSERT_TRUE(decode(bytes, Kind::Model, model));
  EXPECT_EQ(encode(model), bytes);
  EXPECT_EQ(nodesOf(model).size(), 2u);
}

TEST(OnnxMutator, AddsANodeOfItsOwn) {
  const std::string bytes = smallModel();
  const std::set<std::string> known(knownOps().begin(), knownOps().end());
  int read = 0, notLast = 0;
  for (uint64_t seed = 0; seed < 300; ++seed) {
    std::vector<Field> model;
    ASSERT_TRUE(decode(bytes, Kind::Model, model));
    std::vector<Site> attributes;
    std::mt19937_64 rng(seed);
    std::string out = addNode(model[1], {"x", "s", "y"}, attributes, rng);
    std::string mutant = encode(model);
    std::vector<Field> again;
    ASSERT_TRUE(decode(mutant, Kind::Model, again)) << "seed " << seed;
    auto nodes = nodesOf(again);
    ASSERT_EQ(nodes.size(), 3u) << "seed " << seed;
    // The new node: one output (`out`), a known op type, 1-3 inputs that
    // are the graph's values or the empty name.
    const Field *added = nullptr;
    size_t position = 0;
    for (size_t i = 0; i < nodes.size(); ++i)
      for (const Field &c : nodes[i]->children)
        if (c.number == 2 && c.bytes == out) {
          added = nodes[i];
          position = i;
        }
    ASSERT_NE(added, nullptr) << "seed " << seed;
    int inputs = 0;
    for (const Field &c : added->children) {
      if (c.number == 4) {
        EXPECT_TRUE(known.count(c.bytes)) << c.bytes;
      }
      if (c.number == 1) {
        ++inputs;
        EXPECT_TRUE(c.bytes.empty() || c.bytes == "x" || c.bytes == "s" || c.bytes == "y");
      }
      if (c.number == 5) {
        EXPECT_EQ(c.child, Kind::Attribute);
      }
    }
    EXPECT_GE(inputs, 1);
    EXPECT_LE(inputs, 3);
    notLast += position != 2;
    // Some later node or the graph's output reads it.
    bool isRead = false;
    for (size_t i = position + 1; i < nodes.size(); ++i)
      for (const Field &c : nodes[i]->children)
        isRead |= c.number == 1 && c.bytes == out;
    for (const Field &g : again[1].children)
      if (g.number == 12)
        for (const Field &c : g.children)
          isRead |= c.number == 1 && c.bytes == out;
    read += isRead;
  }
  // Half the mutants rewire a reader where one follows; a third go before
  // the last node.
  EXPECT_GT(read, 60);
  EXPECT_GT(notLast, 30);
}

TEST(OnnxMutator, MadeAttributesAreTyped) {
  std::mt19937_64 rng(7);
  std::set<uint64_t> types;
  for (int i = 0; i < 200; ++i) {
    Field a = madeAttribute(rng);
    std::vector<Field> one = {a};
    std::vector<Field> back;
    ASSERT_TRUE(decode(encode(one), Kind::Node, back));
    ASSERT_EQ(back.size(), 1u);
    ASSERT_EQ(back[0].child, Kind::Attribute);
    bool named = false;
    for (const Field &c : back[0].children) {
      named |= c.number == 1 && !c.bytes.empty();
      if (c.number == 20)
        types.insert(c.value);
    }
    EXPECT_TRUE(named);
  }
  // INT, INTS, FLOAT and STRING attributes are all made.
  EXPECT_EQ(types, (std::set<uint64_t>{1, 2, 3, 7}));
}

} // namespace

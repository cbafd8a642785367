// Unit tests of the JSON reader, canonicalisation and featurisation.
#include "canonical.h"
#include "check.h"
#include "featurize.h"
#include "json.h"
#include "tile_footprint.h"
#include "vocab.h"

using namespace cwm;

static const char* kTrace =
    R"([[["GetSBlock",[],["C","main"],["b0"]],)"
    R"(["Annotate",["b0","\"SSRSRS\""],["meta_schedule.tiling_structure"],[]],)"
    R"(["GetLoops",["b0"],[],["l1","l2","l3"]],)"
    R"(["SamplePerfectTile",["l1"],[2,64],["v4","v5"]],)"
    R"(["Split",["l1","v4","v5"],[true,false],["l6","l7"]],)"
    R"(["Fuse",["l6","l2"],[true],["l8"]],)"
    R"(["Parallel",["l8"],[],[]],)"
    R"(["SampleCategorical",[],[[0,16,64],[0.3,0.3,0.4]],["v9"]],)"
    R"(["Annotate",["b0","v9"],["meta_schedule.unroll_explicit"],[]],)"
    R"(["EnterPostproc",[],[],[]],)"
    R"(["Split",["l7","None",4],[true,false],["l10","l11"]],)"
    R"(["MysteryKind",["l11"],[3],["l12"]]],)"
    R"([[3,[16,16]],[7,2]]])";

static void TestJson() {
  Json v = ParseJson(R"({"a":[1,2.5,-3e2,"x\n\u00e9",true,null]})");
  CHECK(v.type == Json::Type::kObject);
  const Json& a = v.fields[0].second;
  CHECK(a.items[0].is_int() && a.items[0].i == 1);
  CHECK(a.items[1].type == Json::Type::kDouble && a.items[1].d == 2.5);
  CHECK(a.items[2].type == Json::Type::kDouble && a.items[2].d == -300.0);
  CHECK_EQ(a.items[3].s, std::string("x\n\xc3\xa9"));
  CHECK(a.items[4].is_bool() && a.items[4].b);
  CHECK(a.items[5].is_null());
  CHECK(Throws<JsonError>([] { ParseJson("[1,2"); }));
  CHECK(Throws<JsonError>([] { ParseJson("[1] x"); }));
}

static void TestCanonical() {
  CanonicalTrace ct = Canonicalize(std::string(kTrace));
  CHECK_EQ(ct.num_insts, 12);
  CHECK_EQ(ct.actions.size(), 8u);  // Annotate Split Fuse Parallel Annotate EnterPostproc Split <unk>
  const Action& split = ct.actions[1];
  CHECK_EQ(split.kind, std::string("Split"));
  CHECK_EQ(split.operands[0].text, std::string("C/0"));
  CHECK((split.numbers == std::vector<double>{1, 0, 16, 16}));  // attrs first, then factors
  const Action& fuse = ct.actions[2];
  CHECK_EQ(fuse.operands[0].text, std::string("C/0.s0"));
  CHECK_EQ(fuse.operands[0].part, 0);
  const Action& par = ct.actions[3];
  CHECK_EQ(par.operands[0].text, std::string("fuse(C/0.s0,C/1)"));
  const Action& unroll = ct.actions[4];
  CHECK((unroll.numbers == std::vector<double>{64}));
  CHECK_EQ(unroll.strings[0], std::string("meta_schedule.unroll_explicit"));
  CHECK_EQ(ct.actions[0].strings[1], std::string("SSRSRS"));
  CHECK_EQ(ct.actions[5].phase, 1);
  CHECK((ct.actions[6].numbers == std::vector<double>{1, 0, 0, 4}));  // None -> 0
  CHECK_EQ(ct.actions[7].kind, std::string("<unk>"));
  CHECK_EQ(ct.actions[7].raw_kind, std::string("MysteryKind"));
  CHECK_EQ(ct.num_unknown(), 1);
  CHECK(Throws<TraceFormatError>([] { Canonicalize(std::string(R"([[["GetLoops",["b9"],[],["l0"]]],[]])")); }));
  CHECK(Throws<TraceFormatError>([] { Canonicalize(std::string("[1,2]")); }));
}

static void TestRenumbering() {
  std::string renamed = kTrace;
  // swap RV names consistently: b0->b7, l1->l99 (both spellings are whole tokens in quotes)
  auto replace_all = [&](const std::string& from, const std::string& to) {
    size_t p = 0;
    while ((p = renamed.find(from, p)) != std::string::npos) renamed.replace(p, from.size(), to), p += to.size();
  };
  replace_all("\"b0\"", "\"b77\"");
  replace_all("\"l1\"", "\"l99\"");
  CanonicalTrace a = Canonicalize(std::string(kTrace)), b = Canonicalize(renamed);
  FeatureBatch fa = FeaturizeBatch({kTrace}), fb = FeaturizeBatch({renamed});
  CHECK(fa.ints == fb.ints);
  CHECK(fa.numbers == fb.numbers);
}

static void TestFeaturize() {
  CHECK_EQ(Fnv1a(""), 0x811C9DC5u & 0x7FFFFFFFu);
  CHECK_EQ(Fnv1a("a"), 0xE40C292Cu & 0x7FFFFFFFu);
  std::vector<std::string> batch = {kTrace, R"([[],[]])", kTrace};
  FeatureBatch fb = FeaturizeBatch(batch);
  CHECK_EQ(fb.batch, 3);
  CHECK_EQ(fb.max_len, 8);
  CHECK((fb.lengths == std::vector<int32_t>{8, 0, 8}));
  CHECK((fb.unknown == std::vector<int32_t>{1, 0, 1}));
  CHECK_EQ(fb.ints[0], KindId("Annotate"));
  CHECK_EQ(fb.ints[8 * kIntColumns], kPadId);  // second trace is all padding
  std::vector<std::string> many(100, kTrace);
  FeatureBatch threaded = FeaturizeBatch(many, 2), serial = FeaturizeBatch(many, 1);
  CHECK(threaded.ints == serial.ints && threaded.numbers == serial.numbers);
  CHECK(Throws<TraceFormatError>([] { FeaturizeBatch({kTrace, "[oops"}); }));

  // the parsed-trace hook sees each trace once, on any thread, and what it throws names the trace
  std::vector<int> seen(many.size(), 0);
  std::vector<size_t> instructions(many.size(), 0);
  FeaturizeBatch(many, 2, [&](int i, const Json& trace) {
    ++seen[static_cast<size_t>(i)];
    instructions[static_cast<size_t>(i)] = trace.items[0].items.size();
  });
  CHECK(seen == std::vector<int>(many.size(), 1));
  CHECK(instructions == std::vector<size_t>(many.size(), ParseJson(kTrace).items[0].items.size()));
  bool named = false;
  try {
    FeaturizeBatch({kTrace, kTrace}, 1, [](int i, const Json&) {
      if (i == 1) throw JsonError("no nest");
    });
  } catch (const TraceFormatError& e) {
    named = std::string(e.what()).find("trace 1: no nest") != std::string::npos;
  }
  CHECK(named);

  // FeaturizeBatchWithNests: the same batch, and each trace's nest as its own parse reads it
  const std::string tiled =
      R"([[["GetSBlock",[],["C","main"],["b0"]],)"
      R"(["Annotate",["b0","\"SSRSRS\""],["meta_schedule.tiling_structure"],[]],)"
      R"(["GetLoops",["b0"],[],["l1","l2"]],)"
      R"(["SamplePerfectTile",["l1"],[2,64],["v3","v4"]],)"
      R"(["Split",["l1","v3","v4"],[true,false],["l5","l6"]],)"
      R"(["SamplePerfectTile",["l2"],[2,64],["v7","v8"]],)"
      R"(["Split",["l2","v7","v8"],[true,false],["l9","l10"]],)"
      R"(["Reorder",["l5","l9","l6","l10"],[],[]],)"
      R"(["EnterPostproc",[],[],[]]],)"
      R"([[3,[4,16]],[5,[8,8]]]])";
  std::vector<std::string> two = {tiled, kTrace};
  std::vector<TiledNest> nests;
  FeatureBatch with = FeaturizeBatchWithNests(two, 2, &nests), without = FeaturizeBatchWithNests(two, 2, nullptr);
  CHECK(with.ints == without.ints && with.numbers == without.numbers && with.lengths == without.lengths);
  CHECK_EQ(nests.size(), two.size());
  for (size_t i = 0; i < two.size(); ++i) {
    TiledNest alone = ReadTiledNest(ParseJson(two[i]));
    CHECK(nests[i].found == alone.found && nests[i].name == alone.name && nests[i].parallel == alone.parallel);
    CHECK_EQ(nests[i].loops.size(), alone.loops.size());
  }
  // the tiled trace's nest is found (C's two loops, each split in two), kTrace's is not
  CHECK(nests[0].found && nests[0].name == "C" && nests[0].loops.size() == 4 && nests[0].loops[1].factor == 8);
  CHECK(!nests[1].found);
}

int main() {
  TestJson();
  TestCanonical();
  TestRenumbering();
  TestFeaturize();
  return Finish("test_canonical");
}

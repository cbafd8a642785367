// The action vocabulary; mirrors python/cwm/actions/vocab.py (a test checks equality).
#pragma once
#include <string>
#include <vector>

namespace cwm {

const std::vector<std::string>& ActionKinds();  // "<pad>", "<unk>", pure kinds, transform kinds
int KindId(const std::string& kind);             // id, or kUnkId for an unknown kind
bool IsPureKind(const std::string& kind);

constexpr int kPadId = 0;
constexpr int kUnkId = 1;

}  // namespace cwm

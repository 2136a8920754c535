#include "collectives/schedule.h"

#include <algorithm>
#include <sstream>

namespace baton {
namespace {

const char* StepName(StepKind k) {
  switch (k) {
    case StepKind::kCopy: return "copy";
    case StepKind::kReduce: return "reduce";
    case StepKind::kDivide: return "divide";
    case StepKind::kSend: return "send";
    case StepKind::kRecv: return "recv";
    case StepKind::kRecvReduce: return "recv-reduce";
  }
  return "?";
}

std::string RegionString(const Region& r) {
  std::ostringstream os;
  switch (r.buf) {
    case BufKind::kSend: os << "send[" << r.rank << "]"; break;
    case BufKind::kRecv: os << "recv[" << r.rank << "]"; break;
    case BufKind::kScratch: os << "scratch"; break;
  }
  os << "+" << r.offset << ":" << r.bytes;
  return os.str();
}

}  // namespace

bool SameSteps(const Schedule& a, const Schedule& b) {
  std::vector<const Step*> sa, sb;
  for (const Phase& p : a.phases) {
    for (const Step& s : p.steps) sa.push_back(&s);
  }
  for (const Phase& p : b.phases) {
    for (const Step& s : p.steps) sb.push_back(&s);
  }
  return std::equal(sa.begin(), sa.end(), sb.begin(), sb.end(), [](const Step* x, const Step* y) { return *x == *y; });
}

std::string Schedule::ToString() const {
  std::ostringstream os;
  for (size_t i = 0; i < phases.size(); ++i) {
    for (const Step& s : phases[i].steps) {
      os << "phase " << i << ": " << StepName(s.kind);
      if (s.IsNetwork()) os << " peer " << s.peer;
      if ((s.kind != StepKind::kRecv && s.kind != StepKind::kRecvReduce && s.kind != StepKind::kDivide) ||
          (s.kind == StepKind::kRecvReduce && s.src.bytes > 0)) {
        os << " " << RegionString(s.src);
      }
      if (s.kind != StepKind::kSend) os << " -> " << RegionString(s.dst);
      os << "\n";
    }
  }
  return os.str();
}

const char* AlgorithmName(Algorithm a) {
  switch (a) {
    case Algorithm::kAuto: return "auto";
    case Algorithm::kRing: return "ring";
    case Algorithm::kRecursiveDoubling: return "recursive_doubling";
    case Algorithm::kDirect: return "direct";
    case Algorithm::kHalvingDoubling: return "halving_doubling";
    case Algorithm::kDoubleTree: return "tree";
  }
  return "?";
}

bool ParseAlgorithm(const std::string& name, Algorithm* out) {
  if (name == "auto" || name.empty()) *out = Algorithm::kAuto;
  else if (name == "ring") *out = Algorithm::kRing;
  else if (name == "rd" || name == "recursive_doubling") *out = Algorithm::kRecursiveDoubling;
  else if (name == "direct") *out = Algorithm::kDirect;
  else if (name == "tree") *out = Algorithm::kDoubleTree;
  else if (name == "hd" || name == "halving_doubling" || name == "rabenseifner") *out = Algorithm::kHalvingDoubling;
  else return false;
  return true;
}

}  // namespace baton

// Fault injection for the crash-safety tests: named points inside the sequences that must
// survive a kill or a failing disk (checkpoint writes, the run log). A test arms one point with
// an action; an unarmed point costs one relaxed atomic load.
//   kill: the process receives SIGKILL at the point, as with `kill -9` or a power cut: no
//         destructor, catch block or buffered output runs.
//   fail: the operation at the point fails as on a full disk (ENOSPC).
// A test arms a point through arm() in-process, or for a child `lumen` process through the
// environment: LUMEN_FAULT_INJECT="<point>[@<hit>]:kill|fail" (read once, at the first point
// reached). It is a testing aid: nothing else sets it, and a run without it is unaffected.
//
// Points: "write" (FileWriter::write, so any file lumen writes), "safetensors.data" (between
// the tensors of a safetensors file being written), "atomic.before_rename" (temporary file
// complete and synced), "atomic.after_rename" (renamed, directory not yet synced),
// "checkpoint.before_best", "checkpoint.before_prune", "checkpoint.before_index" (the steps
// of CheckpointManager::save after the step file is committed), "run_log.mid_record" (half of
// a metrics.jsonl line written).
#pragma once

#include <cstdint>
#include <string>

namespace lumen::fault {

enum class Action { none, kill, fail };

// Arms `point` so that its `hit`-th pass from now (1 = the next) takes `action`; replaces any
// armed point. Throws [fault] for hit < 1 or an empty point name.
void arm(const std::string& point, Action action, int64_t hit = 1);
void disarm();

// Called at a point: kills the process when armed with kill for this pass; returns true when
// the operation here must fail (armed with fail for this pass), else false.
bool at(const char* point);

}  // namespace lumen::fault

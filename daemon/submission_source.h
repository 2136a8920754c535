// SubmissionSource: where a client's operations arrive (its submission ring),
// seen from a communicator's worker thread.
//
// Why a worker looks at rings itself: a rank submits its next collective a
// few microseconds after the last one completed. If only the session's I/O
// thread took submissions, every small operation would cross one more
// thread (I/O thread, then worker), and on a node with fewer cores than busy
// threads each crossing waits for the scheduler. A worker that is about to
// wait for the next operation anyway takes it straight from the ring.
#pragma once

namespace baton {

class SubmissionSource {
 public:
  virtual ~SubmissionSource() = default;

  // Declares that the caller will keep calling PollSubmissions until it
  // calls StopPolling: meanwhile the client skips its doorbell (no system
  // call per operation). Calls nest (a count).
  virtual void StartPolling() = 0;
  // Takes and routes whatever the client submitted since the last look.
  // Any thread; cheap when nothing is new.
  virtual void PollSubmissions() = 0;
  // Ends one StartPolling, then takes what arrived meanwhile (the client
  // may have skipped the doorbell for it).
  virtual void StopPolling() = 0;
};

}  // namespace baton

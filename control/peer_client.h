// Calls from one daemon to the Peer service of others.
#pragma once

#include <chrono>
#include <string>
#include <vector>

#include "baton/v1/peer.pb.h"
#include "common/status.h"

namespace baton {

// Tells every daemon in `addresses` to abort communicator `req.comm_uid`
// with `req.reason`. Returns at once; the calls run on a background thread
// with a short deadline each (a dead peer must not delay the others).
void BroadcastAbort(std::vector<std::string> addresses, baton::v1::AbortRequest req);

// Asks one daemon for its ranks' arrivals at an operation.
Status GetPeerArrivals(const std::string& address, uint64_t comm_uid, uint64_t seq,
                       std::chrono::milliseconds deadline, baton::v1::ArrivalsResponse* out);

// One heartbeat round trip.
Status PingPeer(const std::string& address, const std::string& from_node, std::chrono::milliseconds deadline);

}  // namespace baton

// systemd's notify protocol (sd_notify(3)) without libsystemd: one datagram
// to $NOTIFY_SOCKET. A no-op when not started by systemd.
#pragma once

#include <chrono>
#include <string>

namespace baton {

// Sends e.g. "READY=1", "WATCHDOG=1", "STOPPING=1", "STATUS=...". Returns
// false if there is no NOTIFY_SOCKET or the send failed.
bool SdNotify(const std::string& state);

// Half the watchdog interval systemd asked for ($WATCHDOG_USEC), or zero.
std::chrono::microseconds WatchdogPingInterval();

}  // namespace baton

// PinLocalTimeZone: makes glibc read the local time zone once per process, not on every log line.
//
// With TZ unset, glibc's mktime() re-checks /etc/localtime (a stat) on every call, and glog calls
// mktime() for every line it writes: on the container-start path that is a system call per log
// line. TZ=":/etc/localtime" names the same zone file, but glibc then sees an unchanged TZ and
// keeps the zone it loaded. A TZ already set (to anything) is left as it is. Call once at the top
// of main(), before any thread starts (setenv is not thread-safe).
#pragma once

namespace dracpu {

void PinLocalTimeZone();

}  // namespace dracpu

#include <dbus/dbus.h>
// The event loop's wake-up counter (not exported by Swift's Glibc module).
#include <sys/eventfd.h>

#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include "fault_around.h"
#include "heap_trim.h"

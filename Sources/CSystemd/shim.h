#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>
#include "heap_trim.h"

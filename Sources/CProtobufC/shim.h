// protobuf-c's runtime (Debian's libprotobuf-c-dev): what the generated ESPHome API code (CESPHomeProto) packs and
// unpacks with (docs/dev/esphome-proxy.md#the-messages-wire-code).
#include <protobuf-c/protobuf-c.h>

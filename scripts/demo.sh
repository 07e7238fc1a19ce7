#!/usr/bin/env bash
# make demo: mosquitto + the simulated BLE bench + `gattbridge run -c config/demo.yaml`, with the MQTT traffic shown
# live. No Bluetooth adapter needed. Ctrl-C ends everything. DEMO_SECONDS=N stops by itself after N seconds.
set -euo pipefail
repo="$(cd "$(dirname "$0")/.." && pwd)"
cd "$repo"
bin="${GATTBRIDGE_BIN:-$repo/.build/debug/gattbridge}"
work="$(mktemp -d /tmp/gattbridge-demo.XXXXXX)"
pids=()
cleanup() {
    trap - EXIT INT TERM
    for ((i=${#pids[@]}-1; i>=0; i--)); do kill -TERM "${pids[$i]}" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    echo "demo stopped; logs were in $work"
}
trap cleanup EXIT INT TERM

port="$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')"
printf 'listener %s 127.0.0.1\nallow_anonymous true\npersistence false\n' "$port" > "$work/mosquitto.conf"
mosquitto -c "$work/mosquitto.conf" > "$work/mosquitto.log" 2>&1 &
pids+=($!)

# The three demo peripherals and a BTHome thermometer that only broadcasts (the config's passive device).
.venv/bin/python -m bench --broadcaster bthome:A4:C1:38:0B:70:01 --env-file "$work/bench.env" > "$work/bench.out" 2> "$work/bench.log" &
pids+=($!)
for _ in $(seq 100); do [ -s "$work/bench.env" ] && break; sleep 0.2; done
[ -s "$work/bench.env" ] || { echo "the bench did not start; see $work/bench.log" >&2; exit 1; }
set -a; . "$work/bench.env"; set +a

sed "s/^  port: .*/  port: $port/" config/demo.yaml > "$work/demo.yaml"
"$bin" run -c "$work/demo.yaml" --log-level info 2> "$work/gattbridge.log" &
pids+=($!)

cat <<MSG
gattbridge demo: broker on 127.0.0.1:$port, bench on $DBUS_SYSTEM_BUS_ADDRESS
  daemon log:  tail -f $work/gattbridge.log
  LED on/off:  mosquitto_pub -p $port -t gattbridge/desk-led/led/set -m ON    (or -m OFF)
  serial line: mosquitto_pub -p $port -t gattbridge/hm10/serial/set -m 'hello hm10'
  read now:    mosquitto_pub -p $port -t gattbridge/heart-rate-strap/battery/get -n
  broadcasts:  gattbridge/balcony-thermometer/temperature (and humidity, battery) from a passive BTHome sensor
  web page:    http://127.0.0.1:8780/ (devices, live values, the LED's buttons, Nearby, the log)
Live MQTT traffic (gattbridge/#), Ctrl-C to stop:
MSG
sub_args=(-p "$port" -v -t 'gattbridge/#')
[ -n "${DEMO_SECONDS:-}" ] && sub_args+=(-W "$DEMO_SECONDS")
mosquitto_sub "${sub_args[@]}" || true
